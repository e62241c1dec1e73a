// /docs: Swagger UI over tuxlab's OpenAPI document, with "Try it out" and
// Authorize. A learner signed in to the interface in this tab is authorized
// already: the token comes from this tab's sessionStorage, and Swagger UI is
// told not to persist it anywhere else.
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
    onComplete: () => {
      const token = sessionStorage.getItem("tuxlab.token");
      if (token) ui.preauthorizeApiKey("bearer", token);
    },
  });
  window.ui = ui;
});
