// Exams: the list, and one exam with its questions, a timer from the
// attempt's deadline, a sandbox for practical questions, and the results.
import { api, serverOffset } from "../api.js";
import { h, append, clear, toast, fmtClock } from "../dom.js";
import { markdown } from "../md.js";
import { TerminalPanel } from "../terminal.js";
import { lessonSandbox } from "../sandbox.js";
import { split } from "./lesson.js";

const key = (id) => `tuxlab.exam.${id}`;

/** list draws every exam. */
export async function list(ctx) {
  ctx.title("Exams");
  const exams = await api("GET", "/api/exams");
  clear(ctx.main,
    h("h1", null, "Exams"),
    h("p", { class: "muted" }, "Timed sets of questions; practical ones are checked in your sandbox."),
    exams.length ? h("ul", { class: "cards" }, exams.map((x) => h("li", { class: "card" },
      h("h2", null, h("a", { href: `/exams/${x.id}` }, x.title)),
      h("p", { class: "muted" }, `${x.question_count} questions · ${x.time_limit_minutes} min · pass at ${x.passing_score}%` +
        (x.max_attempts ? ` · ${x.max_attempts} attempts` : "") + (x.has_practical ? " · practical" : "")),
      h("div", { class: "prose" }, markdown(x.description.split(/\n\s*\n/)[0]))))) : h("p", null, "No exams yet."));
}

/** render draws exam ctx.params[0]. */
export async function render(ctx) {
  const id = Number(ctx.params[0]);
  const exam = await api("GET", `/api/exams/${id}`);
  ctx.title(exam.title);
  let attempt = null, offset = 0, clock = null, panel = null, submitting = false;

  const timer = h("span", { class: "timer" });
  const status = h("div", { role: "status", "aria-live": "polite" });
  const startBtn = h("button", { type: "button" }, "Start the exam");
  const form = h("form", { class: "questions", hidden: true });
  const submitBtn = h("button", { type: "submit" }, "Submit answers");
  const inputs = exam.questions.map((q, i) => {
    const name = `q${q.id}`;
    let control;
    if (q.kind === "single_choice" || q.kind === "multiple_choice") {
      const type = q.kind === "single_choice" ? "radio" : "checkbox";
      control = h("fieldset", null, h("legend", { class: "sr" }, "Options"), q.options.map((o, i) =>
        h("label", { class: "option" }, h("input", { type, name, value: String(i) }), " ", o)));
    } else if (q.kind === "short_text") {
      control = h("input", { type: "text", name, "aria-label": "Your answer", autocomplete: "off", maxlength: 1000 });
    } else {
      control = h("p", { class: "muted" }, "Do this in your sandbox (the terminal): it is checked when you submit.");
    }
    const result = h("div", { class: "q-result" });
    const li = h("li", { class: "question", dataset: { kind: q.kind } },
      h("div", { class: "q-head" }, h("span", { class: "badge" }, String(i + 1)), h("span", { class: "pts" }, `${q.points} pt · ${q.kind.replace("_", " ")}`)),
      h("div", { class: "prose" }, markdown(q.prompt)), control, result);
    return { q, li, result };
  });
  append(form, [h("div", { class: "lab-actions attempt-bar" }, submitBtn, timer), h("ol", null, inputs.map((x) => x.li))]);

  const left = h("article", { class: "exam" },
    h("h1", null, exam.title),
    h("p", { class: "muted" }, `${exam.questions.length} questions · ${exam.time_limit_minutes} minutes · pass at ${exam.passing_score}%` +
      (exam.max_attempts ? ` · at most ${exam.max_attempts} attempts` : "")),
    h("div", { class: "prose" }, markdown(exam.description)),
    h("div", { class: "lab-actions" }, startBtn), status, form);
  const termBox = h("div", { class: "term-box" });
  if (exam.has_practical) split(ctx, left, termBox, ["Questions", "Terminal"]);
  else clear(ctx.main, h("div", { class: "single" }, left));

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

  function begin(a, res) {
    attempt = a;
    if (res) { const o = serverOffset(res); offset = Math.abs(o) > 2000 ? o : 0; }
    sessionStorage.setItem(key(id), JSON.stringify({ id: a.id, expires_at: a.expires_at }));
    startBtn.hidden = true;
    form.hidden = false;
    clear(status);
    if (a.expires_at) startClock(a.expires_at);
    else timer.textContent = "An attempt of yours is open: the time limit runs from its start";
    if (exam.has_practical && !panel) {
      panel = new TerminalPanel(termBox, { getSandbox: (say) => lessonSandbox(say, exam.template_id), title: "Your sandbox" }).start();
    }
  }

  async function submit() {
    if (submitting) return;
    submitting = true;
    submitBtn.disabled = true;
    try {
      const body = { answers: answers() };
      if (panel && panel.container) body.container_id = panel.container.id;
      const r = await api("POST", `/api/exams/${id}/submit`, { body });
      showResults(r);
    } catch (e) {
      clear(status, h("p", { class: "error" }, e.message));
      submitting = false;
    } finally { submitBtn.disabled = false; }
  }

  function showResults(r) {
    stopClock();
    sessionStorage.removeItem(key(id));
    timer.textContent = "";
    submitBtn.hidden = true;
    form.querySelectorAll("input").forEach((i) => { i.disabled = true; });
    const byQ = new Map(r.questions.map((x) => [x.question_id, x]));
    for (const { q, li, result } of inputs) {
      const x = byQ.get(q.id);
      if (!x) continue;
      li.dataset.state = x.correct ? "pass" : "fail";
      clear(result, h("p", { class: x.correct ? "pass" : "fail" }, x.correct ? `✓ Right (${x.points}/${x.max_points})` : `✗ Not right (${x.points}/${x.max_points})`),
        x.explanation ? h("div", { class: "prose muted" }, markdown(x.explanation)) : null,
        x.feedback.length ? h("ul", { class: "feedback" }, x.feedback.map((f) => h("li", null, f))) : null);
    }
    clear(status, h("p", { class: "score " + (r.passed ? "pass" : "fail") },
      r.status === "expired" ? "Time ran out before the answers arrived: the attempt ended with 0%." :
        `Your score: ${r.score}% (${r.points}/${r.max_points}), ${r.passed ? "passed" : "not passed"}.`));
    startBtn.hidden = false;
    startBtn.textContent = "Try again";
    status.scrollIntoView({ block: "nearest" });
  }

  form.addEventListener("submit", (e) => {
    e.preventDefault();
    if (confirm("Submit your answers? Each attempt is graded once.")) submit();
  });

  startBtn.addEventListener("click", async () => {
    startBtn.disabled = true;
    try {
      const { data, res } = await api("POST", `/api/exams/${id}/start`, { full: true });
      form.reset();
      inputs.forEach(({ li, result }) => { li.dataset.state = ""; clear(result); });
      form.querySelectorAll("input").forEach((i) => { i.disabled = false; });
      submitBtn.hidden = false;
      submitting = false;
      begin(data, res);
      form.querySelector("input")?.focus();
    } catch (e) {
      const other = e.body && e.body.attempt_id;
      if (e.status === 409 && other) {
        const saved = JSON.parse(sessionStorage.getItem(key(id)) || "null");
        begin(saved && saved.id === other ? saved : { id: other, expires_at: e.body.expires_at });
      } else clear(status, h("p", { class: "error" }, e.message));
    } finally { startBtn.disabled = false; }
  });

  ctx.cleanup(() => { stopClock(); if (panel) panel.dispose(); });
  const saved = JSON.parse(sessionStorage.getItem(key(id)) || "null");
  if (saved) begin(saved);
}
