/** The alerts feature's door: what other features may use (CONTRIBUTING.md, "Layout"). */
export { countOpenAlerts } from "./lifecycle";
export { requeuePendingNotifications } from "./notifications/queue";
