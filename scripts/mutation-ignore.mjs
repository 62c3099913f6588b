// StrykerJS ignorer for `npm run test:mutation` (scripts/mutation.ts): no mutants in log calls, in the
// human-readable message of an error or in a job's description. What a caller can act on (status, code, details, whether it
// throws at all) is still mutated; only the wording is left alone.
import { declareValuePlugin, PluginKind } from "@stryker-mutator/api/plugin";

const LOG_OBJECTS = new Set(["logger", "log", "console"]);
/** Callee name → index of its message argument. */
const MESSAGE_ARGUMENT = new Map([
  ["AppError", 2],
  ["badRequest", 0],
  ["invalid", 0], // modules/e2e: invalidRequest imported as invalid
  ["invalidRequest", 0],
  ["unauthorized", 0],
  ["forbidden", 0],
  ["notFound", 0],
  ["Error", 0],
  ["TypeError", 0],
  ["BuiltinIoError", 0],
]);

function calleeName(callee) {
  if (callee.type === "Identifier") return callee.name;
  if (callee.type === "MemberExpression" && callee.property.type === "Identifier")
    return callee.property.name;
  return undefined;
}

export const strykerPlugins = [
  declareValuePlugin(PluginKind.Ignore, "outpost-messages", {
    shouldIgnore(path) {
      const node = path.node;
      // logger.warn(…), and the same through a member: this.logger.warn(…), ctx.logger.info(…).
      const logObject =
        node.type === "CallExpression" && node.callee.type === "MemberExpression"
          ? node.callee.object
          : undefined;
      const logName =
        logObject?.type === "Identifier"
          ? logObject.name
          : logObject?.type === "MemberExpression" && logObject.property.type === "Identifier"
            ? logObject.property.name
            : undefined;
      if (logName && LOG_OBJECTS.has(logName)) return "a log call";
      if (
        node.type === "ObjectProperty" &&
        node.key.type === "Identifier" &&
        node.key.name === "description" &&
        (node.value.type === "StringLiteral" || node.value.type === "TemplateLiteral")
      )
        return "a description shown to people";
      const parent = path.parentPath?.node;
      if (
        path.listKey === "arguments" &&
        (parent?.type === "CallExpression" || parent?.type === "NewExpression")
      ) {
        const index = MESSAGE_ARGUMENT.get(calleeName(parent.callee));
        if (index !== undefined && path.key === index) return "an error's message text";
      }
      return undefined;
    },
  }),
];
