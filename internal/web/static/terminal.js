// The terminal panel: xterm.js on the sandbox's WebSocket (docs/terminal.md).
// It fits its box and tells the server the size, reattaches to the same shell
// when the socket drops or the page reloads (the session id is kept in
// localStorage), starts the sandbox again if the idle stop stopped it, copies
// and pastes (Ctrl+Shift+C; Ctrl+V, Cmd+V, Ctrl+Shift+V), offers a key bar on
// touch screens, and shows the server's `expiring` warnings as a countdown.
// A recorded session says so in the bar; where recording is the learner's
// choice (free play), a "Record" box asks for it for the next new shell.
import { Terminal } from "./vendor/xterm/xterm.mjs";
import { FitAddon } from "./vendor/xterm-addon-fit/addon-fit.mjs";
import { h, toast, fmtClock } from "./dom.js";
import { quotaChoices } from "./sandbox.js";
import { ShareDialog, watchersText } from "./share.js";

export const THEME = {
  background: "#11151c", foreground: "#d8dee9", cursor: "#7ee787", cursorAccent: "#11151c",
  selectionBackground: "#3b4a63", selectionForeground: "#ffffff",
  black: "#1b2029", red: "#ff6b6b", green: "#7ee787", yellow: "#f2cc60", blue: "#79c0ff",
  magenta: "#d2a8ff", cyan: "#76e3ea", white: "#d8dee9",
  brightBlack: "#6e7681", brightRed: "#ffa198", brightGreen: "#aff5b4", brightYellow: "#f8e3a1",
  brightBlue: "#a5d6ff", brightMagenta: "#e2c5ff", brightCyan: "#b3f0ff", brightWhite: "#ffffff",
};

const enc = new TextEncoder();

// FINAL_CLOSES are the server's close codes (4000 + HTTP status) that no retry
// can change: 401 (signed out, the password changed) and 403 (account
// inactive, origin refused). Others may pass: a retry finds, starts or
// creates the sandbox again (404, 409) or waits for capacity (503).
const FINAL_CLOSES = new Set([4401, 4403]);

// TAKEN_OVER is the close code of a socket whose shell another tab took over:
// the panel waits for the learner instead of taking it back (no ping-pong).
const TAKEN_OVER = 4000;

// sessionKey is where the id of the shell of a sandbox is kept, so that a
// reload, a dropped socket or a second tab reattach to it.
const sessionKey = (sandboxId) => `tuxlab.term.${sandboxId}`;
// recordKey keeps the learner's choice to record free play, for every sandbox.
const recordKey = "tuxlab.term.record";
const storage = {
  get: (k) => { try { return localStorage.getItem(k) || ""; } catch { return ""; } },
  set: (k, v) => { try { localStorage.setItem(k, v); } catch { /* private mode: no reattaching */ } },
  del: (k) => { try { localStorage.removeItem(k); } catch { /* idem */ } },
};

// KEYS are the key bar's buttons: a name for screen readers, a label, and the
// bytes sent (arrows follow the application's cursor-key mode). A name begins
// with its label's words, so that a learner who says what they see (voice
// control) reaches the button (WCAG 2.5.3, axe's label-content-name-mismatch).
const KEYS = [
  { name: "Esc (Escape)", label: "Esc", data: "\x1b" },
  { name: "Ctrl (Control, applies to the next key)", label: "Ctrl", sticky: true },
  { name: "Tab", label: "Tab", data: "\t" },
  { name: "Arrow up", label: "↑", arrow: "A" },
  { name: "Arrow down", label: "↓", arrow: "B" },
  { name: "Arrow left", label: "←", arrow: "D" },
  { name: "Arrow right", label: "→", arrow: "C" },
  { name: "Control C (interrupt)", label: "^C", data: "\x03" },
];

// ctrlOf is what Ctrl with key types: a control character for @, letters
// and [\]^_, the key itself otherwise.
function ctrlOf(key) {
  if (key.length !== 1) return key;
  const c = key.toUpperCase().charCodeAt(0);
  if (c >= 64 && c <= 95) return String.fromCharCode(c - 64);
  if (key === "?") return "\x7f";
  if (key === " ") return "\x00";
  return key;
}

/**
 * TerminalPanel renders into el. getSandbox() returns a running container
 * (creating or starting it as needed); it is called for every connection.
 */

export class TerminalPanel {
  constructor(el, { getSandbox, title = "Terminal", share = true, recordable = false }) {
    this.getSandbox = getSandbox;
    this.retries = 0;
    this.closed = false;
    this.exited = false;
    this.timers = new Set();
    this.statusEl = h("span", { class: "term-status", role: "status", "aria-live": "polite" });
    this.nameEl = h("span", { class: "term-name" });
    this.watchEl = h("span", { class: "term-watchers", role: "status", hidden: true });
    this.warnEl = h("div", { class: "term-warn", hidden: true, role: "alert" });
    this.host = h("div", { class: "term-host", "aria-label": "Terminal: Tab completes in the shell; F6 leaves the terminal" });
    // The server says whether the session is recorded (its session message).
    this.recEl = h("p", { class: "term-rec", hidden: true }, h("span", { "aria-hidden": "true" }, "● "),
      "This session is recorded: what the terminal shows can be replayed by you and your teachers (", h("a", { href: "/recordings" }, "Recordings"), ").");
    this.recordBox = recordable ? h("input", { type: "checkbox", checked: storage.get(recordKey) === "1", onchange: () => this.setRecord() }) : null;
    this.root = h("section", { class: "term", "aria-label": title, dataset: { state: "idle" } },
      h("div", { class: "term-bar" },
        h("span", { class: "term-dot", "aria-hidden": "true" }), this.nameEl, this.statusEl, this.watchEl,
        h("span", { class: "term-tools" },
          share ? h("button", { type: "button", class: "small ghost", title: "Let someone watch this terminal, or type in it", onclick: () => this.openShare() }, "Share") : null,
          this.recordBox ? h("label", { class: "term-record", title: "Record the next new shell of this sandbox (replay it under Recordings)" }, this.recordBox, " Record") : null,
          h("button", { type: "button", class: "small ghost", title: "Copy the selection (Ctrl+Shift+C)", onclick: () => this.copy() }, "Copy"),
          h("button", { type: "button", class: "small ghost", title: "Paste (Ctrl+Shift+V)", onclick: () => this.pasteFromClipboard() }, "Paste"),
          h("button", { type: "button", class: "small ghost", title: "Connect again (to the same shell while it runs)", onclick: () => this.reconnect(true) }, "Reconnect"),
          h("button", { type: "button", class: "small ghost", title: "End the shell and what runs in it (a new one opens on Enter)", onclick: () => this.endSession() }, "End session"))),
      this.recEl,
      // The warning lies over the screen instead of pushing it down: a resize
      // would reach the server, and the terminal's size should not jump.
      h("div", { class: "term-screen" }, this.host, this.warnEl),
      this.keyBar(),
      h("p", { class: "term-help" }, "Ctrl+Shift+C copies the selection, Ctrl+V pastes, F6 leaves the terminal. A reload keeps the shell."));
    el.replaceChildren(this.root);
    this.root.panel = this; // for the browser test, which drops the socket on purpose

    this.term = new Terminal({
      theme: THEME, cursorBlink: true, scrollback: 5000, allowProposedApi: false,
      fontFamily: "'DejaVu Sans Mono', 'Liberation Mono', ui-monospace, Menlo, Consolas, monospace",
      fontSize: window.matchMedia("(max-width: 600px)").matches ? 13 : 14,
    });
    this.fit = new FitAddon();
    this.term.loadAddon(this.fit);
    this.term.open(this.host);
    this.term.attachCustomKeyEventHandler((e) => this.onKey(e));
    this.term.onData((d) => this.send(this.applyCtrl(d)));
    this.term.onResize(({ cols, rows }) => this.onResize(cols, rows));
    this.resizeObserver = new ResizeObserver(() => this.refit());
    this.resizeObserver.observe(this.host);
    this.onOnline = () => { if (!this.isOpen()) this.reconnect(false); };
    window.addEventListener("online", this.onOnline);
    this.refit();
  }

  /** offerRoom shows, above the terminal, the running sandboxes to stop for this one's place. */
  async offerRoom() {
    if (this.offer) this.offer.remove();
    const offer = await quotaChoices(() => { offer.remove(); this.offer = null; return this.connect(); });
    if (this.closed || !offer.childElementCount) return;
    offer.classList.add("term-offer");
    this.offer = offer;
    this.root.insertBefore(offer, this.host);
  }

  /** start opens the first connection. */
  start() { this.connect(); return this; }

  isOpen() { return this.ws && this.ws.readyState === WebSocket.OPEN; }

  setState(state, text) {
    this.root.dataset.state = state;
    this.statusEl.textContent = text;
  }

  refit() {
    cancelAnimationFrame(this.fitFrame);
    this.fitFrame = requestAnimationFrame(() => {
      if (this.closed || !this.host.offsetParent) return; // hidden: fit when shown
      try { this.fit.fit(); } catch { /* not laid out yet */ }
      this.root.dataset.cols = this.term.cols;
      this.root.dataset.rows = this.term.rows;
    });
  }

  onResize(cols, rows) {
    this.root.dataset.cols = cols;
    this.root.dataset.rows = rows;
    if (this.isOpen()) this.ws.send(JSON.stringify({ type: "resize", cols, rows }));
  }

  async connect() {
    if (this.closed) return;
    clearTimeout(this.retryTimer);
    this.exited = false;
    this.setState("connecting", this.retries ? "Reconnecting…" : "Connecting…");
    let c;
    try {
      c = await this.getSandbox((msg) => this.setState("connecting", msg));
    } catch (e) {
      if (this.closed) return;
      if (e.status === 0 || e.status >= 500) { this.scheduleRetry(e.message); return; }
      this.setState("error", e.message);
      // Quotas (409): the learner frees a place here with one click (stop a
      // running sandbox, then connect again), or on the dashboard.
      if (e.status === 409) this.statusEl.append(" ", h("a", { href: "/dashboard#sandboxes" }, "Manage your sandboxes"));
      if (e.status === 409 && /quota/i.test(e.message)) this.offerRoom();
      return;
    }
    if (this.closed) return;
    this.container = c;
    this.root.dataset.containerId = c.id;
    this.root.dispatchEvent(new CustomEvent("sandbox", { detail: c })); // the preview control (preview.js)
    this.nameEl.textContent = `${c.name} #${c.id}`;
    try { this.fit.fit(); } catch { /* keep the last size */ }
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    const q = new URLSearchParams({ cols: this.term.cols, rows: this.term.rows }); // the browser sends the session cookie
    // The shell this sandbox had: the server reattaches to it while it runs.
    this.askedSession = storage.get(sessionKey(c.id));
    if (this.askedSession) q.set("session", this.askedSession);
    if (this.recordBox && this.recordBox.checked) q.set("record", "true"); // a new shell only: a reattach keeps its choice
    this.elsewhere = false;
    const ws = new WebSocket(`${proto}//${location.host}${c.terminal_url}?${q}`);
    ws.binaryType = "arraybuffer";
    this.ws = ws;
    ws.onopen = () => {
      if (ws !== this.ws) return;
      this.retries = 0;
      this.setState("connected", "Connected");
      this.onResize(this.term.cols, this.term.rows);
      if (document.activeElement === document.body) this.term.focus();
    };
    ws.onmessage = (e) => {
      if (ws !== this.ws) return;
      if (typeof e.data !== "string") { this.term.write(new Uint8Array(e.data)); return; }
      let m;
      try { m = JSON.parse(e.data); } catch { return; }
      this.control(m);
    };
    ws.onclose = (e) => {
      if (ws !== this.ws || this.closed || this.exited) return;
      if (e.code === TAKEN_OVER || this.elsewhere) { this.showElsewhere(); return; }
      if (e.code === 1000) {
        // Closed on purpose (the idle limit): no reconnecting loop behind the
        // learner's back; Enter or Reconnect opens a new shell.
        this.exited = true;
        this.hideWarning();
        this.setState("exited", e.reason === "idle" ? "Closed after inactivity" : "Closed");
        this.term.write("\r\n\x1b[2m[the terminal was closed" + (e.reason === "idle" ? " after inactivity" : "") + ": press Enter for a new shell]\x1b[0m\r\n");
        return;
      }
      const err = this.lastError && Date.now() - this.lastError.at < 3000 ? this.lastError.detail : "";
      this.lastError = null;
      if (FINAL_CLOSES.has(e.code)) {
        // The server refused for good (signed out, account inactive):
        // retrying would only repeat it.
        this.exited = true;
        this.hideWarning();
        this.setState("exited", err || e.reason || "Closed by the server");
        return;
      }
      this.scheduleRetry(err || "Disconnected");
    };
  }

  control(m) {
    if (m.type === "session") {
      const key = sessionKey(this.container.id);
      if (m.id === this.askedSession) {
        // The same shell: what it printed meanwhile is replayed next, onto a
        // clean screen, and a full-screen program draws itself again.
        this.term.reset();
      } else if (this.askedSession || this.started) {
        this.term.write("\r\n\x1b[2m[a new shell: the previous one has ended]\x1b[0m\r\n");
      }
      this.started = true;
      this.recEl.hidden = !m.recording;
      this.root.dataset.recording = m.recording ? "true" : "false";
      this.askedSession = m.id;
      storage.set(key, m.id);
    } else if (m.type === "watchers") {
      this.showWatchers(m.watchers || []);
    } else if (m.type === "detached") {
      // Another tab took this shell over: say so, and wait for the learner.
      this.elsewhere = true;
    } else if (m.type === "exit") {
      this.forgetSession();
      this.exited = true;
      this.setState("exited", `Shell exited (${m.code})`);
      this.term.write(`\r\n\x1b[2m[the shell exited with code ${m.code}: press Enter for a new one]\x1b[0m\r\n`);
    } else if (m.type === "expiring") {
      this.warn(m.reason, Number(m.seconds) || 0);
    } else if (m.type === "error") {
      // A server may refuse a session this way right after the upgrade and
      // close: the detail then says why, while the panel retries.
      this.lastError = { detail: m.detail, at: Date.now() };
      toast(m.detail || "The terminal reported an error", "error");
      this.term.write(`\r\n\x1b[31m[${m.detail || "error"}]\x1b[0m\r\n`);
    }
  }

  /** setRecord keeps the learner's choice; it applies to the next new shell. */
  setRecord() {
    const on = this.recordBox.checked;
    storage.set(recordKey, on ? "1" : "0");
    toast(on ? "The next new shell is recorded (End session, then Enter, for one now)" : "The next new shell is not recorded");
  }

  /** warn shows the server's warning with a live countdown. */
  warn(reason, seconds) {
    clearInterval(this.warnTimer);
    this.warnReason = reason;
    const deadline = Date.now() + seconds * 1000;
    const text = () => {
      const left = Math.max(0, (deadline - Date.now()) / 1000);
      return reason === "lifetime"
        ? `This sandbox reaches its maximum lifetime in ${fmtClock(left)} and will be removed. Save what you need.`
        : `Idle: this terminal closes in ${fmtClock(left)}. Type anything to keep it open.`;
    };
    this.warnEl.textContent = text();
    this.warnEl.dataset.reason = reason;
    this.warnEl.hidden = false;
    this.warnTimer = setInterval(() => {
      this.warnEl.textContent = text();
      if (Date.now() > deadline + 5000) this.hideWarning();
    }, 1000);
  }

  hideWarning() {
    clearInterval(this.warnTimer);
    this.warnEl.hidden = true;
  }

  scheduleRetry(reason = "Disconnected") {
    const delay = Math.min(15000, 1000 * 2 ** this.retries);
    this.retries++;
    this.setState("reconnecting", `${reason}: retrying in ${Math.round(delay / 1000)} s`);
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => this.connect(), delay);
  }

  /** reconnect drops the socket (if any) and connects again: to the same
   * shell while it runs, or a new one. */
  reconnect(byUser) {
    if (this.ws) { const old = this.ws; this.ws = null; old.close(); }
    if (byUser) this.retries = 0;
    this.hideWarning();
    this.connect();
  }

  /** endSession hangs the shell up at once (the close message); Enter opens a new one. */
  endSession() {
    if (!this.isOpen()) { this.forgetSession(); return; }
    const ws = this.ws;
    ws.send(JSON.stringify({ type: "close" }));
    this.forgetSession();
    this.exited = true;
    this.hideWarning();
    this.setState("exited", "Session ended");
    this.term.write("\r\n\x1b[2m[session ended: press Enter for a new shell]\x1b[0m\r\n");
  }

  forgetSession() {
    if (this.container) storage.del(sessionKey(this.container.id));
    this.askedSession = "";
  }

  /** showElsewhere says the shell is open in another tab, with a button to take it back. */
  showElsewhere() {
    this.exited = true;
    clearInterval(this.warnTimer);
    this.setState("elsewhere", "Open in another tab");
    this.warnEl.replaceChildren("This terminal is open in another tab. ",
      h("button", { type: "button", class: "small", onclick: () => { this.exited = false; this.reconnect(true); } }, "Use it here"));
    this.warnEl.dataset.reason = "elsewhere";
    this.warnEl.hidden = false;
  }

  /** typeText types text into the shell as a paste (bracketed when the
   * application asked for it) and focuses the terminal. */
  typeText(text) {
    if (text) this.term.paste(text);
    this.term.focus();
  }

  /** keyBar is the row of keys a touch keyboard lacks, shown on coarse pointers and small screens. */
  keyBar() {
    this.ctrlButton = null;
    const bar = h("div", { class: "term-keys", role: "toolbar", "aria-label": "Terminal keys" },
      ...KEYS.map((k) => {
        const b = h("button", { type: "button", class: "small ghost", "aria-label": k.name, title: k.name,
          onmousedown: (e) => e.preventDefault(), // keep the focus (and the on-screen keyboard) in the terminal
          onclick: () => this.pressKey(k) }, k.label);
        if (k.sticky) { b.setAttribute("aria-pressed", "false"); this.ctrlButton = b; }
        return b;
      }));
    const mq = window.matchMedia("(pointer: coarse), (max-width: 600px)");
    const show = () => { bar.hidden = !mq.matches; this.refit(); };
    mq.addEventListener?.("change", show);
    bar.hidden = !mq.matches;
    return bar;
  }

  pressKey(k) {
    if (k.sticky) {
      this.ctrlSticky = !this.ctrlSticky;
      this.ctrlButton.setAttribute("aria-pressed", String(this.ctrlSticky));
    } else if (k.arrow) {
      this.send(this.applyCtrl((this.term.modes?.applicationCursorKeysMode ? "\x1bO" : "\x1b[") + k.arrow));
    } else {
      this.send(this.applyCtrl(k.data));
    }
    this.term.focus();
  }

  /** applyCtrl turns the next key into its control character when the key bar's Ctrl is on. */
  applyCtrl(data) {
    if (!this.ctrlSticky) return data;
    this.ctrlSticky = false;
    this.ctrlButton?.setAttribute("aria-pressed", "false");
    return data.length === 1 ? ctrlOf(data) : data;
  }

  send(data) {
    if (this.elsewhere) return; // "Use it here" takes the shell back, not a stray key
    if (this.exited && data === "\r") { this.reconnect(true); return; }
    if (this.warnReason === "idle") { this.warnReason = ""; this.hideWarning(); }
    if (this.isOpen()) this.ws.send(enc.encode(data));
  }

  onKey(e) {
    if (e.type !== "keydown") return true;
    const combo = e.ctrlKey && e.shiftKey && !e.altKey && !e.metaKey;
    if (combo && e.code === "KeyC") { e.preventDefault(); this.copy(); return false; }
    // Ctrl+V and Cmd+V paste too, as in other web applications (a shell's
    // Ctrl+V, the next key verbatim, is rarely needed: Ctrl+Shift+V and
    // Ctrl+V then behave the same).
    const paste = (e.ctrlKey !== e.metaKey) && !e.altKey && e.code === "KeyV";
    if (paste) {
      // With the Clipboard API, read it here; without (plain http on another
      // host), let the browser's own paste event reach xterm.js.
      if (navigator.clipboard && navigator.clipboard.readText) { e.preventDefault(); this.pasteFromClipboard(); }
      return false;
    }
    if (e.key === "F6" && !e.ctrlKey && !e.altKey) {
      e.preventDefault();
      const next = this.root.closest(".split")?.querySelector("[data-focus-after-terminal]") || document.querySelector("#main h1");
      if (next) { if (!next.hasAttribute("tabindex") && !/^(A|BUTTON|INPUT)$/.test(next.tagName)) next.setAttribute("tabindex", "-1"); next.focus(); }
      return false;
    }
    return true;
  }

  async copy() {
    const text = this.term.getSelection();
    if (!text) { toast("Select some text in the terminal first"); return; }
    try {
      await navigator.clipboard.writeText(text);
      toast("Copied");
    } catch {
      toast("The browser refused the clipboard: use its Copy menu", "error");
    }
    this.term.focus();
  }

  async pasteFromClipboard() {
    try {
      const text = await navigator.clipboard.readText();
      if (text) this.term.paste(text);
    } catch {
      toast("The browser refused to read the clipboard: use Shift+Insert or its Paste menu", "error");
    }
    this.term.focus();
  }

  focus() { this.term.focus(); }

  /** openShare opens the Share dialog for this terminal's sandbox. */
  openShare() {
    if (!this.container) { toast("The terminal is not connected yet"); return; }
    this.share ||= new ShareDialog();
    this.share.open(this.container);
  }

  /** showWatchers shows who watches in the header (the server's watchers message). */
  showWatchers(ws) {
    this.watchEl.textContent = watchersText(ws);
    this.watchEl.title = this.watchEl.textContent;
    this.watchEl.hidden = !ws.length;
    this.share?.setWatchers(ws);
  }

  /** dispose closes the socket and frees everything: the shell runs on for
   * the server's grace, so coming back to the page reattaches to it. */
  dispose() {
    this.closed = true;
    clearTimeout(this.retryTimer);
    clearInterval(this.warnTimer);
    window.removeEventListener("online", this.onOnline);
    this.resizeObserver.disconnect();
    if (this.ws) this.ws.close();
    this.share?.dispose();
    this.term.dispose();
  }
}
