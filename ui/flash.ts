import { readCookie } from "../modules/platform/access";

export type FlashKind = "success" | "error" | "info";
export interface Flash {
  kind: FlashKind;
  text: string;
}

const FLASH_COOKIE = "outpost_flash";

export function readFlash(request: Request): Flash | undefined {
  const raw = readCookie(request, FLASH_COOKIE);
  if (!raw) return undefined;
  try {
    const parsed = JSON.parse(Buffer.from(raw, "base64url").toString("utf8")) as Flash;
    if (["success", "error", "info"].includes(parsed.kind) && typeof parsed.text === "string") return parsed;
  } catch {
    // A tampered or stale cookie is simply ignored.
  }
  return undefined;
}

export function flashCookie(flash: Flash): string {
  const value = Buffer.from(JSON.stringify(flash)).toString("base64url");
  return `${FLASH_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Lax; Max-Age=60`;
}

export const CLEAR_FLASH_COOKIE = `${FLASH_COOKIE}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0`;

/** A 303 to `location` that shows `flash` on the next page (for htmx requests, an `HX-Redirect`). */
export function redirectWithFlash(location: string, flash?: Flash, request?: Request): Response {
  const headers = new Headers();
  if (flash) headers.append("set-cookie", flashCookie(flash));
  // An htmx form post would follow a 303 inside its XHR and swap the next page into the form:
  // tell htmx to navigate instead.
  if (request?.headers.get("hx-request") === "true") {
    headers.set("hx-redirect", location);
    return new Response(null, { status: 200, headers });
  }
  headers.set("location", location);
  return new Response(null, { status: 303, headers });
}
