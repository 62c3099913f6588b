// The command shape rules at their edges (validateCommand is what queueCommand and the console call).
import { describe, expect, test } from "bun:test";
import {
  checkScript,
  installableScript,
  MAX_PAYLOAD_BYTES,
  SCRIPT_MAX_BYTES,
  validateCommand,
} from "../../modules/commands/service";
import { AppError } from "../../modules/platform/errors";
import { SCRIPT_NAME_MAX } from "../../shared/scripts/frontmatter";

const SSH_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl";
const SCRIPT = "/*---\nname: cpu\nschema:\n  type: object\n---*/\nfunction main() { return {}; }\n";

/** The AppError validateCommand throws for `input`, as status, code and the field it names. */
function refusal(input: Parameters<typeof validateCommand>[0]) {
  try {
    validateCommand(input);
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    return { status: error.status, code: error.code, field: (error.details as { field?: string })?.field };
  }
  return "accepted";
}

const invalid = (field: string) => ({ status: 400, code: "invalid_request", field });

describe("validateCommand", () => {
  test("a bare command: no args, no payload, no key", () => {
    expect(validateCommand({ type: "list_scripts" })).toEqual({
      type: "list_scripts",
      args: [],
      payload: null,
      publicKey: null,
    });
    expect(validateCommand({ type: "list_scripts", payload: null, publicKey: null }).payload).toBeNull();
  });

  test("only the known types", () => {
    expect(refusal({ type: "reboot" })).toEqual(invalid("type"));
    expect(refusal({ type: "" })).toEqual(invalid("type"));
  });

  test("args: a list of at most 32 strings of at most 1024 characters", () => {
    const args = Array.from({ length: 32 }, () => "a".repeat(1024));
    expect(validateCommand({ type: "list_scripts", args }).args).toEqual(args);
    expect(refusal({ type: "list_scripts", args: [...args, "a"] })).toEqual(invalid("args"));
    expect(refusal({ type: "list_scripts", args: ["a".repeat(1025)] })).toEqual(invalid("args"));
    expect(refusal({ type: "list_scripts", args: ["a", 1] })).toEqual(invalid("args"));
    expect(refusal({ type: "list_scripts", args: "a" })).toEqual(invalid("args"));
    expect(refusal({ type: "list_scripts", args: [["a"]] })).toEqual(invalid("args"));
  });

  test("payload: a JSON object of at most MAX_PAYLOAD_BYTES", () => {
    expect(refusal({ type: "list_scripts", payload: [1] })).toEqual(invalid("payload"));
    expect(refusal({ type: "list_scripts", payload: "text" })).toEqual(invalid("payload"));
    // {"a":"…"} is 8 bytes around the text.
    const atLimit = { a: "x".repeat(MAX_PAYLOAD_BYTES - 8) };
    expect(validateCommand({ type: "list_scripts", payload: atLimit }).payload).toEqual(atLimit);
    expect(refusal({ type: "list_scripts", payload: { a: "x".repeat(MAX_PAYLOAD_BYTES - 7) } })).toEqual({
      status: 413,
      code: "payload_too_large",
      field: "payload",
    });
  });

  test("public_key must be a string when given", () => {
    expect(refusal({ type: "list_scripts", publicKey: 1 })).toEqual(invalid("public_key"));
  });

  test("install_script needs a name and the script text, which the agent would accept", () => {
    const ok = validateCommand({ type: "install_script", payload: { name: "cpu", data: SCRIPT } });
    expect(ok.payload).toEqual({ name: "cpu", data: SCRIPT });
    expect(checkScript(SCRIPT)).toEqual({ name: "cpu", source: SCRIPT });
    expect(refusal({ type: "install_script" })).toEqual(invalid("payload"));
    expect(refusal({ type: "install_script", payload: { name: "", data: SCRIPT } })).toEqual(
      invalid("payload"),
    );
    expect(refusal({ type: "install_script", payload: { name: 1, data: SCRIPT } })).toEqual(
      invalid("payload"),
    );
    expect(refusal({ type: "install_script", payload: { name: "cpu", data: "" } })).toEqual(
      invalid("payload"),
    );
    expect(refusal({ type: "install_script", payload: { name: "cpu", data: 1 } })).toEqual(
      invalid("payload"),
    );
    expect(refusal({ type: "install_script", payload: { name: "cpu", data: "main()" } })).toEqual(
      invalid("payload.data"),
    );
  });

  test("run_script keeps only the script (LF line endings), its display name and timeout", () => {
    const crlf = "console.log(1);\r\nconsole.log(2);\r\n";
    expect(
      validateCommand({ type: "run_script", payload: { data: crlf, name: " Check ", extra: 1 } }).payload,
    ).toEqual({ data: "console.log(1);\nconsole.log(2);\n", name: "Check" });
    // A plugin script run once: its front matter is checked, and names the run unless a name is given.
    expect(
      validateCommand({ type: "run_script", payload: { data: SCRIPT, timeout_seconds: 300 } }).payload,
    ).toEqual({ data: SCRIPT, name: "cpu", timeout_seconds: 300 });
    expect(
      validateCommand({ type: "run_script", payload: { data: SCRIPT, name: "Once" } }).payload?.name,
    ).toBe("Once");
    expect(refusal({ type: "run_script", payload: { data: `// ${"x".repeat(SCRIPT_MAX_BYTES)}` } })).toEqual(
      invalid("payload.data"),
    );
    expect(refusal({ type: "run_script", payload: { data: "1", timeout_seconds: null } })).toBe("accepted");
  });

  test("remove_script and ssh_revoke take the name from args[0] or payload.name", () => {
    for (const type of ["remove_script", "ssh_revoke"]) {
      expect(refusal({ type, args: ["cpu"] })).toBe("accepted");
      expect(refusal({ type, payload: { name: "cpu" } })).toBe("accepted");
    }
    expect(refusal({ type: "remove_script" })).toEqual(invalid("args"));
    expect(refusal({ type: "remove_script", payload: { name: "" } })).toEqual(invalid("args"));
    expect(refusal({ type: "ssh_revoke" })).toEqual(invalid("payload"));
    expect(refusal({ type: "ssh_revoke", payload: { name: "" } })).toEqual(invalid("payload"));
  });

  test("remove_script refuses a name the agent would refuse: the one rule, at most 64 characters", () => {
    expect(SCRIPT_NAME_MAX).toBe(64);
    const longest = `a${"b".repeat(SCRIPT_NAME_MAX - 1)}`;
    expect(refusal({ type: "remove_script", args: [longest] })).toBe("accepted");
    expect(refusal({ type: "remove_script", payload: { name: longest } })).toBe("accepted");
    expect(refusal({ type: "remove_script", args: [`${longest}c`] })).toEqual(invalid("args"));
    expect(refusal({ type: "remove_script", payload: { name: `${longest}c` } })).toEqual(
      invalid("payload.name"),
    );
    for (const name of ["a..b", "-cpu", "cpu/x", "cpu x"]) {
      expect(refusal({ type: "remove_script", args: [name] })).toEqual(invalid("args"));
    }
  });

  test("ssh_authorize needs an OpenSSH public key, stored trimmed", () => {
    expect(validateCommand({ type: "ssh_authorize", publicKey: `  ${SSH_KEY} me@host \n` }).publicKey).toBe(
      `${SSH_KEY} me@host`,
    );
    for (const key of [
      `ssh-rsa AAAAB3Nza`,
      `ecdsa-sha2-nistp256 AAAAE2`,
      `ecdsa-sha2-nistp384 AAAAE2`,
      `ecdsa-sha2-nistp521 AAAAE2`,
      `${SSH_KEY} ${"c".repeat(200)}`,
    ])
      expect(refusal({ type: "ssh_authorize", publicKey: key })).toBe("accepted");
    for (const key of [
      undefined,
      "",
      "not a key",
      `ssh-dss AAAAB3Nza`,
      `ecdsa-sha2-nistp255 AAAAE2`,
      `${SSH_KEY} ${"c".repeat(201)}`,
      `${SSH_KEY}\nssh-ed25519 AAAA`,
      `x ${SSH_KEY}`,
      `${SSH_KEY}!`,
    ])
      expect(refusal({ type: "ssh_authorize", publicKey: key })).toEqual(invalid("public_key"));
  });
});

describe("installableScript (the console's install form)", () => {
  const refused = async (input: string | Blob) => {
    try {
      await installableScript(input);
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      return error.message;
    }
    return "accepted";
  };

  test("a script the agent accepts, pasted or as a file", async () => {
    expect(await installableScript(SCRIPT)).toEqual(checkScript(SCRIPT));
    expect(await installableScript(new Blob([SCRIPT]))).toEqual(checkScript(SCRIPT));
  });

  test("too large (a file before it is read), empty, or one the agent refuses", async () => {
    const large = `${SCRIPT}//${"x".repeat(SCRIPT_MAX_BYTES)}`;
    expect(await refused(large)).toBe("The script is larger than 256 KiB.");
    expect(await refused(new Blob([large]))).toBe("The script is larger than 256 KiB.");
    expect(await refused(" \n ")).toBe("The script is empty.");
    expect(await refused(SCRIPT.replace("name: cpu", `name: ${"n".repeat(SCRIPT_NAME_MAX + 1)}`))).toContain(
      "The agent would refuse this script: invalid script name",
    );
  });
});
