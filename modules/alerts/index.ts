/** The alerts feature's door: what other features may use (CONTRIBUTING.md, "Layout"). */

export { EVALUATE_TASK, evaluateAlerts, SETTLE_MS } from "./evaluation";
export { countOpenAlerts, deleteExpiredAlerts } from "./lifecycle";
export { deliverNotification } from "./notifications/deliver";
export { NOTIFY_TASK, requeuePendingNotifications } from "./notifications/queue";
export { checkOfflineDevices } from "./offline";
export { alertEvaluationWake } from "./wake";
