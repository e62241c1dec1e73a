// The curriculum: modules in order, each with its lessons, the learner's
// progress and its laboratory.
import { api } from "../api.js";
import { h, clear, progressBar } from "../dom.js";

/** render draws the curriculum. */
export async function render(ctx) {
  ctx.title("Learn");
  const [modules, labs] = await Promise.all([api("GET", "/api/lessons/modules"), api("GET", "/api/laboratories").catch(() => [])]);
  const labOf = new Map(labs.map((l) => [l.module_id, l]));
  let done = 0, total = 0, next = null;
  for (const m of modules) {
    done += m.progress.completed;
    total += m.progress.total;
    for (const t of m.themes) if (!t.completed && !next) next = t;
  }
  const head = h("section", { class: "hero" },
    h("div", null,
      h("h1", null, `Welcome, ${ctx.me.username}`),
      h("p", { class: "muted" }, total ? `${done} of ${total} lessons done. Each lesson opens beside a Linux shell of your own.` : "No lessons yet: an admin imports the curriculum."),
      total ? progressBar(done, total, "Lessons completed") : null),
    next ? h("a", { class: "button", href: `/lessons/${next.id}` }, done ? "Continue: " : "Start: ", next.title) : null);
  const list = h("ol", { class: "modules" }, modules.map((m, i) => {
    const lab = labOf.get(m.id);
    return h("li", { class: "module card", id: `module-${m.id}` },
      h("div", { class: "module-head" },
        h("h2", null, h("span", { class: "num" }, String(i + 1).padStart(2, "0")), m.title),
        h("span", { class: "count" }, `${m.progress.completed}/${m.progress.total}`)),
      m.description ? h("p", { class: "muted" }, m.description) : null,
      progressBar(m.progress.completed, m.progress.total, `${m.title}: lessons completed`),
      h("ol", { class: "themes" }, m.themes.map((t) =>
        h("li", { class: t.completed ? "done" : "" },
          h("a", { href: `/lessons/${t.id}` }, h("span", { class: "check", "aria-hidden": "true" }, t.completed ? "✓" : "○"), t.title,
            t.completed ? h("span", { class: "sr" }, " (completed)") : null),
          h("span", { class: "mins" }, `${t.estimated_minutes} min`)))),
      lab ? h("p", { class: "lab-link" }, h("a", { href: `/labs/${lab.id}` }, h("span", { class: "tag" }, "Laboratory"), " ", lab.title), h("span", { class: "mins" }, `${lab.tasks.length} tasks · ${lab.time_limit_minutes} min`)) : null);
  }));
  clear(ctx.main, head, list);
}
