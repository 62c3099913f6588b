/** Version of the device agent, reported in registration metadata and every heartbeat. */
export const AGENT_VERSION = "0.1.0";
