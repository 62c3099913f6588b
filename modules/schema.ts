// Every module's tables, for drizzle's typed queries and for drizzle-kit.

export * from "./alerts/schema";
export * from "./audit/schema";
export * from "./commands/schema";
export * from "./devices/schema";
export * from "./e2e/schema";
export * from "./enrolment/schema";
export * from "./fleet/schema";
export * from "./jobs/schema";
export * from "./oidc/schema";
export * from "./operators/schema";
export * from "./remote-access/schema";
export * from "./reports/schema";
export * from "./rollouts/schema";
export * from "./settings/schema";
export * from "./telemetry/schema";
export * from "./terminal/schema";
