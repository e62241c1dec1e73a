// A laboratory: its tasks, a Check button with per-task results and their
// FAIL: reasons, a Submit button, the time left, and the attempt's sandbox
// in a terminal. The learner's latest attempt comes from the server
// (GET /api/progress), so a new tab, a reload or a new sign-in finds it:
// in progress it resumes with its terminal, ended it shows its results.
import { api, serverOffset } from "../api.js";
import { h, clear, toast, fmtClock, rendered } from "../dom.js";
import { TerminalPanel } from "../terminal.js";
import { containerById, quotaChoices } from "../sandbox.js";
import { split } from "./lesson.js";
import { previewControl } from "../preview.js";

const sandboxRemoved = "This attempt's sandbox was removed when it ended, so it no longer counts against your sandbox quota. " +
  "Start the laboratory again for a fresh one.";

/** render draws laboratory ctx.params[0]. */
export async function render(ctx) {
  const id = Number(ctx.params[0]);
  const lab = await api("GET", `/api/laboratories/${id}`);
  ctx.title(lab.title);

  let attempt = null, offset = 0, panel = null, clock = null, best = null;
  const progress = await api("GET", "/api/progress").catch(() => null);
  const mine = progress && progress.laboratories.find((l) => l.laboratory_id === id);
  if (mine) best = mine.best_score;
  if (mine && mine.latest) attempt = await api("GET", `/api/laboratories/attempts/${mine.latest.id}/results`).catch(() => null);

  const status = h("div", { class: "lab-status", role: "status", "aria-live": "polite" });
  const timer = h("span", { class: "timer", "aria-live": "off" });
  const startBtn = h("button", { type: "button" }, "Start the laboratory");
  const checkLabel = "Check my work";
  const checkBtn = h("button", { type: "button", class: "secondary", "data-focus-after-terminal": "" }, checkLabel);
  const submitBtn = h("button", { type: "button", class: "ghost" }, "Submit");
  const taskItems = lab.tasks.map((t, i) => {
    const result = h("div", { class: "task-result", "aria-live": "polite" });
    const li = h("li", { class: "task", dataset: { taskId: t.id } },
      h("h3", null, h("span", { class: "badge", "aria-hidden": "true" }, String(i + 1)), t.title, h("span", { class: "pts" }, `${t.points} pt`)),
      t.machine ? h("p", { class: "muted machine-of-task" }, `Checked on the machine ${t.machine}`) : null,
      rendered(t.description_html),
      t.hint_html ? h("details", null, h("summary", null, "Hint"), rendered(t.hint_html)) : null,
      result);
    return { t, li, result };
  });
  const actions = h("div", { class: "lab-actions attempt-bar" }, startBtn, checkBtn, submitBtn, timer);
  const left = h("article", { class: "lab" },
    h("h1", null, lab.title),
    h("p", { class: "muted" }, `${lab.tasks.length} tasks · ${lab.time_limit_minutes} minutes · pass at ${lab.passing_score}%`),
    rendered(lab.description_html),
    actions, status,
    h("ol", { class: "tasks" }, taskItems.map((x) => x.li)));
  const termBox = h("div", { class: "term-box" }, h("div", { class: "term-placeholder" },
    h("p", null, lab.machines.length
      ? `Start the laboratory to get its machines (${lab.machines.map((m) => m.name).join(", ")}): the setup prepares them for the tasks.`
      : "Start the laboratory to get its sandbox: the setup prepares it for the tasks.")));
  // A lab of several machines: one terminal at a time, picked by its tab.
  const tabs = h("div", { class: "machine-tabs", role: "tablist", "aria-label": "Machines", hidden: true });
  let machine = 0;
  const termArea = h("div", { class: "term-area" }, tabs, termBox);
  const layout = split(ctx, left, termArea, ["Tasks", "Terminal"]);

  function showResults(a) {
    const byTask = new Map((a.tasks || []).map((r) => [r.task_id, r]));
    for (const { t, li, result } of taskItems) {
      const r = byTask.get(t.id);
      li.dataset.state = r ? (r.passed ? "pass" : "fail") : "";
      clear(result, r ? [
        h("p", { class: r.passed ? "pass" : "fail" }, r.passed ? "✓ Passed" : "✗ Not yet"),
        r.feedback.length ? h("ul", { class: "feedback" }, r.feedback.map((f) => h("li", null, f))) : null,
      ] : null);
    }
    const open = a.status === "in_progress";
    startBtn.hidden = open;
    if (!open) startBtn.textContent = "Start again";
    checkBtn.hidden = submitBtn.hidden = !open;
    if (!open) {
      stopClock();
      if (a.status !== "expired") best = Math.max(best ?? 0, a.score);
      clear(status, h("p", { class: a.passed ? "pass" : "fail" },
        a.status === "expired" ? "Time ran out: this attempt has ended." : `Submitted: ${a.score}% (${a.points}/${a.max_points} points), ${a.passed ? "passed" : "not passed"}.`),
        best !== null ? h("p", { class: "muted best-score" }, `Your best score: ${best}%`) : null,
        a.sandbox_removed_at ? h("p", { class: "muted" }, sandboxRemoved) : null,
        a.recording_id ? h("p", { class: "replay-link" }, h("a", { href: `/recordings/${a.recording_id}` }, "Replay this attempt's terminal session")) : null);
      if (a.sandbox_removed_at) closeTerminal();
    } else if (a.last_check_at) {
      const passed = (a.tasks || []).filter((r) => r.passed).length;
      clear(status, h("p", null, `Last check: ${passed} of ${lab.tasks.length} tasks pass.`));
    } else clear(status);
  }

  function stopClock() { clearInterval(clock); clock = null; timer.textContent = ""; }
  function startClock(a) {
    stopClock();
    const end = Date.parse(a.expires_at);
    const tick = () => {
      const left = (end - (Date.now() + offset)) / 1000;
      timer.textContent = `${fmtClock(left)} left`;
      timer.classList.toggle("urgent", left < 120);
      if (left <= 0) { stopClock(); timer.textContent = "Time is up"; }
    };
    tick();
    clock = setInterval(tick, 1000);
  }

  // The attempt ended and the server removed its sandbox: the terminal has
  // nothing left to show.
  function closeTerminal() {
    if (panel) { panel.dispose(); panel = null; }
    tabs.hidden = true;
    clear(termBox, h("div", { class: "term-placeholder" }, h("p", null, sandboxRemoved)));
  }

  function drawTabs(a) {
    const ms = a.machines || [];
    tabs.hidden = ms.length === 0;
    clear(tabs, ms.map((m, i) => {
      const b = h("button", { type: "button", role: "tab", class: "machine-tab", "aria-selected": String(i === machine) }, m.name);
      b.addEventListener("click", () => {
        if (i === machine) return;
        machine = i;
        if (panel) { panel.dispose(); panel = null; }
        openTerminal(a);
        panel && panel.focus();
      });
      return b;
    }));
  }

  function openTerminal(a) {
    drawTabs(a);
    const m = (a.machines || [])[machine];
    const cid = m ? m.container_id : a.container_id;
    if (panel || !cid) return;
    panel = new TerminalPanel(termBox, { getSandbox: (say) => containerById(cid, say), title: m ? `Machine ${m.name}` : "Laboratory sandbox" });
    panel.root.append(previewControl(panel));
    panel.start();
  }

  function adopt(a, res) {
    attempt = a;
    if (res) { const o = serverOffset(res); offset = Math.abs(o) > 2000 ? o : 0; }
    showResults(a);
    if (a.status === "in_progress") { startClock(a); openTerminal(a); }
  }

  const start = async () => {
    startBtn.disabled = true;
    clear(status, h("p", null, "Preparing your sandbox: creating it and running the laboratory's setup…"));
    try {
      const { data, res } = await api("POST", `/api/laboratories/${id}/start`, { full: true });
      if (panel) { panel.dispose(); panel = null; }
      adopt(data, res);
      layout.show(1);
      panel && panel.focus();
    } catch (e) {
      const other = e.body && e.body.attempt_id;
      if (e.status === 409 && other) {
        const { data, res } = await api("GET", `/api/laboratories/attempts/${other}/results`, { full: true });
        adopt(data, res);
        toast("You already had this laboratory open: carrying on");
      } else if (e.status === 409 && /quota/i.test(e.message)) {
        // The quota is full: offer the one click that frees a place.
        clear(status, h("p", { class: "error" }, e.message), await quotaChoices(start));
      } else {
        clear(status, h("p", { class: "error" }, e.message,
          e.status === 409 ? [" ", h("a", { href: "/dashboard#sandboxes" }, "Manage your sandboxes")] : null));
      }
    } finally { startBtn.disabled = false; }
  };
  startBtn.addEventListener("click", start);

  // A check asked for too soon (the server allows one per attempt every few
  // seconds, counted from the end of the last) is not refused to the
  // learner: the button counts down, disabled, "Check (4 s)", and the check
  // runs when it reaches zero.
  let retryTimer;
  const countdown = (wait) => new Promise((done) => {
    clearInterval(retryTimer);
    const tick = () => {
      if (wait <= 0) { clearInterval(retryTimer); checkBtn.textContent = checkLabel; done(); return; }
      checkBtn.textContent = `Check (${wait} s)`;
      wait--;
    };
    tick();
    retryTimer = setInterval(tick, 1000);
  });
  const check = async () => {
    checkBtn.disabled = true;
    clear(status, h("p", null, "Checking every task in your sandbox…"));
    try {
      adopt(await api("POST", `/api/laboratories/${id}/check`));
      checkBtn.disabled = false;
    } catch (e) {
      if (e.status === 429) {
        const wait = Math.max(1, Number(e.res.headers.get("Retry-After")) || 5);
        clear(status, h("p", null, `One check at a time, a few seconds apart: this one runs in ${wait} s`));
        await countdown(wait);
        check();
      } else {
        clear(status, h("p", { class: "error" }, e.message));
        checkBtn.disabled = false;
      }
    }
  };
  checkBtn.addEventListener("click", check);

  submitBtn.addEventListener("click", async () => {
    if (!confirm("Submit the laboratory? Every task is checked once more and the attempt ends.")) return;
    submitBtn.disabled = true;
    try {
      adopt(await api("POST", `/api/laboratories/${id}/submit`));
    } catch (e) { clear(status, h("p", { class: "error" }, e.message)); } finally { submitBtn.disabled = false; }
  });

  ctx.cleanup(() => { stopClock(); clearInterval(retryTimer); if (panel) panel.dispose(); });
  if (attempt) adopt(attempt);
  else { checkBtn.hidden = submitBtn.hidden = true; }
}
