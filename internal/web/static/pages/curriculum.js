// The curriculum: modules in order, each with its lessons, the learner's
// progress and its laboratory, passed or not with the learner's best score
// (GET /api/progress: server state, the same in every tab and device).
import { api } from "../api.js";
import { h, clear, progressBar } from "../dom.js";

/** render draws the curriculum. */
export async function render(ctx) {
  ctx.title("Learn");
  const [modules, labs, progress] = await Promise.all([api("GET", "/api/lessons/modules"), api("GET", "/api/laboratories").catch(() => []),
    api("GET", "/api/progress").catch(() => null)]);
  const labOf = new Map(labs.map((l) => [l.module_id, l]));
  const standing = new Map((progress ? progress.laboratories : []).map((p) => [p.laboratory_id, p]));
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
        h("h2", null, h("span", { class: "num" }, String(i + 1).padStart(2, "0")), m.published ? null : h("span", { class: "tag draft" }, "Draft"), m.title),
        h("span", { class: "count" }, `${m.progress.completed}/${m.progress.total}`)),
      m.description ? h("p", { class: "muted" }, m.description) : null,
      progressBar(m.progress.completed, m.progress.total, `${m.title}: lessons completed`),
      h("ol", { class: "themes" }, m.themes.map((t) =>
        h("li", { class: t.completed ? "done" : "" },
          h("a", { href: `/lessons/${t.id}` }, h("span", { class: "check", "aria-hidden": "true" }, t.completed ? "✓" : "○"),
            t.published ? null : h("span", { class: "tag draft" }, "Draft"), t.title,
            t.completed ? h("span", { class: "sr" }, " (completed)") : null),
          h("span", { class: "mins" }, `${t.estimated_minutes} min`)))),
      lab ? h("p", { class: "lab-link" }, h("a", { href: `/labs/${lab.id}` }, h("span", { class: "tag" }, "Laboratory"), " ", lab.title),
        h("span", { class: "mins" }, `${lab.tasks.length} tasks · ${lab.time_limit_minutes} min`), labState(standing.get(lab.id))) : null);
  }));
  clear(ctx.main, head, list);
}

// labState says where the learner stands in a laboratory: passed (with the
// best score), in progress, tried and not passed, or not started.
function labState(p) {
  if (!p || !p.attempts) return h("span", { class: "lab-state", dataset: { state: "new" } }, "Not started");
  if (p.passed) return h("span", { class: "lab-state pass", dataset: { state: "passed" } }, `✓ Passed · best ${p.best_score}%`);
  if (p.latest && p.latest.status === "in_progress") return h("span", { class: "lab-state", dataset: { state: "in_progress" } }, "In progress");
  return h("span", { class: "lab-state fail", dataset: { state: "not_passed" } },
    p.best_score === null ? "Not passed" : `Not passed · best ${p.best_score}%`);
}
