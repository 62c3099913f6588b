/**
 * What a route's handler knows and the recorder cannot see from the request: the id of what it
 * created, the fields it changed (`before → after`), the action it turned out to be (a device update
 * that approves is `device.approve`). Noted during the request; the recorder merges it after the answer.
 */
export interface AuditNote {
  action?: string;
  target?: string;
  details?: Record<string, unknown>;
}

const notes = new WeakMap<Request, AuditNote>();

export function noteAudit(request: Request, note: AuditNote): void {
  const earlier = notes.get(request);
  notes.set(request, { ...earlier, ...note, details: { ...earlier?.details, ...note.details } });
}

export function auditNoteOf(request: Request): AuditNote | undefined {
  return notes.get(request);
}

/** A field's change as the audit log shows it. */
export interface FieldChange {
  from: unknown;
  to: unknown;
}

/**
 * The fields of `after` whose value differs from `before`: `{ field: { from, to } }` (values compared
 * as JSON, so dates and lists compare by content). Fields only in `before` are not changes.
 */
export function fieldChanges(
  before: Record<string, unknown>,
  after: Record<string, unknown>,
): Record<string, FieldChange> {
  const changes: Record<string, FieldChange> = {};
  for (const [field, to] of Object.entries(after)) {
    const from = before[field] ?? null;
    if (to === undefined || JSON.stringify(from) === JSON.stringify(to ?? null)) continue;
    changes[field] = { from, to: to ?? null };
  }
  return changes;
}

/** Notes the fields a change moved, `details.changes = { field: { from, to } }` (and `note`'s other parts). */
export function noteChanges(
  request: Request,
  before: Record<string, unknown>,
  after: Record<string, unknown>,
  note: AuditNote = {},
): void {
  noteAudit(request, { ...note, details: { ...note.details, changes: fieldChanges(before, after) } });
}

/**
 * The action a device's approval change is, whatever the route: `device.approve`, `device.reject`
 * (pending → rejected) or `device.revoke` (approved → rejected); undefined when it does not move.
 */
export function approvalAction(from: string, to: string): string | undefined {
  if (from === to) return undefined;
  if (to === "approved") return "device.approve";
  if (to === "rejected") return from === "approved" ? "device.revoke" : "device.reject";
  return undefined;
}
