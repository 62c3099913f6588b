/**
 * Headers every response carries. The console runs with no inline script (htmx, the chart code and
 * page scripts are files under /assets) and may not be framed by anyone. Inline `style` attributes are
 * allowed: uPlot and a few layout tweaks use them, and styles cannot run code.
 */
export function securityHeaders(https: boolean, formTargets: string[] = []): Record<string, string> {
  const headers: Record<string, string> = {
    "content-security-policy": [
      "default-src 'self'",
      "script-src 'self'",
      "style-src 'self' 'unsafe-inline'",
      "img-src 'self' data:",
      "connect-src 'self'",
      "object-src 'none'",
      "base-uri 'none'",
      // "Open web UI" posts to the console, which redirects to the device's hostname: form-action
      // covers that redirect too.
      ["form-action 'self'", ...formTargets].join(" "),
      "frame-ancestors 'none'",
    ].join("; "),
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
  };
  if (https) headers["strict-transport-security"] = "max-age=31536000; includeSubDomains";
  return headers;
}
