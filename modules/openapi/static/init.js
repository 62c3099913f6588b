// Swagger UI for Outpost's OpenAPI document (served from the project: no CDN, no inline script).
window.addEventListener("load", () => {
  window.ui = window.SwaggerUIBundle({
    url: "/api/openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    presets: [window.SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    tryItOutEnabled: false,
  });
});
