// The port preview beside a sandbox's terminal (docs/preview.md): a port and
// an "Open" link to /preview/{id}/{port}/ in a new tab, where the server
// proxies to a web service listening on that port inside the sandbox.
import { h } from "./dom.js";

let seq = 0;

/**
 * previewControl returns the control for panel's sandbox: it appears once
 * the panel knows its sandbox (its "sandbox" event), for containers only
 * (machines have no preview yet).
 */
export function previewControl(panel) {
  const id = `preview-port-${++seq}`;
  const input = h("input", { type: "number", id, min: "1", max: "65535", value: "80", inputmode: "numeric", class: "preview-port" });
  const link = h("a", { class: "button small preview-open", target: "_blank", rel: "noopener noreferrer" }, "Open");
  const box = h("div", { class: "preview-bar", hidden: true },
    h("label", { for: id }, "Preview a web service on port"), input, link,
    h("span", { class: "preview-note" }, "in a new tab, only for you"));
  function update() {
    const c = panel.container;
    const port = Number(input.value);
    box.hidden = !c || c.kind === "machine";
    if (c && Number.isInteger(port) && port >= 1 && port <= 65535) {
      link.href = `/preview/${c.id}/${port}/`;
      link.removeAttribute("aria-disabled");
      link.setAttribute("aria-label", `Open port ${port} of sandbox ${c.id} in a new tab`);
    } else {
      link.removeAttribute("href");
      link.setAttribute("aria-disabled", "true");
      link.setAttribute("aria-label", "Open: give a port from 1 to 65535 first");
    }
  }
  input.addEventListener("input", update);
  panel.root.addEventListener("sandbox", update);
  update();
  return box;
}
