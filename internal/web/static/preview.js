// The port preview beside a sandbox's terminal (docs/preview.md): a port and
// an "Open" link to /preview/{id}/{port}/ in a new tab, where the server
// proxies to a web service listening on that port inside the sandbox. The
// owner's bar sits below a lesson's or a lab's terminal; a guest's below the
// shared terminal of the watch page, its link carrying the share's token.
import { h } from "./dom.js";

let seq = 0;

/**
 * previewBar returns the bar and its update function. target() gives the
 * sandbox to preview ({id, kind, share?}) or null while there is none;
 * note is said after the link.
 */
function previewBar(target, note) {
  const id = `preview-port-${++seq}`;
  const input = h("input", { type: "number", id, min: "1", max: "65535", value: "80", inputmode: "numeric", class: "preview-port" });
  const link = h("a", { class: "button small preview-open", target: "_blank", rel: "noopener noreferrer" }, "Open");
  const box = h("div", { class: "preview-bar", hidden: true },
    h("label", { for: id }, "Preview a web service on port"), input, link,
    h("span", { class: "preview-note" }, note));
  function update() {
    const c = target();
    const port = Number(input.value);
    box.hidden = !c || c.kind === "machine";
    if (c && Number.isInteger(port) && port >= 1 && port <= 65535) {
      // A guest's first request carries the share's token (a query
      // parameter: tuxlab never logs query strings); the server answers
      // with a ticketed URL without it.
      link.href = `/preview/${c.id}/${port}/` + (c.share ? "?" + new URLSearchParams({ share: c.share }) : "");
      link.removeAttribute("aria-disabled");
      link.setAttribute("aria-label", `Open port ${port} of sandbox ${c.id} in a new tab`);
    } else {
      link.removeAttribute("href");
      link.setAttribute("aria-disabled", "true");
      link.setAttribute("aria-label", "Open: give a port from 1 to 65535 first");
    }
  }
  input.addEventListener("input", update);
  update();
  return { box, update };
}

/**
 * previewControl returns the control for panel's sandbox: it appears once
 * the panel knows its sandbox (its "sandbox" event), for containers only
 * (machines have no preview yet).
 */
export function previewControl(panel) {
  const { box, update } = previewBar(() => panel.container, "in a new tab, only for you and the people you share the terminal with");
  panel.root.addEventListener("sandbox", update);
  return box;
}

/**
 * guestPreviewControl returns the control of the watch page: it appears
 * once the guest's socket has told the shared sandbox (setSandbox(id)),
 * and previews it through share token while the share is live.
 */
export function guestPreviewControl(token) {
  let sandbox = null;
  const { box, update } = previewBar(() => sandbox, "in a new tab, while the link is live");
  return {
    box,
    setSandbox(id) {
      sandbox = id ? { id, share: token } : null;
      update();
    },
  };
}
