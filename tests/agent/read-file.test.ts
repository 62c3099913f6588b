// The sandbox's file access (read_file) on a real directory tree: its argument checks, the deny list
// reached through a symlink, exact and directory entries, and its error messages (what a script sees).
import { afterAll, describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { readFileBuiltin } from "../../agent/builtins/read-file.ts";
import { tempDir } from "./helpers.ts";

const tmp = tempDir("outpost-read-file-");
afterAll(() => tmp.cleanup());
const dir = fs.realpathSync(tmp.dir);
fs.mkdirSync(path.join(dir, "data/secret"), { recursive: true });
fs.mkdirSync(path.join(dir, "data/secretive"), { recursive: true });
fs.writeFileSync(path.join(dir, "data/ok.txt"), "fine");
fs.writeFileSync(path.join(dir, "data/secret/key"), "KEY");
fs.writeFileSync(path.join(dir, "data/secretive/note"), "note");
fs.symlinkSync(path.join(dir, "data/secret/key"), path.join(dir, "data/innocent-link"));

const read = (p: unknown, denylist = [path.join(dir, "data/secret")]) => {
  try {
    return readFileBuiltin({ allowlist: [`${dir}/data/`], denylist, maxBytes: 1024 }, p);
  } catch (error) {
    return `error: ${(error as Error).message}`;
  }
};

describe("read_file", () => {
  test("the path must be a non-empty string", () => {
    for (const bad of ["", 42, null, undefined, ["/x"]]) {
      expect(read(bad)).toBe("error: read_file: path must be a non-empty string");
    }
  });

  test("reads an allowlisted file; a missing one names the system's reason", () => {
    expect(read(path.join(dir, "data/ok.txt"))).toBe("fine");
    const missing = path.join(dir, "data/nothing.txt");
    expect(read(missing)).toBe(`error: read_file: cannot read ${missing}: ENOENT`);
  });

  test("the deny list wins, also when a symlink leads into it", () => {
    const link = path.join(dir, "data/innocent-link");
    expect(read(link)).toBe(`error: read_file: path is not allowlisted: ${link}`);
    expect(read(path.join(dir, "data/secret/key"))).toBe(
      `error: read_file: path is not allowlisted: ${path.join(dir, "data/secret/key")}`,
    );
  });

  test("a deny entry covers its directory and below, with or without a trailing slash, not a longer name", () => {
    for (const entry of [path.join(dir, "data/secret"), `${path.join(dir, "data/secret")}/`]) {
      expect(read(path.join(dir, "data/secret/key"), [entry])).toStartWith(
        "error: read_file: path is not allowlisted",
      );
      expect(read(path.join(dir, "data/secretive/note"), [entry])).toBe("note");
    }
    // A deny entry naming the file itself.
    expect(read(path.join(dir, "data/ok.txt"), [path.join(dir, "data/ok.txt")])).toStartWith(
      "error: read_file: path is not allowlisted",
    );
  });

  test("only regular files", () => {
    const sub = path.join(dir, "data/secretive");
    expect(read(sub, [])).toBe(`error: read_file: not a regular file: ${sub}`);
  });
});
