// The learner's dashboard: progress, streaks, labs, exams, activity.
import { api } from "../api.js";
import { h, clear, toast, fmtDate, progressBar } from "../dom.js";
import { assignmentsCard } from "./classes.js";

const KINDS = {
  theme_completed: "Lesson completed", sandbox_created: "Sandbox created", lab_started: "Laboratory started",
  lab_checked: "Laboratory checked", lab_submitted: "Laboratory submitted", exam_started: "Exam started",
  exam_submitted: "Exam submitted", profile_updated: "Profile updated", password_changed: "Password changed", avatar_changed: "Avatar changed",
};
const days = (n) => `${n} ${n === 1 ? "day" : "days"}`;
const duration = (min) => (min < 60 ? `${min} min` : `${Math.floor(min / 60)} h ${String(min % 60).padStart(2, "0")}`);

/** render draws the dashboard. */
export async function render(ctx) {
  ctx.title("Dashboard");
  const tz = Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
  // Days and streaks are counted in the learner's zone; a zone the server
  // does not know (422) falls back to UTC.
  const inZone = (path, query) => api("GET", path, { query: { ...query, tz } }).catch((e) => {
    if (e.status === 422) return api("GET", path, { query });
    throw e;
  });
  const [stats, analytics, activity, assignments] = await Promise.all([
    inZone("/api/dashboard/stats", {}),
    inZone("/api/dashboard/analytics", { days: 30 }),
    api("GET", "/api/dashboard/activity", { query: { page_size: 10 } }),
    // The classes' assignments and the field to join one (docs/classes.md).
    assignmentsCard(() => ctx.go("/dashboard", { replace: true })),
  ]);
  const sandboxes = h("section", { class: "card", id: "sandboxes" }, h("h2", null, "Your sandboxes"), h("p", { class: "loading" }, "Loading…"));
  drawSandboxes(sandboxes);
  const tile = (label, value, sub) => h("div", { class: "tile" }, h("span", { class: "tile-label" }, label), h("strong", null, value), sub ? h("span", { class: "muted" }, sub) : null);
  const perDay = analytics.days;
  const max = Math.max(1, ...perDay.map((d) => d.events));
  const total = perDay.reduce((n, d) => n + d.events, 0);
  const chart = h("div", { class: "chart", role: "img", "aria-label": `${total} things done over the last ${perDay.length} days` },
    perDay.map((d) => h("span", { title: `${d.date}: ${d.events}`, style: { height: `${Math.max(3, Math.round((100 * d.events) / max))}%` }, class: d.events ? "" : "zero" })));
  clear(ctx.main,
    h("h1", null, "Your dashboard"),
    h("div", { class: "tiles" },
      tile("Lessons", `${stats.themes.completed}/${stats.themes.total}`, `${stats.themes.percent}%`),
      tile("Streak", days(stats.streak.current), `longest ${days(stats.streak.longest)}`),
      tile("Laboratories passed", `${stats.labs.passed}`, `${stats.labs.attempted} attempted`),
      tile("Exams passed", `${stats.exams.passed}`, `${stats.exams.attempted} attempted`),
      tile("Time spent", duration(analytics.minutes_total), `${duration(analytics.minutes_in_window)} in 30 days (estimated)`),
      tile("Sandboxes running", `${stats.sandboxes_running}`, stats.last_active_at ? `last active ${fmtDate(stats.last_active_at)}` : "")),
    assignments,
    h("section", { class: "card" }, h("h2", null, "Last 30 days"), chart),
    h("div", { class: "columns" },
      h("section", { class: "card" }, h("h2", null, "Modules"),
        h("ul", { class: "plain" }, stats.modules.map((m) => h("li", null,
          h("div", { class: "row" }, h("span", null, m.title), h("span", { class: "muted" }, `${m.completed}/${m.total}`)),
          progressBar(m.completed, m.total, m.title))))),
      h("div", null, sandboxes, h("section", { class: "card" }, h("h2", null, "Recent activity"),
        activity.length ? h("ul", { class: "plain activity" }, activity.map((a) => h("li", null,
          h("span", null, h("span", { class: "muted" }, (KINDS[a.kind] || a.kind) + ": "), a.title, a.score !== null ? ` (${a.score}%)` : ""), h("span", { class: "muted nowrap" }, fmtDate(a.at))))) : h("p", { class: "muted" }, "Nothing yet: open a lesson."),
        stats.exams.best.length ? [h("h2", null, "Best exam scores"), h("ul", { class: "plain" }, stats.exams.best.map((x) => h("li", { class: "row" },
          h("a", { href: `/exams/${x.exam_id}` }, x.title), h("span", { class: x.passed ? "pass" : "muted" }, `${x.best_score}%`))))] : null))));
}

/** drawSandboxes lists the learner's sandboxes with start, stop and delete. */
async function drawSandboxes(box) {
  let list;
  try { list = await api("GET", "/api/containers/sandbox"); } catch (e) {
    clear(box, h("h2", null, "Your sandboxes"), h("p", { class: "error" }, e.message));
    return;
  }
  const act = (c, method, path, done, ask) => h("button", { type: "button", class: method === "DELETE" ? "small danger" : "small ghost", onclick: async () => {
    if (ask && !confirm(ask)) return;
    try { await api(method, path); toast(done); } catch (e) { toast(e.message, "error"); }
    drawSandboxes(box);
  } }, method === "DELETE" ? "Delete" : path.endsWith("/start") ? "Start" : "Stop");
  clear(box, h("h2", null, "Your sandboxes"),
    h("p", { class: "muted small" }, "Each has its own files. Stopped ones keep them; a deleted one is gone. Sandboxes stop by themselves when idle and are removed at their expiry."),
    list.length ? h("ul", { class: "plain sandboxes" }, list.map((c) => h("li", null,
      h("div", null,
        h("span", null, `${c.name} #${c.id}`), " ",
        h("span", { class: `status ${c.status}`, title: c.status_detail || null }, c.status),
        h("div", { class: "muted small" }, `created ${fmtDate(c.created_at)} · removed ${fmtDate(c.expires_at)}`)),
      h("div", { class: "actions" },
        c.status === "running" ? act(c, "POST", `/api/containers/${c.id}/stop`, "Sandbox stopped") : null,
        c.status === "stopped" ? act(c, "POST", `/api/containers/${c.id}/start`, "Sandbox started") : null,
        act(c, "DELETE", `/api/containers/${c.id}`, "Sandbox deleted", `Delete ${c.name} and every file in it?`))))) : h("p", { class: "muted" }, "None yet: a lesson creates one when it opens."),
    h("p", { class: "small" }, h("a", { href: "/recordings" }, "Your terminal recordings"), " (laboratory and exam attempts, and lessons' terminals you chose to record)"));
}
