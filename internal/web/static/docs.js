// /docs: Swagger UI over tuxlab's OpenAPI document, with "Try it out" and
// Authorize. A learner signed in to the interface is authorized already: the
// browser sends the session cookie with Swagger UI's same-origin requests,
// and the interceptor adds the CSRF proof (the readable cookie tuxlab_csrf)
// to those that change something. A token given to Authorize is sent as a
// bearer header instead, and is not persisted.
"use strict";
window.addEventListener("DOMContentLoaded", () => {
  const ui = window.SwaggerUIBundle({
    url: "/api/openapi.json",
    dom_id: "#swagger",
    deepLinking: true,
    persistAuthorization: false,
    tryItOutEnabled: false,
    validatorUrl: null,
    defaultModelsExpandDepth: 1,
    defaultModelExpandDepth: 2,
    displayRequestDuration: true,
    filter: true,
    requestInterceptor: (req) => {
      const method = (req.method || "GET").toUpperCase();
      const csrf = (document.cookie.split(";").map((c) => c.trim().split("=")).find(([k]) => k === "tuxlab_csrf") || [])[1];
      if (csrf && !["GET", "HEAD", "OPTIONS"].includes(method)) req.headers["X-CSRF-Token"] = decodeURIComponent(csrf);
      req.credentials = "same-origin";
      return req;
    },
  });
  window.ui = ui;
});
