/** The E2E feature's door: what other features may use (CONTRIBUTING.md, "Layout"). */
export { countRunsByStatus } from "./runs";
