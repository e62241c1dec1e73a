// Exams: the list, and one exam: an attempt's questions (each choice
// question's options in the order that attempt shows them, which is the
// order answers use), a timer from the attempt's deadline, the sandbox made
// for the attempt when it has practical questions, and the results. The
// attempt in progress and its answers are server state: the page saves the
// answers as the learner gives them (a draft), so a reload, a new sign-in or
// another device resumes with them in place, and warns before leaving while
// a save has not completed.
import { api, serverOffset } from "../api.js";
import { h, append, clear, toast, fmtClock, rendered } from "../dom.js";
import { TerminalPanel } from "../terminal.js";
import { containerById, lessonSandbox, quotaChoices } from "../sandbox.js";
import { split } from "./lesson.js";

// How long the page waits after the last change before it saves the draft.
const DRAFT_DELAY = 800;

/** list draws every exam. */
export async function list(ctx) {
  ctx.title("Exams");
  const [exams, progress] = await Promise.all([api("GET", "/api/exams"), api("GET", "/api/progress").catch(() => null)]);
  const standing = new Map((progress ? progress.exams : []).map((p) => [p.exam_id, p]));
  clear(ctx.main,
    h("h1", null, "Exams"),
    h("p", { class: "muted" }, "Timed sets of questions; practical ones are checked in your sandbox."),
    exams.length ? h("ul", { class: "cards" }, exams.map((x) => h("li", { class: "card" },
      h("h2", null, h("a", { href: `/exams/${x.id}` }, x.title)),
      h("p", { class: "muted" }, `${x.question_count} questions · ${x.time_limit_minutes} min · pass at ${x.passing_score}%` +
        (x.max_attempts ? ` · ${x.max_attempts} attempts` : "") + (x.has_practical ? " · practical" : "")),
      examState(standing.get(x.id)),
      rendered(x.description_html, { first: true })))) : h("p", null, "No exams yet."));
}

// examState says where the learner stands in an exam: best score, attempts
// left, an attempt in progress.
function examState(p) {
  if (!p) return null;
  const parts = [];
  if (p.in_progress_attempt_id) parts.push("In progress");
  parts.push(p.best_score === null ? "Not attempted yet" : `Best ${p.best_score}%${p.passed ? " · passed" : ""}`);
  if (p.attempts_left !== null) parts.push(`${p.attempts_left} of ${p.max_attempts} attempts left`);
  return h("p", { class: "exam-state" + (p.passed ? " pass" : ""), dataset: { bestScore: p.best_score ?? "", attemptsLeft: p.attempts_left ?? "" } },
    parts.join(" · "));
}

/** render draws exam ctx.params[0]. */
export async function render(ctx) {
  const id = Number(ctx.params[0]);
  const exam = await api("GET", `/api/exams/${id}`);
  ctx.title(exam.title);
  let attempt = null, offset = 0, clock = null, panel = null, submitting = false, inputs = [];
  // The draft: dirty while a change is not saved yet, saving while a save runs.
  let dirty = false, saving = null, draftTimer = null;

  const timer = h("span", { class: "timer" });
  const status = h("div", { role: "status", "aria-live": "polite" });
  const startBtn = h("button", { type: "button" }, "Start the exam");
  const form = h("form", { class: "questions", hidden: true });
  const submitBtn = h("button", { type: "submit" }, "Submit answers");
  const notice = h("p", { class: "notice sandbox-notice", hidden: true });
  const list = h("ol");
  append(form, [h("div", { class: "lab-actions attempt-bar" }, submitBtn, timer), notice, list]);

  const left = h("article", { class: "exam" },
    h("h1", null, exam.title),
    h("p", { class: "muted" }, `${exam.questions.length} questions · ${exam.time_limit_minutes} minutes · pass at ${exam.passing_score}%` +
      (exam.max_attempts ? ` · at most ${exam.max_attempts} attempts` : "")),
    rendered(exam.description_html),
    h("div", { class: "lab-actions" }, startBtn), status, form);
  const termBox = h("div", { class: "term-box" }, h("div", { class: "term-placeholder" },
    h("p", null, "Start the exam to get its sandbox: a fresh one for each attempt, where the practical questions are checked.")));
  if (exam.has_practical) split(ctx, left, termBox, ["Questions", "Terminal"]);
  else clear(ctx.main, h("div", { class: "single" }, left));

  // questionItems draws an attempt's questions; option i of a choice
  // question is the attempt's option i, whatever the authored order.
  function questionItems(questions) {
    return questions.map((q, i) => {
      const name = `q${q.id}`;
      let control;
      if (q.kind === "single_choice" || q.kind === "multiple_choice") {
        const type = q.kind === "single_choice" ? "radio" : "checkbox";
        control = h("fieldset", null, h("legend", { class: "sr" }, "Options"), q.options.map((o, i) =>
          h("label", { class: "option" }, h("input", { type, name, value: String(i) }), " ", o)));
      } else if (q.kind === "short_text") {
        control = h("input", { type: "text", name, "aria-label": "Your answer", autocomplete: "off", autocapitalize: "off",
          spellcheck: "false", maxlength: 1000 });
      } else {
        control = h("p", { class: "muted" }, "Do this in this attempt's sandbox (the terminal): it is checked there when you submit.");
      }
      const result = h("div", { class: "q-result" });
      const li = h("li", { class: "question", dataset: { kind: q.kind } },
        h("div", { class: "q-head" }, h("span", { class: "badge" }, String(i + 1)), h("span", { class: "pts" }, `${q.points} pt · ${q.kind.replace("_", " ")}`)),
        rendered(q.prompt_html), control, result);
      return { q, li, result };
    });
  }

  function answers() {
    const out = [];
    for (const { q } of inputs) {
      const name = `q${q.id}`;
      if (q.kind === "single_choice") {
        const c = form.querySelector(`input[name="${name}"]:checked`);
        if (c) out.push({ question_id: q.id, choice: Number(c.value) });
      } else if (q.kind === "multiple_choice") {
        const cs = [...form.querySelectorAll(`input[name="${name}"]:checked`)].map((c) => Number(c.value));
        if (cs.length) out.push({ question_id: q.id, choices: cs });
      } else if (q.kind === "short_text") {
        const v = form.querySelector(`input[name="${name}"]`).value.trim();
        if (v) out.push({ question_id: q.id, text: v });
      }
    }
    return out;
  }

  function stopClock() { clearInterval(clock); clock = null; }
  function startClock(expiresAt) {
    stopClock();
    const end = Date.parse(expiresAt);
    const tick = () => {
      const left = (end - (Date.now() + offset)) / 1000;
      timer.textContent = `${fmtClock(left)} left`;
      timer.classList.toggle("urgent", left < 60);
      // Hand the answers in just before the deadline: after it the server
      // ends the attempt as expired and grades nothing.
      if (left <= 3 && !submitting) { stopClock(); toast("Time is up: submitting your answers"); submit(); }
    };
    tick();
    clock = setInterval(tick, 1000);
  }

  // openTerminal opens the attempt's own sandbox; an attempt begun before
  // attempts had one is checked in the learner's sandbox of the template.
  function openTerminal(a) {
    if (!exam.has_practical || panel) return;
    const getSandbox = a.container_id ? (say) => containerById(a.container_id, say) : (say) => lessonSandbox(say, exam.template_id);
    panel = new TerminalPanel(termBox, { getSandbox, title: a.container_id ? "This attempt's sandbox" : "Your sandbox", share: false }).start();
  }

  // begin shows attempt a (from a start, or read back by its id) to work on.
  function begin(a, res) {
    attempt = a;
    if (res) { const o = serverOffset(res); offset = Math.abs(o) > 2000 ? o : 0; }
    inputs = questionItems(a.questions);
    clear(list, inputs.map((x) => x.li));
    restore(a.draft_answers || []);
    dirty = false;
    notice.hidden = !a.sandbox_notice;
    notice.textContent = a.sandbox_notice || "";
    startBtn.hidden = true;
    form.hidden = false;
    submitBtn.hidden = false;
    submitting = false;
    clear(status);
    startClock(a.expires_at);
    openTerminal(a);
  }

  // resume carries on with attempt attemptID, if it is still in progress.
  async function resume(attemptID) {
    const { data, res } = await api("GET", `/api/exams/attempts/${attemptID}`, { full: true });
    if (data.exam_id !== id || data.status !== "in_progress") return false;
    begin(data, res);
    return true;
  }

  // restore puts saved answers back in place.
  function restore(saved) {
    for (const an of saved) {
      const name = `q${an.question_id}`;
      if (an.choice !== undefined) {
        const c = form.querySelector(`input[name="${name}"][value="${an.choice}"]`);
        if (c) c.checked = true;
      }
      for (const v of an.choices || []) {
        const c = form.querySelector(`input[name="${name}"][value="${v}"]`);
        if (c) c.checked = true;
      }
      if (an.text !== undefined) {
        const t = form.querySelector(`input[name="${name}"]`);
        if (t) t.value = an.text;
      }
    }
  }

  // saveDraft sends the answers given so far; a change made meanwhile is
  // saved after it.
  async function saveDraft() {
    clearTimeout(draftTimer);
    if (!attempt || submitting || !dirty) return;
    if (saving) { await saving; return saveDraft(); }
    dirty = false;
    const at = attempt.id;
    saving = api("PUT", `/api/exams/attempts/${at}/draft`, { body: { answers: answers() } })
      .then(() => { form.dataset.draftSaved = "true"; })
      .catch((e) => {
        // A 409 means the attempt ended: nothing more to save.
        if (e.status !== 409 && e.status !== 404) { dirty = true; draftTimer = setTimeout(saveDraft, 5000); }
      })
      .finally(() => { saving = null; });
    await saving;
  }
  const changed = () => {
    if (!attempt || submitting) return;
    dirty = true;
    delete form.dataset.draftSaved;
    clearTimeout(draftTimer);
    draftTimer = setTimeout(saveDraft, DRAFT_DELAY);
  };
  form.addEventListener("input", changed);
  form.addEventListener("change", changed);
  // Leaving while an answer is not saved yet loses it: say so.
  const beforeUnload = (e) => {
    if (attempt && !submitting && attempt.status === "in_progress" && (dirty || saving)) { e.preventDefault(); e.returnValue = ""; }
  };
  window.addEventListener("beforeunload", beforeUnload);

  async function submit() {
    if (submitting) return;
    submitting = true;
    submitBtn.disabled = true;
    try {
      const body = { answers: answers() };
      if (panel && panel.container) body.container_id = panel.container.id;
      clearTimeout(draftTimer);
      const r = await api("POST", `/api/exams/${id}/submit`, { body });
      dirty = false;
      attempt = r;
      showResults(r);
    } catch (e) {
      clear(status, h("p", { class: "error" }, e.message));
      submitting = false;
    } finally { submitBtn.disabled = false; }
  }

  function showResults(r) {
    stopClock();
    timer.textContent = "";
    submitBtn.hidden = true;
    form.querySelectorAll("input").forEach((i) => { i.disabled = true; });
    const byQ = new Map(r.questions.map((x) => [x.question_id, x]));
    for (const { q, li, result } of inputs) {
      const x = byQ.get(q.id);
      if (!x) continue;
      li.dataset.state = x.correct ? "pass" : "fail";
      clear(result, h("p", { class: x.correct ? "pass" : "fail" }, x.correct ? `✓ Right (${x.points}/${x.max_points})` : `✗ Not right (${x.points}/${x.max_points})`),
        x.explanation_html ? rendered(x.explanation_html, { cls: "prose muted" }) : null,
        x.feedback.length ? h("ul", { class: "feedback" }, x.feedback.map((f) => h("li", null, f))) : null);
    }
    clear(status, h("p", { class: "score " + (r.passed ? "pass" : "fail") },
      r.status === "expired" ? `Time ran out before the answers arrived: graded from your saved answers, ${r.score}% (${r.points}/${r.max_points}), ${r.passed ? "passed" : "not passed"}.` :
        `Your score: ${r.score}% (${r.points}/${r.max_points}), ${r.passed ? "passed" : "not passed"}.`));
    startBtn.hidden = false;
    startBtn.textContent = "Try again";
    status.scrollIntoView({ block: "nearest" });
  }

  form.addEventListener("submit", (e) => {
    e.preventDefault();
    if (confirm("Submit your answers? Each attempt is graded once.")) submit();
  });

  const start = async () => {
    startBtn.disabled = true;
    if (exam.has_practical) clear(status, h("p", null, "Preparing a fresh sandbox for this attempt…"));
    try {
      const { data, res } = await api("POST", `/api/exams/${id}/start`, { full: true });
      // A new attempt has a new sandbox (the last attempt's is gone).
      if (panel) { panel.dispose(); panel = null; }
      begin(data, res);
      form.querySelector("input")?.focus();
    } catch (e) {
      const other = e.body && e.body.attempt_id;
      if (e.status === 409 && other) {
        await resume(other);
        toast("You already had this exam open: carrying on");
      } else if (e.status === 409 && /quota/i.test(e.message)) {
        // No room for the attempt's sandbox: offer the one click that frees it.
        clear(status, h("p", { class: "error" }, e.message), await quotaChoices(start));
      } else {
        clear(status, h("p", { class: "error" }, e.message,
          e.status === 409 && /sandbox/i.test(e.message) ? [" ", h("a", { href: "/dashboard#sandboxes" }, "Manage your sandboxes")] : null));
      }
    } finally { startBtn.disabled = false; }
  };
  startBtn.addEventListener("click", start);

  ctx.cleanup(() => {
    stopClock();
    saveDraft();
    window.removeEventListener("beforeunload", beforeUnload);
    if (panel) panel.dispose();
  });
  // The attempt in progress, wherever it was started.
  const progress = await api("GET", "/api/progress").catch(() => null);
  const mine = progress && progress.exams.find((p) => p.exam_id === id);
  if (mine && mine.in_progress_attempt_id) await resume(mine.in_progress_attempt_id).catch(() => false);
}
