/** The E2E feature's door: what other features may use (CONTRIBUTING.md, "Layout"). */

export { e2eConfigFor } from "./config";
export { cancelStaleRuns, pruneRetention } from "./retention";
export { countRunsByStatus } from "./runs";
export { executeSeedJob, SEED_TASK } from "./seed";
