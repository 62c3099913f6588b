// Every module's tables, for drizzle's typed queries and for drizzle-kit.
export * from "./jobs/schema";
export * from "./operators/schema";
