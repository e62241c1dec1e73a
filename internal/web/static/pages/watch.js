// Watching a shared terminal (docs/terminal.md, "Shared terminals"): the link
// /watch#TOKEN keeps the token in the fragment, which the browser never
// sends; the page gives it to the guest's WebSocket (/ws/watch?share=…) as a
// query parameter (tuxlab never logs query strings). The guest must be signed
// in. The screen is read-only unless the owner lets guests of a "may type"
// share type. Below the terminal, the guest may preview the shared sandbox's
// web services (docs/preview.md, "Invited guests").
import { h, clear } from "../dom.js";
import { Terminal } from "../vendor/xterm/xterm.mjs";
import { FitAddon } from "../vendor/xterm-addon-fit/addon-fit.mjs";
import { THEME } from "../terminal.js";
import { guestPreviewControl } from "../preview.js";

const enc = new TextEncoder();

/** render draws the watch page. */
export async function render(ctx) {
  const token = decodeURIComponent(location.hash.slice(1));
  ctx.title("Watching a terminal");
  if (!token) {
    clear(ctx.main, h("div", { class: "not-found" }, h("h1", null, "No share link"),
      h("p", null, "Open the whole link you were sent: its end (after #) lets you in.")));
    return;
  }
  if (!ctx.me) {
    clear(ctx.main, h("div", { class: "not-found" }, h("h1", null, "Sign in to watch"),
      h("p", null, "Someone shared their terminal with you. Sign in (or sign up) to watch it."),
      h("p", null, h("a", { class: "button", href: "/signin?next=" + encodeURIComponent("/watch#" + token) }, "Sign in"))));
    return;
  }
  const title = h("h1", null, "Watching a shared terminal");
  const status = h("p", { class: "watch-status", role: "status" }, "Connecting…");
  const host = h("div", { class: "term-host", "aria-label": "Shared terminal (read-only unless its owner lets you type)" });
  const root = h("section", { class: "term watch-term", "aria-label": "Shared terminal", dataset: { state: "connecting" } },
    h("div", { class: "term-screen" }, host));
  const preview = guestPreviewControl(token);
  root.append(preview.box);
  clear(ctx.main, h("div", { class: "watch" }, h("div", { class: "watch-banner" }, title, status), root));

  const term = new Terminal({ theme: THEME, scrollback: 5000, disableStdin: true, cursorBlink: false,
    fontFamily: "'DejaVu Sans Mono', 'Liberation Mono', ui-monospace, Menlo, Consolas, monospace", fontSize: 14 });
  const fit = new FitAddon();
  term.loadAddon(fit);
  term.open(host);
  try { fit.fit(); } catch { /* not laid out yet */ }
  const ro = new ResizeObserver(() => { try { fit.fit(); } catch { /* hidden */ } });
  ro.observe(host);

  const proto = location.protocol === "https:" ? "wss:" : "ws:";
  const ws = new WebSocket(`${proto}//${location.host}/ws/watch?${new URLSearchParams({ share: token })}`);
  ws.binaryType = "arraybuffer";
  let typing = false, owner = "";
  const say = (state, text) => { root.dataset.state = state; status.textContent = text; };
  const mode = () => (typing ? "You may type: what you type goes to the shell." : "Read-only: you watch, you cannot type.");
  term.onData((d) => { if (typing && ws.readyState === WebSocket.OPEN) ws.send(enc.encode(d)); });
  ws.onmessage = (e) => {
    if (typeof e.data !== "string") { term.write(new Uint8Array(e.data)); return; }
    let m;
    try { m = JSON.parse(e.data); } catch { return; }
    if (m.type === "watching") {
      owner = m.owner;
      typing = !!m.typing;
      title.textContent = `Watching ${owner}'s terminal`;
      ctx.title(`Watching ${owner}'s terminal`);
      term.options.disableStdin = !typing;
      say("connected", mode());
      preview.setSandbox(m.container_id);
    } else if (m.type === "typing") {
      typing = !!m.typing;
      term.options.disableStdin = !typing;
      say("connected", mode());
      if (typing) term.focus();
    } else if (m.type === "error") {
      say(m.status ? "exited" : "connected", m.detail);
    }
  };
  ws.onclose = (e) => {
    if (!(root.dataset.state === "exited" && !e.reason)) say("exited", e.reason ? `Closed: ${e.reason}` : "The connection closed");
    // The owner may open a new shell, or the network come back: watching
    // again is one click while the link is live.
    status.append(" ", h("button", { type: "button", class: "small", onclick: () => location.reload() }, "Watch again"));
  };
  ctx.cleanup(() => { ro.disconnect(); ws.close(); term.dispose(); });
}
