// Saved views: named queries the team shares. A view stores the query text, never its members: it is
// a dynamic group, whoever matches now.
import { asc, sql as drizzleSql, eq } from "drizzle-orm";
import type { Database } from "../platform/database";
import { AppError, badRequest, notFound } from "../platform/errors";
import { isUuid } from "../platform/json-body";
import { isOneLine } from "../platform/text-input";
import { parseQuery, QueryError } from "./query/parse";
import { savedViews } from "./schema";

export const VIEW_NAME_MAX = 100;

export type SavedView = typeof savedViews.$inferSelect;

export interface ViewInput {
  name: string;
  query: string;
}

/** The AppError of a query that does not parse (400 invalid_query, pointing at the bad token). */
function invalidQuery(error: QueryError, field = "q"): AppError {
  return new AppError(400, "invalid_query", error.message, {
    field,
    position: error.position,
    length: error.length,
  });
}

/** Parses or throws invalid_query naming `field`. */
export function checkedQuery(text: string, field = "q") {
  try {
    return parseQuery(text);
  } catch (error) {
    if (error instanceof QueryError) throw invalidQuery(error, field);
    throw error;
  }
}

function checkedView(input: ViewInput): ViewInput {
  const name = input.name.trim();
  if (name === "" || name.length > VIEW_NAME_MAX || !isOneLine(name))
    throw badRequest(`A view's name is 1 to ${VIEW_NAME_MAX} characters on one line`, { field: "name" });
  const query = input.query.trim();
  checkedQuery(query, "query");
  return { name, query };
}

const nameTaken = (name: string) =>
  new AppError(409, "view_name_taken", `A view named "${name}" exists already`, { field: "name" });

/** Two saves of one name at once: the unique index decides, with the same answer as a known name. */
function uniqueName<T>(name: string) {
  return (error: unknown): T => {
    // drizzle wraps the driver's error: PostgreSQL's code is on its cause.
    const { code, cause } = error as { code?: string; cause?: { code?: string } };
    if ((code ?? cause?.code) === "23505") throw nameTaken(name);
    throw error;
  };
}

export async function listViews(database: Database): Promise<SavedView[]> {
  return database.db
    .select()
    .from(savedViews)
    .orderBy(asc(drizzleSql`lower(${savedViews.name})`));
}

/** A view by id, or by name regardless of case (`?view=` takes either). */
export async function findView(database: Database, idOrName: string): Promise<SavedView | undefined> {
  const name = idOrName.trim().toLowerCase();
  const [view] = await database.db
    .select()
    .from(savedViews)
    .where(
      isUuid(idOrName)
        ? eq(savedViews.id, idOrName.toLowerCase())
        : eq(drizzleSql`lower(${savedViews.name})`, name),
    );
  return view;
}

export async function getView(database: Database, idOrName: string): Promise<SavedView> {
  const view = await findView(database, idOrName);
  if (!view) throw notFound(`No saved view "${idOrName}"`, "view_not_found");
  return view;
}

export async function createView(
  database: Database,
  input: ViewInput,
  createdBy: string,
): Promise<SavedView> {
  const view = checkedView(input);
  const [created] = await database.db
    .insert(savedViews)
    .values({ ...view, createdBy })
    .returning()
    .catch(uniqueName<SavedView[]>(view.name));
  return created!;
}

export async function updateView(database: Database, id: string, input: ViewInput): Promise<SavedView> {
  const view = checkedView(input);
  if (!isUuid(id)) throw notFound("No such saved view", "view_not_found");
  const [updated] = await database.db
    .update(savedViews)
    .set({ ...view, updatedAt: new Date() })
    .where(eq(savedViews.id, id.toLowerCase()))
    .returning()
    .catch(uniqueName<SavedView[]>(view.name));
  if (!updated) throw notFound("No such saved view", "view_not_found");
  return updated;
}

/** What uses a view as its scope (an alert rule, a report), by kind, id and name. */
export interface ViewUser {
  kind: string;
  id: string;
  name: string;
}

/** The 409 of a view in use: every user named, so the operator knows what to change first. */
function viewInUse(name: string, users: ViewUser[]): AppError {
  const named = users.slice(0, 10).map((u) => `${u.kind} "${u.name}"`);
  const more = users.length > 10 ? ` and ${users.length - 10} more` : "";
  if (named.length === 0)
    return new AppError(409, "view_in_use", `The view "${name}" is the scope of a rule or a report.`, {
      users,
    });
  return new AppError(
    409,
    "view_in_use",
    `The view "${name}" is the scope of ${named.join(", ")}${more}: give them another scope first.`,
    { users },
  );
}

/**
 * Deletes a view, unless something uses it as its scope (`usersOf`: the alert rules and reports,
 * which this feature cannot read itself; app.ts supplies them): a rule that silently stopped watching
 * its devices would be worse than a refusal. The foreign keys of those scopes refuse a delete that
 * races a save.
 */
export async function deleteView(
  database: Database,
  id: string,
  usersOf: (viewId: string) => Promise<ViewUser[]> = async () => [],
): Promise<SavedView> {
  if (!isUuid(id)) throw notFound("No such saved view", "view_not_found");
  const view = await getView(database, id);
  const users = await usersOf(view.id);
  if (users.length > 0) throw viewInUse(view.name, users);
  const [deleted] = await database.db
    .delete(savedViews)
    .where(eq(savedViews.id, view.id))
    .returning()
    .catch(async (error: unknown) => {
      const { code, cause } = error as { code?: string; cause?: { code?: string } };
      // restrict_violation (23001; foreign_key_violation 23503 from older servers)
      if (["23001", "23503"].includes(code ?? cause?.code ?? ""))
        throw viewInUse(view.name, await usersOf(view.id));
      throw error;
    });
  if (!deleted) throw notFound("No such saved view", "view_not_found");
  return deleted;
}
