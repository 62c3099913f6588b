/**
 * A mutation group names the code it mutates by declaration, not by line number: line ranges drift
 * with every edit above them (a range silently moves onto other code), names do not.
 *
 *   "modules/commands/service.ts"                         the whole file
 *   "modules/commands/service.ts#queueCommand,getCommand" those top-level declarations
 *   "modules/commands/results.ts#recordCommandResults..pruneUnmatchedResults"
 *                                                         from the first one's start to the second's end
 *   "modules/remote-access/tickets.ts#CookieChecker.allows" a declaration inside another (a class
 *                                                         member, an object's method, a function's const)
 *
 * `resolveMutateEntry` turns an entry into what StrykerJS takes (`file:from-to`), and fails with the
 * entry and the names the file has when a name is not there.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import ts from "typescript";

interface Span {
  from: number;
  to: number;
}

/** The name a declaration gives (a function, class, member, property, variable), if any. */
function nameOf(node: ts.Node): string | undefined {
  const name = (node as { name?: ts.Node }).name;
  if (!name) return undefined;
  if (ts.isIdentifier(name) || ts.isPrivateIdentifier(name) || ts.isStringLiteral(name)) return name.text;
  return undefined;
}

/** What a name's lines are: a variable's whole statement (its `const`), else the declaration. */
function extentOf(node: ts.Node): ts.Node {
  return ts.isVariableDeclaration(node) && ts.isVariableDeclarationList(node.parent)
    ? node.parent.parent
    : node;
}

/** The first declaration named `name` inside `root` (depth first, in source order). */
function findInside(root: ts.Node, name: string): ts.Node | undefined {
  let found: ts.Node | undefined;
  const visit = (node: ts.Node) => {
    if (found) return;
    if (node !== root && nameOf(node) === name && !ts.isParameter(node)) found = node;
    else ts.forEachChild(node, visit);
  };
  ts.forEachChild(root, visit);
  return found;
}

/**
 * A parsed source file and the lines (1-based) of a dotted name in it: `queueCommand` (top level),
 * `CookieChecker.allows` or `consolePages.htmlPage` (a declaration inside another, at any depth).
 */
export function sourceDeclarations(file: string, text = readFileSync(file, "utf8")) {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const line = (position: number) => source.getLineAndCharacterOfPosition(position).line + 1;
  const topLevel = source.statements.flatMap((statement): ts.Node[] =>
    ts.isVariableStatement(statement) ? [...statement.declarationList.declarations] : [statement],
  );
  return {
    names: topLevel.map(nameOf).filter((name): name is string => name !== undefined),
    span(dotted: string): Span | undefined {
      const [first, ...rest] = dotted.split(".");
      let node: ts.Node | undefined = topLevel.find((n) => nameOf(n) === first);
      for (const part of rest) node = node && findInside(node, part);
      if (!node) return undefined;
      const extent = extentOf(node);
      return { from: line(extent.getStart(source)), to: line(extent.getEnd()) };
    },
  };
}

/** One group entry as StrykerJS takes it: the file, or `file:from-to` for each named part. */
export function resolveMutateEntry(entry: string, root: string): string[] {
  const hash = entry.indexOf("#");
  if (hash < 0) return [entry];
  const file = entry.slice(0, hash);
  const declarations = sourceDeclarations(path.join(root, file));
  const find = (name: string): Span => {
    const found = declarations.span(name);
    if (found) return found;
    throw new Error(
      `mutation group entry ${entry}: ${file} has no declaration "${name}" (top level: ${declarations.names.join(", ")})`,
    );
  };
  return entry
    .slice(hash + 1)
    .split(",")
    .map((part) => {
      const [first, last] = part.split("..") as [string, string | undefined];
      const from = find(first.trim());
      const to = last === undefined ? from : find(last.trim());
      if (to.to < from.from) throw new Error(`mutation group entry ${entry}: ${last} comes before ${first}`);
      return `${file}:${from.from}-${to.to}`;
    });
}
