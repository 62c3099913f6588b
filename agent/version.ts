/** Version of the device agent, reported in registration metadata and every heartbeat. */
export const AGENT_VERSION = "0.1.0";

// Set by `npm run build:agent` (scripts/build-agent.ts, bun build --define) in the compiled binary.
declare const OUTPOST_AGENT_BUILD: string | undefined;

/** What `outpost-agent --version` prints: the version, commit, architecture and build date of a build. */
export const AGENT_BUILD =
  typeof OUTPOST_AGENT_BUILD === "string" ? OUTPOST_AGENT_BUILD : `${AGENT_VERSION} (from source)`;
