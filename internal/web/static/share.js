// Sharing a terminal (docs/terminal.md, "Shared terminals"): the terminal
// pane's Share button opens a dialog that makes a link (read-only, or one
// whose guests may type once allowed), copies it, lists who watches, lets
// them type or stops them, and ends sharing. The token is shown once, when
// the link is made; a share made earlier can still be ended.
import { api } from "./api.js";
import { h, clear, toast } from "./dom.js";

/** linkOf is a share link as a guest opens it. */
const linkOf = (sh) => new URL(sh.link, location.origin).href;

/** names is who watches, for the terminal's header. */
export function watchersText(ws) {
  if (!ws || !ws.length) return "";
  const names = [...new Set(ws.map((w) => w.name))];
  return `Watched by ${names.join(", ")}`;
}

/** ShareDialog belongs to a terminal panel; open() shows it for container c. */
export class ShareDialog {
  constructor() {
    this.links = new Map(); // share id → link, for the shares made in this page
    this.watchers = [];
    this.body = h("div", { class: "share-body" });
    this.el = h("dialog", { class: "share-dialog", "aria-labelledby": "share-title" },
      h("h2", { id: "share-title" }, "Share this terminal"),
      h("p", { class: "muted small" }, "Whoever opens the link, signed in to tuxlab, sees this terminal live. You see who watches here and in the terminal's header."),
      this.body,
      h("p", { class: "share-close" }, h("button", { type: "button", class: "ghost", onclick: () => this.el.close() }, "Close")));
    document.body.append(this.el);
  }

  async open(c) {
    this.c = c;
    if (!this.el.open) this.el.showModal();
    await this.refresh();
  }

  /** setWatchers is the owner's socket's news of who watches. */
  setWatchers(ws) {
    this.watchers = ws || [];
    if (this.el.open && this.shares) this.draw();
  }

  async refresh() {
    try {
      this.shares = await api("GET", `/api/containers/${this.c.id}/shares`);
    } catch (e) {
      clear(this.body, h("p", { class: "error" }, e.message));
      return;
    }
    this.draw();
  }

  draw() {
    const mode = h("fieldset", null, h("legend", null, "Guests may"),
      h("label", null, h("input", { type: "radio", name: "share-mode", value: "read", checked: true }), " only watch"), " ",
      h("label", null, h("input", { type: "radio", name: "share-mode", value: "write" }), " type too, once you allow it"));
    const make = h("button", { type: "button", onclick: () => this.create(mode.querySelector("input:checked").value) }, "Make a link");
    clear(this.body,
      this.shares.length ? h("ul", { class: "share-list" }, this.shares.map((sh) => this.item(sh))) : h("p", null, "Not shared now."),
      h("div", { class: "share-new" }, mode, make));
  }

  item(sh) {
    const link = this.links.get(sh.id);
    const live = this.watchers.filter((w) => w.share_id === sh.id);
    const who = (live.length ? live : sh.watchers).map((w) => w.name);
    const until = new Date(sh.expires_at).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
    const typing = sh.mode === "write"
      ? h("label", null, h("input", { type: "checkbox", checked: sh.typing, onchange: (e) => this.setTyping(sh, e.target.checked) }), " Let them type now")
      : null;
    return h("li", { class: "share-item", dataset: { shareId: sh.id } },
      h("p", null, h("strong", null, sh.mode === "write" ? "May type" : "Read-only"), ` · until ${until} · `,
        h("span", { class: "share-watchers" }, who.length ? `watching: ${[...new Set(who)].join(", ")}` : "nobody watching")),
      link ? h("p", { class: "share-link" },
        h("label", { for: `share-link-${sh.id}`, class: "sr" }, "Share link"),
        h("input", { id: `share-link-${sh.id}`, type: "text", readonly: true, value: link, onfocus: (e) => e.target.select() }), " ",
        h("button", { type: "button", class: "small", onclick: () => this.copy(link) }, "Copy link")) : null,
      h("p", { class: "share-actions" }, typing, " ",
        h("button", { type: "button", class: "small danger", onclick: () => this.end(sh) }, "End sharing")));
  }

  async create(mode) {
    try {
      const sh = await api("POST", `/api/containers/${this.c.id}/shares`, { body: { mode } });
      this.links.set(sh.id, linkOf(sh));
      toast("Link made: copy it and send it");
    } catch (e) {
      toast(e.message, "error");
    }
    await this.refresh();
  }

  async setTyping(sh, on) {
    try {
      await api("PATCH", `/api/containers/${this.c.id}/shares/${sh.id}`, { body: { typing: on } });
      toast(on ? "Your guests may type" : "Your guests only watch");
    } catch (e) {
      toast(e.message, "error");
    }
    await this.refresh();
  }

  async end(sh) {
    try {
      await api("DELETE", `/api/containers/${this.c.id}/shares/${sh.id}`);
      this.links.delete(sh.id);
      toast("Sharing ended");
    } catch (e) {
      toast(e.message, "error");
    }
    await this.refresh();
  }

  async copy(link) {
    try {
      await navigator.clipboard.writeText(link);
      toast("Link copied");
    } catch {
      toast("The browser refused the clipboard: select the link and copy it", "error");
    }
  }

  dispose() { this.el.remove(); }
}
