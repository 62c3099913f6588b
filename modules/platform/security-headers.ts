/**
 * Headers every response carries. The console runs with no inline script (htmx, the chart code and
 * page scripts are files under /assets) and may not be framed by anyone. Inline `style` attributes are
 * allowed: uPlot and a few layout tweaks use them, and styles cannot run code.
 */
export function securityHeaders(https: boolean): Record<string, string> {
  const headers: Record<string, string> = {
    "content-security-policy": [
      "default-src 'self'",
      "script-src 'self'",
      "style-src 'self' 'unsafe-inline'",
      "img-src 'self' data:",
      "connect-src 'self'",
      "object-src 'none'",
      "base-uri 'none'",
      "form-action 'self'",
      "frame-ancestors 'none'",
    ].join("; "),
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
  };
  if (https) headers["strict-transport-security"] = "max-age=31536000; includeSubDomains";
  return headers;
}
