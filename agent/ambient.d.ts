// Module declarations for assets that Bun embeds into the agent binary.

/** Built-in plugin scripts are imported as text (`with { type: "text" }`). */
declare module "*.outpost.js" {
  const text: string;
  export default text;
}

/** The QuickJS WebAssembly binary, imported as an embedded file path (`with { type: "file" }`). */
declare module "@jitl/quickjs-wasmfile-release-sync/wasm" {
  const path: string;
  export default path;
}
