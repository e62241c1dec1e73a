// A lesson beside a live terminal on the learner's practice sandbox.
import { api } from "../api.js";
import { h, clear, toast, rendered } from "../dom.js";
import { TerminalPanel } from "../terminal.js";
import { lessonSandbox } from "../sandbox.js";

/** split lays out a reading pane and a terminal pane, with tabs on small screens. */
export function split(ctx, left, right, labels = ["Lesson", "Terminal"]) {
  const tabs = h("div", { class: "pane-tabs", role: "tablist" },
    labels.map((l, i) => h("button", { type: "button", role: "tab", "aria-selected": i === 0 ? "true" : "false", onclick: () => show(i) }, l)));
  const wrap = h("div", { class: "split", dataset: { show: "0" } }, tabs, h("div", { class: "pane read" }, left), h("div", { class: "pane run" }, right));
  function show(i) {
    wrap.dataset.show = String(i);
    tabs.querySelectorAll("button").forEach((b, j) => b.setAttribute("aria-selected", i === j ? "true" : "false"));
  }
  clear(ctx.main, wrap);
  return { wrap, show };
}

/** render draws lesson ctx.params[0]. */
export async function render(ctx) {
  const id = Number(ctx.params[0]);
  const [theme, content, modules] = await Promise.all([
    api("GET", `/api/lessons/themes/${id}`),
    api("GET", `/api/lessons/themes/${id}/content`),
    api("GET", "/api/lessons/modules"),
  ]);
  const mod = modules.find((m) => m.id === theme.module_id);
  const lab = await api("GET", `/api/laboratories/section/${theme.module_id}/laboratory`).catch(() => null);
  ctx.title(theme.title);

  const body = rendered(content.html, { cls: "prose lesson-body" });
  const doneBtn = h("button", { type: "button", "data-focus-after-terminal": "" }, theme.completed ? "Completed ✓" : "Mark as completed");
  if (theme.completed) doneBtn.classList.add("ghost");
  doneBtn.addEventListener("click", async () => {
    try {
      await api("POST", `/api/lessons/themes/${id}/complete`);
      doneBtn.textContent = "Completed ✓";
      doneBtn.classList.add("ghost");
      toast("Lesson completed");
    } catch (e) { toast(e.message, "error"); }
  });
  const nav = h("nav", { class: "lesson-nav", "aria-label": "Lessons" },
    theme.previous_theme_id ? h("a", { href: `/lessons/${theme.previous_theme_id}`, rel: "prev" }, "← Previous") : h("span"),
    doneBtn,
    theme.next_theme_id ? h("a", { href: `/lessons/${theme.next_theme_id}`, rel: "next", class: "button" }, "Next →") : h("span"));
  const left = h("article", { class: "lesson" },
    h("p", { class: "crumbs" }, h("a", { href: `/#module-${theme.module_id}` }, mod ? mod.title : "Curriculum"), ` · ${theme.estimated_minutes} min`),
    body,
    lab ? h("p", { class: "lab-link" }, "Practise the whole module: ", h("a", { href: `/labs/${lab.id}` }, lab.title)) : null,
    nav);
  // The Markdown's own title is the page's heading.
  if (!body.querySelector("h1")) left.prepend(h("h1", null, theme.title));

  const termBox = h("div", { class: "term-box" });
  split(ctx, left, termBox);
  const panel = new TerminalPanel(termBox, { getSandbox: (say) => lessonSandbox(say), title: "Your sandbox" }).start();
  ctx.cleanup(() => panel.dispose());
}
