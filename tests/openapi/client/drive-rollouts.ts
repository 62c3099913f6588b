// The rollouts API, each operation for its success and its main error (see drive.ts).
import type { Client } from "openapi-fetch";
import type { paths } from "./api-types";

export async function driveRollouts(admin: Client<paths>, deviceId: string): Promise<void> {
  // A command action: the rollout stays running while the device does not answer (a tag would finish
  // at once, before pause could be asked for).
  const action = { type: "remove_script" as const, name: "contract" };
  await admin.POST("/api/v1/rollouts", { body: { action, target: {} } });
  const created = await admin.POST("/api/v1/rollouts", {
    body: { action, target: { ids: [deviceId] }, concurrency: 1 },
  });
  const rolloutId = created.data?.data.id ?? "";
  await admin.GET("/api/v1/rollouts", {});
  await admin.GET("/api/v1/rollouts", { params: { query: { cursor: "not a cursor" } } });
  for (const id of [crypto.randomUUID(), rolloutId]) {
    const params = { path: { rollout_id: id } };
    await admin.GET("/api/v1/rollouts/{rollout_id}", { params });
    await admin.GET("/api/v1/rollouts/{rollout_id}/results", { params });
    await admin.GET("/api/v1/rollouts/{rollout_id}/results.csv", { params, parseAs: "text" });
    await admin.POST("/api/v1/rollouts/{rollout_id}/pause", { params });
    await admin.POST("/api/v1/rollouts/{rollout_id}/resume", { params });
    await admin.POST("/api/v1/rollouts/{rollout_id}/cancel", { params });
  }
}
