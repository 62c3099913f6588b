import { consoleCookie, consoleCookieName, readCookie } from "../modules/platform/access";

export type FlashKind = "success" | "error" | "info";
export interface Flash {
  kind: FlashKind;
  text: string;
}

/** A console cookie like the session's: `__Host-outpost_flash` (Secure) when BASE_URL is https. */
export const FLASH_COOKIE = "outpost_flash";
const FLASH_MAX_AGE_SECONDS = 60;

export function readFlash(request: Request, https: boolean): Flash | undefined {
  const raw = readCookie(request, consoleCookieName(FLASH_COOKIE, https));
  if (!raw) return undefined;
  try {
    const parsed = JSON.parse(Buffer.from(raw, "base64url").toString("utf8")) as Flash;
    if (["success", "error", "info"].includes(parsed.kind) && typeof parsed.text === "string") return parsed;
  } catch {
    // A tampered or stale cookie is simply ignored.
  }
  return undefined;
}

export function flashCookie(flash: Flash, https: boolean): string {
  const value = Buffer.from(JSON.stringify(flash)).toString("base64url");
  return consoleCookie(FLASH_COOKIE, value, https, FLASH_MAX_AGE_SECONDS);
}

export function clearFlashCookie(https: boolean): string {
  return consoleCookie(FLASH_COOKIE, "", https, 0);
}

/** A 303 to `location` setting `cookies` (for htmx requests, an `HX-Redirect`). */
export function redirectSettingCookies(location: string, cookies: string[], request?: Request): Response {
  const headers = new Headers();
  for (const cookie of cookies) headers.append("set-cookie", cookie);
  // An htmx form post would follow a 303 inside its XHR and swap the next page into the form:
  // tell htmx to navigate instead.
  if (request?.headers.get("hx-request") === "true") {
    headers.set("hx-redirect", location);
    return new Response(null, { status: 200, headers });
  }
  headers.set("location", location);
  return new Response(null, { status: 303, headers });
}

/** The flash after an action that may find nothing to do: `success` when it did, else `error`. */
export function outcomeFlash(done: boolean, success: string, error: string): Flash {
  return done ? { kind: "success", text: success } : { kind: "error", text: error };
}
