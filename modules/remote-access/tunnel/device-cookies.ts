/**
 * A device's web UI is untrusted content served under the console's parent domain (docs/security.md,
 * "Threat model"). A cookie it sets with `Domain=<parent>` would be sent to the console and every other
 * device; one named like the console's could shadow or clear the operator's session. So the HTTP front
 * confines every cookie a device sets to the device's own host: the `Domain` attribute is dropped (a
 * host-only cookie), and a cookie named like the console's or the front's own (`outpost_…`, with or
 * without a `__Host-`/`__Secure-` prefix, in any case) or with no name at all is dropped.
 */

/** Names the console and the front use; browsers compare cookie prefixes case-insensitively. */
const RESERVED_NAME = /^(?:__host-|__secure-)?outpost_/i;

/** `value` of a device's Set-Cookie header as the browser may see it, or undefined to drop it. */
export function confineSetCookie(value: string): string | undefined {
  const [pair = "", ...attributes] = value.split(";");
  const equals = pair.indexOf("=");
  // A nameless cookie (`=outpost_session=x`, or no `=` at all) is sent back as its bare value, which
  // reads as `name=value`: it could pose as any cookie.
  const name = equals < 0 ? "" : pair.slice(0, equals).trim();
  if (name === "" || RESERVED_NAME.test(name)) return undefined;
  const kept = attributes.filter((attribute) => attribute.split("=")[0]!.trim().toLowerCase() !== "domain");
  return [pair.trim(), ...kept.map((attribute) => attribute.trim())].join("; ");
}

/**
 * The header lines of a device's response head (the status line first), with obsolete line folding
 * undone (a browser would join a folded line to the header above it, Set-Cookie included) and every
 * Set-Cookie confined by `confineSetCookie`.
 */
export function confineResponseHead(lines: string[]): string[] {
  const unfolded: string[] = [];
  for (const [index, line] of lines.entries()) {
    if (index === 0 || !/^[ \t]/.test(line)) unfolded.push(line);
    else if (unfolded.length > 1) unfolded[unfolded.length - 1] = `${unfolded.at(-1)} ${line.trim()}`;
    // A folded line right after the status line continues no header: it is dropped.
  }
  return unfolded.flatMap((line, index) => {
    const cookie = index > 0 ? /^set-cookie\s*:(.*)$/i.exec(line) : null;
    if (!cookie) return [line];
    const confined = confineSetCookie(cookie[1]!.trim());
    return confined === undefined ? [] : [`Set-Cookie: ${confined}`];
  });
}
