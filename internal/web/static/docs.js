// /docs: Swagger UI over tuxlab's OpenAPI document, with "Try it out" and
// Authorize. A learner signed in to the interface is authorized already: the
// browser sends the session cookie with Swagger UI's same-origin requests,
// and the interceptor adds the CSRF proof (the readable cookie tuxlab_csrf)
// to those that change something. A token given to Authorize is sent as a
// bearer header instead, and is not persisted.
//
// Accessibility (axe, WCAG 2.1 AA; docs/web.md): Swagger UI is used unchanged,
// with two repairs. The plugin below draws an operation's path as plain text
// rather than a deep link: the link sat inside the summary's button (a control
// within a control). Deep linking still works: opening an operation puts it in
// the address and such an address opens it. The observer names the controls
// Swagger UI leaves unnamed or misnamed whenever it draws them: the servers
// <select>, the Authorize dialog's close button and its buttons whose
// aria-label leaves out the words they show.
"use strict";

/** plainPaths replaces Swagger UI's DeepLink component with its text. */
function plainPaths(system) {
  return {
    wrapComponents: {
      DeepLink: () => (props) => system.React.createElement("span", null, props.text),
    },
  };
}

/** nameControls gives the unnamed or misnamed controls under root a name. */
function nameControls(root) {
  const servers = root.querySelector("select#servers:not([aria-label])");
  if (servers) servers.setAttribute("aria-label", "Server");
  for (const b of root.querySelectorAll(".dialog-ux .close-modal:not([aria-label])")) b.setAttribute("aria-label", "Close");
  for (const b of root.querySelectorAll(".dialog-ux button[aria-label]")) {
    const shown = b.textContent.trim();
    if (shown && !b.getAttribute("aria-label").toLowerCase().includes(shown.toLowerCase())) b.removeAttribute("aria-label");
  }
}
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
    plugins: [plainPaths],
    requestInterceptor: (req) => {
      const method = (req.method || "GET").toUpperCase();
      const csrf = (document.cookie.split(";").map((c) => c.trim().split("=")).find(([k]) => k === "tuxlab_csrf") || [])[1];
      if (csrf && !["GET", "HEAD", "OPTIONS"].includes(method)) req.headers["X-CSRF-Token"] = decodeURIComponent(csrf);
      req.credentials = "same-origin";
      return req;
    },
  });
  window.ui = ui;
  const root = document.getElementById("swagger");
  new MutationObserver(() => nameControls(root)).observe(root, { childList: true, subtree: true });
  nameControls(root);
});
