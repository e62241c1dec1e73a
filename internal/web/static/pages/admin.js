// The admin page: system figures, users (create, role, active, delete) and
// content (modules and lessons: names, Markdown, drafts and a learner's
// preview). Instructors get the content part alone, for their own modules.
import { api } from "../api.js";
import { h, clear, toast, fmtDate, rendered } from "../dom.js";

/** render draws the admin page, or an instructor's authoring page; the API
 * refuses students with 403 and instructors on another author's content. */
export async function render(ctx) {
  if (ctx.me.role === "instructor") {
    ctx.title("Authoring");
    const body = h("div");
    clear(ctx.main, h("h1", null, "Your content"),
      h("p", { class: "muted" }, "New modules and lessons start as drafts: learners see them once you publish them."), body);
    await content(body, ctx.me);
    return;
  }
  ctx.title("Admin");
  if (ctx.me.role !== "admin") {
    clear(ctx.main, h("h1", null, "Administration"), h("p", { class: "error" }, "Only an administrator or an instructor can open this page."),
      h("p", null, h("a", { href: "/" }, "Go to your lessons")));
    return;
  }
  const stats = await api("GET", "/api/admin/stats");
  const body = h("div");
  const tabs = [["Users", users], ["Content", (b) => content(b, ctx.me)]];
  const bar = h("div", { class: "tabs", role: "tablist" }, tabs.map(([name, fn], i) =>
    h("button", { type: "button", role: "tab", "aria-selected": i === 0 ? "true" : "false", onclick: (e) => {
      bar.querySelectorAll("button").forEach((b) => b.setAttribute("aria-selected", b === e.target ? "true" : "false"));
      fn(body).catch((x) => clear(body, h("p", { class: "error" }, x.message)));
    } }, name)));
  const l = stats.learning;
  clear(ctx.main,
    h("h1", null, "Administration"),
    h("p", { class: "muted" }, "Every route, with Try it out: the ", h("a", { href: "/docs" }, "API reference"), "."),
    h("div", { class: "tiles" },
      tile("Users", stats.users.total, `${stats.users.active} active · ${stats.users.by_role.admin} admin${stats.users.by_role.admin === 1 ? "" : "s"}`),
      tile("Active learners", l.active_users_7d, `7 days · ${l.active_users_30d} in 30`),
      tile("Lessons", stats.lessons.themes, `${stats.lessons.modules} modules · ${stats.lessons.completions} completions`),
      tile("Sandboxes", stats.sandboxes.running, `running of ${stats.sandboxes.containers} · engine ${stats.sandboxes.engine_available ? "up" : "down"}`)),
    bar, body);
  await users(body);
}

function tile(label, value, sub) {
  return h("div", { class: "tile" }, h("span", { class: "tile-label" }, label), h("strong", null, String(value)), h("span", { class: "muted" }, sub));
}

async function users(body, page = 1) {
  const { data: list, res } = await api("GET", "/api/admin/users", { query: { page, page_size: 20 }, full: true });
  const total = Number(res.headers.get("X-Total-Count")) || list.length;
  const pages = Math.max(1, Math.ceil(total / 20));
  const rows = list.map((u) => {
    const role = h("select", { "aria-label": `Role of ${u.username}` }, ["student", "instructor", "admin"].map((r) => h("option", { value: r, selected: r === u.role }, r)));
    role.addEventListener("change", async () => {
      try { await api("PUT", `/api/admin/users/${u.id}/role`, { query: { role: role.value } }); toast(`${u.username} is now ${role.value}`); } catch (e) { toast(e.message, "error"); role.value = u.role; }
    });
    const active = h("input", { type: "checkbox", checked: u.is_active, "aria-label": `${u.username} is active` });
    active.addEventListener("change", async () => {
      try { await api("PUT", `/api/admin/users/${u.id}/active`, { query: { is_active: active.checked } }); toast(`${u.username} ${active.checked ? "activated" : "deactivated"}`); } catch (e) { toast(e.message, "error"); active.checked = !active.checked; }
    });
    const del = h("button", { type: "button", class: "small danger" }, "Delete");
    del.addEventListener("click", async () => {
      if (!confirm(`Delete ${u.username} and everything they did?`)) return;
      try { await api("DELETE", `/api/admin/users/${u.id}`); toast(`${u.username} deleted`); users(body, page); } catch (e) { toast(e.message, "error"); }
    });
    // Two-factor sign-in: an admin can only turn it off, for a user who lost
    // both the app and the recovery codes.
    const off = h("button", { type: "button", class: "small ghost", "aria-label": `Turn off two-factor sign-in of ${u.username}` }, "Turn off");
    const mfa = u.mfa_enabled ? ["on ", off] : "off";
    if (u.mfa_enabled) {
      off.addEventListener("click", async () => {
        if (!confirm(`Turn off two-factor sign-in of ${u.username}? Do it only when they lost their app and their recovery codes.`)) return;
        try { await api("DELETE", `/api/admin/users/${u.id}/mfa`); toast(`Two-factor sign-in of ${u.username} is off`); users(body, page); } catch (e) { toast(e.message, "error"); }
      });
    }
    return h("tr", null, h("td", null, String(u.id)), h("td", null, u.username), h("td", null, u.email), h("td", null, role), h("td", null, active), h("td", null, mfa), h("td", null, fmtDate(u.created_at)), h("td", null, del));
  });
  const rule = await api("GET", "/api/admin/settings/mfa");
  const require = h("input", { type: "checkbox", id: "mfa-required", checked: rule.required });
  require.addEventListener("change", async () => {
    try {
      await api("PUT", "/api/admin/settings/mfa", { query: { required: require.checked } });
      toast(require.checked ? "Admins and instructors must now use two-factor sign-in" : "Two-factor sign-in is optional for everyone");
    } catch (e) { toast(e.message, "error"); require.checked = !require.checked; }
  });
  const err = h("p", { class: "error", role: "alert" });
  const create = h("form", { class: "inline-form" },
    h("input", { name: "username", placeholder: "username", "aria-label": "Username", required: true }),
    h("input", { name: "email", type: "email", placeholder: "e-mail", "aria-label": "E-mail", required: true }),
    h("input", { name: "password", type: "password", placeholder: "password", "aria-label": "Password", autocomplete: "new-password", required: true }),
    h("select", { name: "role", "aria-label": "Role" }, ["student", "instructor", "admin"].map((r) => h("option", { value: r }, r))),
    h("button", { type: "submit" }, "Create user"));
  create.addEventListener("submit", async (e) => {
    e.preventDefault();
    err.textContent = "";
    try { await api("POST", "/api/admin/users", { body: Object.fromEntries(new FormData(create)) }); toast("User created"); users(body, page); } catch (x) { err.textContent = x.message; }
  });
  const pager = h("p", { class: "pager" },
    h("button", { type: "button", class: "small ghost", disabled: page <= 1, onclick: () => users(body, page - 1) }, "← Previous"),
    ` Page ${page} of ${pages} (${total} users) `,
    h("button", { type: "button", class: "small ghost", disabled: page >= pages, onclick: () => users(body, page + 1) }, "Next →"));
  clear(body,
    h("section", { class: "card" }, h("h2", null, "Two-factor sign-in"),
      h("p", null, require, " ", h("label", { for: "mfa-required" }, "Require two-factor sign-in of admins and instructors")),
      h("p", { class: "muted small" }, "Until they turn it on, they can sign in but only reach their profile to set it up. Turn yours on first: the rule applies to you too.")),
    h("section", { class: "card" }, h("h2", null, "New user"), create, err),
    h("section", { class: "card" }, h("h2", null, "Users"),
      h("div", { class: "table-wrap" }, h("table", null,
        h("thead", null, h("tr", null, ["id", "username", "e-mail", "role", "active", "two-factor", "since", ""].map((c) => h("th", { scope: "col" }, c)))),
        h("tbody", null, rows))), pager));
}

/** draftTag marks an item learners do not see. */
function draftTag(item) {
  return item.published ? null : h("span", { class: "tag draft" }, "Draft");
}

/** publishToggle is a checkbox that publishes or unpublishes item at path. */
function publishToggle(path, item, label, redraw) {
  const box = h("input", { type: "checkbox", checked: item.published, "aria-label": `${label} is published` });
  box.addEventListener("change", async () => {
    try {
      await api("PUT", path, { query: { published: box.checked } });
      toast(box.checked ? `${label}: published` : `${label}: now a draft`);
      redraw();
    } catch (x) { toast(x.message, "error"); box.checked = !box.checked; }
  });
  return h("label", { class: "inline" }, box, " Published");
}

async function content(body, me) {
  const redraw = () => content(body, me).catch((x) => toast(x.message, "error"));
  const all = await api("GET", "/api/lessons/modules");
  // An admin changes everything; an instructor their own modules.
  const mine = (item) => me.role === "admin" || item.owner_id === me.id;
  const modules = all.filter(mine);
  const editor = h("div");
  const list = modules.map((m) => {
    const f = h("form", { class: "inline-form" },
      h("input", { name: "name", value: m.name, "aria-label": `Name of module ${m.id}`, required: true }),
      h("input", { name: "description", value: m.description, "aria-label": `Description of module ${m.id}`, class: "grow" }),
      h("input", { name: "order_index", type: "number", value: m.order_index, "aria-label": `Position of module ${m.id}`, class: "num" }),
      h("button", { type: "submit", class: "small" }, "Save"));
    f.addEventListener("submit", async (e) => {
      e.preventDefault();
      try { await api("PUT", `/api/admin/lessons/modules/${m.id}`, { query: Object.fromEntries(new FormData(f)) }); toast("Module saved"); } catch (x) { toast(x.message, "error"); }
    });
    const add = h("form", { class: "inline-form" },
      h("input", { name: "title", placeholder: "New lesson title", "aria-label": `Title of a new lesson in ${m.title}`, required: true, class: "grow" }),
      h("button", { type: "submit", class: "small" }, "Add lesson"));
    add.addEventListener("submit", async (e) => {
      e.preventDefault();
      try {
        const t = await api("POST", "/api/admin/lessons/themes", { query: { module_id: m.id, title: new FormData(add).get("title"), order_index: m.themes.length + 1 } });
        toast(`Lesson created${t.published ? "" : " as a draft"}`);
        redraw();
      } catch (x) { toast(x.message, "error"); }
    });
    const themes = m.themes.filter(mine);
    return h("details", { class: "card", open: !m.published || null },
      h("summary", null, draftTag(m), `${m.order_index}. ${m.title} (${m.themes.length} lessons)`),
      f, publishToggle(`/api/admin/lessons/modules/${m.id}`, m, m.title, redraw),
      h("ul", { class: "plain" }, themes.map((t) => h("li", { class: "row" }, draftTag(t), h("a", { href: `/lessons/${t.id}` }, t.title),
        publishToggle(`/api/admin/lessons/themes/${t.id}`, t, t.title, redraw),
        h("button", { type: "button", class: "small ghost", onclick: () => editLesson(editor, t) }, "Edit lesson"),
        h("button", { type: "button", class: "small ghost", onclick: () => preview(editor, t) }, "Preview")))),
      mine(m) ? add : null);
  });
  const create = h("form", { class: "inline-form" },
    h("input", { name: "name", placeholder: "Module name", "aria-label": "Name of a new module", required: true }),
    h("input", { name: "description", placeholder: "What it teaches", "aria-label": "Description of the new module", class: "grow" }),
    h("button", { type: "submit" }, "Create module"));
  create.addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      const m = await api("POST", "/api/admin/lessons/modules", { query: Object.fromEntries(new FormData(create)) });
      toast(`Module created${m.published ? "" : " as a draft"}`);
      redraw();
    } catch (x) { toast(x.message, "error"); }
  });
  clear(body, h("p", { class: "muted" }, "Laboratories, exams and sandbox templates are authored as files (",
    h("code", null, "tuxlab content import DIR"), ") or through the authoring routes of the ", h("a", { href: "/docs" }, "API"), "."),
  h("section", { class: "card" }, h("h2", null, "New module"), create), editor,
  list.length ? list : h("p", { class: "muted" }, "You have no modules yet."));
}

/** preview shows theme t's lesson as a learner reads it. */
async function preview(editor, t) {
  const c = await api("GET", `/api/lessons/themes/${t.id}/content`);
  clear(editor, h("section", { class: "card preview", "aria-label": `Preview of ${t.title}` },
    h("h2", null, `Preview: ${t.title}`, " ", draftTag(t)),
    h("p", { class: "muted" }, t.published ? "Learners read it like this." : "Learners will read it like this once it and its module are published."),
    rendered(c.html, { cls: "prose lesson-body" }),
    h("p", { class: "lab-actions" }, h("button", { type: "button", class: "ghost", onclick: () => clear(editor) }, "Close preview"))));
}

async function editLesson(editor, t) {
  const c = await api("GET", `/api/lessons/themes/${t.id}/content`);
  const area = h("textarea", { rows: 24, class: "code", "aria-label": `Markdown of ${t.title}` }, c.markdown);
  const save = h("button", { type: "button" }, "Save lesson");
  save.addEventListener("click", async () => {
    try { await api("PUT", `/api/admin/lessons/themes/${t.id}/content`, { body: area.value, contentType: "text/markdown" }); toast("Lesson saved"); clear(editor); } catch (x) { toast(x.message, "error"); }
  });
  clear(editor, h("section", { class: "card" }, h("h2", null, `Editing: ${t.title}`), area,
    h("p", { class: "lab-actions" }, save, h("button", { type: "button", class: "ghost", onclick: () => clear(editor) }, "Cancel"))));
  area.focus();
}
