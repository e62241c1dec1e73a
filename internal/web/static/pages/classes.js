// Classes (docs/classes.md): a learner joins one with its code and sees its
// assignments; an instructor creates classes, hands out the code, follows
// the learners (progress, labs, exams, activity; CSV export) and sets due
// dates on laboratories and exams.
import { api } from "../api.js";
import { h, clear, toast, fmtDate, progressBar } from "../dom.js";

const PAGE_SIZE = 25;
const teaches = (me) => me.role === "instructor" || me.role === "admin";

/** joinForm is the "Join a class" field, for the classes page and the
 * dashboard; joined runs with the class once the server took the code. */
export function joinForm(joined) {
  const err = h("p", { class: "error", role: "alert" });
  const input = h("input", { name: "code", id: "join-code", autocomplete: "off", spellcheck: "false", maxlength: 32, required: true, class: "code-input", placeholder: "e.g. K7MP-Q2XA" });
  const form = h("form", { class: "inline-form", "aria-label": "Join a class" },
    h("label", { for: "join-code" }, "Join code"), input, h("button", { type: "submit" }, "Join"));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    err.textContent = "";
    try {
      const c = await api("POST", "/api/classes/join", { body: { code: input.value } });
      toast(`You are in ${c.name}`);
      input.value = "";
      joined(c);
    } catch (x) { err.textContent = x.message; }
  });
  return h("div", null, form, err);
}

/** list draws the classes page: the classes one teaches (with the form to
 * create one) and those one joined (with the form to join one). */
export async function list(ctx) {
  ctx.title("Classes");
  const classes = await api("GET", "/api/classes");
  if (!ctx.current()) return;
  const taught = classes.filter((c) => c.role === "teacher");
  const joined = classes.filter((c) => c.role === "learner");
  const again = () => list(ctx);
  let teaching = null;
  if (teaches(ctx.me)) {
    const err = h("p", { class: "error", role: "alert" });
    const name = h("input", { name: "name", id: "class-name", maxlength: 100, required: true, class: "grow" });
    const create = h("form", { class: "inline-form", "aria-label": "New class" },
      h("label", { for: "class-name" }, "Name"), name, h("button", { type: "submit" }, "Create class"));
    create.addEventListener("submit", async (e) => {
      e.preventDefault();
      err.textContent = "";
      try {
        const c = await api("POST", "/api/classes", { body: { name: name.value } });
        toast(`Class created: its join code is ${c.join_code}`);
        ctx.go(`/classes/${c.id}`);
      } catch (x) { err.textContent = x.message; }
    });
    teaching = h("section", { class: "card" }, h("h2", null, "Classes you teach"), create, err,
      taught.length ? h("div", { class: "table-wrap" }, h("table", null,
        h("thead", null, h("tr", null, ["Class", "Join code", "Learners", "Created"].map((c) => h("th", { scope: "col" }, c)))),
        h("tbody", null, taught.map((c) => h("tr", null,
          h("td", null, h("a", { href: `/classes/${c.id}` }, c.name), ctx.me.role === "admin" && c.teacher !== ctx.me.username ? h("span", { class: "muted" }, ` (${c.teacher})`) : null),
          h("td", null, h("code", null, c.join_code)), h("td", null, String(c.learner_count)), h("td", null, fmtDate(c.created_at)))))))
        : h("p", { class: "muted" }, "None yet: create one, then give its join code to your learners."));
  }
  clear(ctx.main,
    h("h1", null, "Classes"),
    teaching,
    h("section", { class: "card" }, h("h2", null, "Classes you joined"),
      h("p", { class: "muted small" }, "Your teacher gives you a join code: type it here to see your class's assignments on your dashboard."),
      joinForm(again),
      joined.length ? h("ul", { class: "plain" }, joined.map((c) => h("li", { class: "row" },
        h("span", null, h("a", { href: `/classes/${c.id}` }, c.name), h("span", { class: "muted" }, ` · ${c.teacher}`)),
        leaveButton(c, again)))) : h("p", { class: "muted" }, "You are in no class.")));
}

function leaveButton(c, done) {
  return h("button", { type: "button", class: "small ghost", onclick: async () => {
    if (!confirm(`Leave ${c.name}? You can join again with its code.`)) return;
    try { await api("DELETE", `/api/classes/${c.id}/membership`); toast(`You left ${c.name}`); done(); } catch (e) { toast(e.message, "error"); }
  } }, `Leave ${c.name}`);
}

/** render draws one class: its teacher's view, or a learner's. */
export async function render(ctx) {
  const id = ctx.params[0];
  const c = await api("GET", `/api/classes/${id}`);
  if (!ctx.current()) return;
  ctx.title(c.name);
  const assignments = h("section", { class: "card" }, h("h2", null, "Assignments"));
  if (c.role !== "teacher") {
    clear(ctx.main, h("p", null, h("a", { href: "/classes" }, "← Classes")), h("h1", null, c.name),
      h("p", { class: "muted" }, `Taught by ${c.teacher}. `, leaveButton(c, () => ctx.go("/classes"))), assignments);
    await drawAssignments(assignments, c, false);
    return;
  }
  const code = h("code", { class: "join-code", id: "join-code-value" }, c.join_code);
  const rotate = h("button", { type: "button", class: "small ghost", onclick: async () => {
    if (!confirm("Make a new join code? The old one stops working.")) return;
    try { const n = await api("POST", `/api/classes/${id}/code`); code.textContent = n.join_code; toast("New join code made"); } catch (e) { toast(e.message, "error"); }
  } }, "New code");
  const remove = h("button", { type: "button", class: "small danger", onclick: async () => {
    if (!confirm(`Delete ${c.name}, its memberships and its assignments? The learners keep their own progress.`)) return;
    try { await api("DELETE", `/api/classes/${id}`); toast("Class deleted"); ctx.go("/classes"); } catch (e) { toast(e.message, "error"); }
  } }, "Delete class");
  const learners = h("section", { class: "card" }, h("h2", null, "Learners"));
  clear(ctx.main, h("p", null, h("a", { href: "/classes" }, "← Classes")), h("h1", null, c.name),
    h("section", { class: "card" }, h("h2", null, "Join code"),
      h("p", { class: "row" }, h("span", null, "Learners type ", code, " under Classes or on their dashboard."), h("span", { class: "actions" }, rotate, remove))),
    learners, assignments);
  await Promise.all([drawLearners(learners, c, { sort: "name", order: "asc", page: 1 }), drawAssignments(assignments, c, true)]);
}

/** drawLearners draws one page of the learners table with its sort and CSV link. */
async function drawLearners(box, c, state) {
  const { data: rows, res } = await api("GET", `/api/classes/${c.id}/learners`,
    { query: { sort: state.sort, order: state.order, page: state.page, page_size: PAGE_SIZE }, full: true });
  const total = Number(res.headers.get("X-Total-Count")) || rows.length;
  const pages = Math.max(1, Math.ceil(total / PAGE_SIZE));
  const again = (change) => drawLearners(box, c, { ...state, ...change }).catch((e) => toast(e.message, "error"));
  const sort = h("select", { id: "learners-sort", onchange: () => again({ sort: sort.value, page: 1 }) },
    [["name", "Name"], ["progress", "Progress"], ["last_active", "Last activity"]].map(([v, t]) => h("option", { value: v, selected: v === state.sort }, t)));
  const order = h("select", { id: "learners-order", onchange: () => again({ order: order.value, page: 1 }) },
    [["asc", "Ascending"], ["desc", "Descending"]].map(([v, t]) => h("option", { value: v, selected: v === state.order }, t)));
  const csv = `/api/classes/${c.id}/learners.csv?` + new URLSearchParams({ sort: state.sort, order: state.order });
  const finished = (as) => as.filter((a) => a.finished_at);
  const best = (as) => {
    const m = new Map();
    for (const a of finished(as)) {
      const key = a.lab_id ?? a.exam_id;
      const b = m.get(key) || { title: a.title, score: 0, passed: false, tasks: a.tasks };
      if (a.score >= b.score) Object.assign(b, { score: a.score, tasks: a.tasks });
      b.passed = b.passed || a.passed;
      m.set(key, b);
    }
    return [...m.values()];
  };
  const results = (items, withTasks) => items.length ? h("ul", { class: "plain small" }, items.map((b) => h("li", null,
    `${b.title}: `, h("span", { class: b.passed ? "pass" : null }, `${b.score}%`), b.passed ? " passed" : "",
    withTasks && b.tasks && b.tasks.length ? h("span", { class: "muted" }, ` (tasks ${b.tasks.filter((t) => t.passed).length}/${b.tasks.length})`) : null))) : h("span", { class: "muted" }, "none");
  clear(box, h("h2", null, `Learners (${total})`),
    h("div", { class: "inline-form" }, h("label", { for: "learners-sort" }, "Sort by"), sort, h("label", { for: "learners-order" }, "Order"), order,
      h("a", { href: csv, download: `class-${c.id}-learners.csv`, class: "button small ghost" }, "Download CSV")),
    rows.length ? h("div", { class: "table-wrap" }, h("table", { class: "learners" },
      h("thead", null, h("tr", null, ["Learner", "Progress", "Laboratories", "Exams", `Activity (${rows[0].activity.days} days)`, ""].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", null, rows.map((l) => h("tr", null,
        h("td", null, l.username, h("div", { class: "muted small" }, `joined ${fmtDate(l.joined_at)}`)),
        h("td", null, `${l.progress.completed}/${l.progress.total} (${l.progress.percent}%)`, progressBar(l.progress.completed, l.progress.total, `Progress of ${l.username}`),
          h("details", null, h("summary", { class: "small" }, "Per module"), h("ul", { class: "plain small" }, l.modules.map((m) => h("li", null, `${m.title}: ${m.completed}/${m.total}`))))),
        h("td", null, results(best(l.labs), true)),
        h("td", null, results(best(l.exams), false)),
        h("td", null, `${l.activity.events} things done`, h("div", { class: "muted small" }, l.activity.last_active_at ? `last ${fmtDate(l.activity.last_active_at)}` : "never active")),
        h("td", null, h("button", { type: "button", class: "small ghost", onclick: async () => {
          if (!confirm(`Remove ${l.username} from ${c.name}?`)) return;
          try { await api("DELETE", `/api/classes/${c.id}/learners/${l.user_id}`); toast(`${l.username} removed`); again({}); } catch (e) { toast(e.message, "error"); }
        }, "aria-label": `Remove ${l.username} from the class` }, "Remove"))))))) : h("p", { class: "muted" }, "Nobody has joined yet: give your learners the join code."),
    pages > 1 ? h("p", { class: "pager" },
      h("button", { type: "button", class: "small ghost", disabled: state.page <= 1, onclick: () => again({ page: state.page - 1 }) }, "← Previous"),
      ` Page ${state.page} of ${pages} `,
      h("button", { type: "button", class: "small ghost", disabled: state.page >= pages, onclick: () => again({ page: state.page + 1 }) }, "Next →")) : null);
}

/** localInput is a datetime-local value for a Date, in the reader's zone. */
function localInput(d) {
  const p = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}

/** drawAssignments lists a class's assignments; its teacher also sets and deletes them. */
async function drawAssignments(box, c, teacher) {
  const as = await api("GET", `/api/classes/${c.id}/assignments`);
  const again = () => drawAssignments(box, c, teacher).catch((e) => toast(e.message, "error"));
  const link = (a) => h("a", { href: a.kind === "lab" ? `/labs/${a.item_id}` : `/exams/${a.item_id}` }, a.title);
  const listing = as.length ? h("ul", { class: "plain" }, as.map((a) => h("li", { class: "row" },
    h("span", null, h("span", { class: "muted" }, a.kind === "lab" ? "Laboratory: " : "Exam: "), link(a)),
    h("span", { class: "nowrap" }, `due ${fmtDate(a.due_at)} `, teacher ? h("button", { type: "button", class: "small ghost", onclick: async () => {
      try { await api("DELETE", `/api/classes/${c.id}/assignments/${a.id}`); toast("Assignment deleted"); again(); } catch (e) { toast(e.message, "error"); }
    }, "aria-label": `Delete the assignment of ${a.title}` }, "Delete") : null)))) : h("p", { class: "muted" }, "No assignment yet.");
  if (!teacher) { clear(box, h("h2", null, "Assignments"), listing); return; }
  const [labs, exams] = await Promise.all([api("GET", "/api/laboratories"), api("GET", "/api/exams")]);
  const err = h("p", { class: "error", role: "alert" });
  const item = h("select", { id: "assign-item", required: true },
    labs.length ? h("optgroup", { label: "Laboratories" }, labs.map((l) => h("option", { value: `lab:${l.id}` }, l.title))) : null,
    exams.length ? h("optgroup", { label: "Exams" }, exams.map((x) => h("option", { value: `exam:${x.id}` }, x.title))) : null);
  const due = h("input", { type: "datetime-local", id: "assign-due", required: true, value: localInput(new Date(Date.now() + 7 * 86400e3)) });
  const form = h("form", { class: "inline-form", "aria-label": "New assignment" },
    h("label", { for: "assign-item" }, "Item"), item, h("label", { for: "assign-due" }, "Due"), due, h("button", { type: "submit" }, "Assign"));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    err.textContent = "";
    const [kind, itemID] = item.value.split(":");
    try {
      await api("POST", `/api/classes/${c.id}/assignments`, { body: { kind, item_id: Number(itemID), due_at: new Date(due.value).toISOString().replace(/\.\d+Z$/, "Z") } });
      toast("Assignment set");
      again();
    } catch (x) { err.textContent = x.message; }
  });
  clear(box, h("h2", null, "Assignments"), listing, h("h3", null, "Set a due date"), form, err);
}

/** assignmentsCard is the dashboard's card of the learner's assignments
 * with the field to join a class. */
export async function assignmentsCard(reload) {
  const as = await api("GET", "/api/dashboard/assignments");
  const state = (a) => a.done ? h("span", { class: a.passed ? "pass" : "muted" }, a.passed ? "done, passed" : "done")
    : h("span", { class: a.overdue ? "error" : "muted" }, a.overdue ? "overdue" : "to do");
  return h("section", { class: "card", id: "assignments" }, h("h2", null, "Assignments"),
    as.length ? h("ul", { class: "plain" }, as.map((a) => h("li", { class: "row" },
      h("span", null, h("a", { href: a.kind === "lab" ? `/labs/${a.item_id}` : `/exams/${a.item_id}` }, a.title), h("span", { class: "muted" }, ` · ${a.class_name}`)),
      h("span", { class: "nowrap" }, `due ${fmtDate(a.due_at)} · `, state(a)))))
      : h("p", { class: "muted" }, "No assignment: your classes' teachers set them here."),
    h("h3", null, "Join a class"), joinForm(reload), h("p", { class: "small" }, h("a", { href: "/classes" }, "Your classes")));
}
