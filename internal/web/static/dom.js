// Small DOM helpers. Text always goes in as text (textContent), never as HTML:
// the one place HTML is inserted is rendered(), for the Markdown the server
// rendered and sanitised (lessons, and the *_html fields of labs and exams).

/** h("a", {href: "/", class: "x", onclick: fn}, "text", child) builds an element. */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") el.className = v;
    else if (k === "dataset") Object.assign(el.dataset, v);
    else if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "value" || k === "checked" || k === "disabled" || k === "selected") el[k] = v;
    else if (k === "style" && typeof v === "object") Object.assign(el.style, v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  append(el, children);
  return el;
}

/** append adds children (strings, nodes, arrays, null) to el. */
export function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/** clear empties el and fills it with children. */
export function clear(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

/** rendered returns a <div class="prose"> holding html, which the server
 * rendered from Markdown and sanitised (no script, no event handler survives;
 * the page's CSP forbids inline script besides). first: only its first block. */
export function rendered(html, { first = false, cls = "prose" } = {}) {
  const el = h("div", { class: cls });
  el.innerHTML = html || "";
  if (first && el.firstElementChild) el.replaceChildren(el.firstElementChild);
  el.querySelectorAll("pre").forEach((pre) => wideBlocks.observe(pre));
  return el;
}

/** wideBlocks makes a code block that scrolls sideways (wider than the
 * screen) focusable, so a keyboard can scroll it too; it follows the block's
 * width as the window changes, and lets go of a block taken off the page. */
const wideBlocks = new ResizeObserver((entries) => {
  for (const { target: pre } of entries) {
    if (!pre.isConnected) { wideBlocks.unobserve(pre); continue; }
    if (pre.scrollWidth > pre.clientWidth) pre.setAttribute("tabindex", "0");
    else pre.removeAttribute("tabindex");
  }
});

let toastTimer;
/** toast shows a short message in the page's live region. */
export function toast(msg, kind = "info") {
  const el = document.getElementById("toast");
  if (!el) return;
  el.textContent = msg;
  el.className = "show " + kind;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { el.className = ""; }, 3000);
}

/** fmtDate shows an API timestamp in the reader's locale. */
export function fmtDate(ts) {
  if (!ts) return "";
  return new Date(ts).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

/** fmtClock shows seconds as m:ss or h:mm:ss. */
export function fmtClock(s) {
  s = Math.max(0, Math.floor(s));
  const hh = Math.floor(s / 3600), mm = Math.floor((s % 3600) / 60), ss = String(s % 60).padStart(2, "0");
  return hh ? `${hh}:${String(mm).padStart(2, "0")}:${ss}` : `${mm}:${ss}`;
}

/** progressBar draws done of total as an accessible meter. */
export function progressBar(done, total, label) {
  const pct = total ? Math.floor((100 * done) / total) : 0;
  const bar = h("div", { class: "bar", role: "progressbar", "aria-valuemin": 0, "aria-valuemax": 100, "aria-valuenow": pct, "aria-label": label || "Progress" },
    h("span", { style: { width: pct + "%" } }));
  return bar;
}
