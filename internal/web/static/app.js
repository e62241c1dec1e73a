// tuxlab's browser interface: a router over the page modules, the navigation
// bar and the session. Every page is a function that fills <main> and may
// register cleanups (closing a terminal) that run when the learner leaves.
import { api } from "./api.js";
import { h, clear, toast } from "./dom.js";
import * as authPages from "./pages/auth.js";
import * as curriculum from "./pages/curriculum.js";
import * as lesson from "./pages/lesson.js";
import * as lab from "./pages/lab.js";
import * as exams from "./pages/exams.js";
import * as dashboard from "./pages/dashboard.js";
import * as profile from "./pages/profile.js";
import * as admin from "./pages/admin.js";
import { signOut } from "./signout.js";

const routes = [
  { re: /^\/$/, page: curriculum.render, auth: true, nav: "learn" },
  { re: /^\/signin$/, page: authPages.signin },
  { re: /^\/signup$/, page: authPages.signup },
  { re: /^\/lessons\/(\d+)$/, page: lesson.render, auth: true, nav: "learn", wide: true },
  { re: /^\/labs\/(\d+)$/, page: lab.render, auth: true, nav: "learn", wide: true },
  { re: /^\/exams$/, page: exams.list, auth: true, nav: "exams" },
  { re: /^\/exams\/(\d+)$/, page: exams.render, auth: true, nav: "exams", wide: true },
  { re: /^\/dashboard$/, page: dashboard.render, auth: true, nav: "dashboard" },
  { re: /^\/profile$/, page: profile.render, auth: true, nav: "profile" },
  { re: /^\/admin$/, page: admin.render, auth: true, nav: "admin" },
];

let cleanups = [];
let me = null;
let renderSeq = 0;

/** go navigates to path inside the application. */
export function go(path, { replace = false } = {}) {
  if (replace) history.replaceState(null, "", path);
  else history.pushState(null, "", path);
  render();
}

/** currentUser returns the signed-in user, loading it once per page load
 * (the session cookie says nothing to scripts: /api/auth/me answers 200 or
 * 401), or null when nobody is signed in. */
async function currentUser() {
  if (me) return me;
  try {
    me = await api("GET", "/api/auth/me", { noSignOut: true });
  } catch (e) {
    if (e.status === 401) return null;
    throw e;
  }
  return me;
}

function drawNav(active) {
  const nav = document.getElementById("nav");
  const link = (href, key, text) => h("a", { href, "aria-current": active === key ? "page" : null }, text);
  if (!me) {
    clear(nav, link("/signin", "signin", "Sign in"), link("/signup", "signup", "Sign up"), h("a", { href: "/docs" }, "API"));
    return;
  }
  clear(nav,
    link("/", "learn", "Learn"),
    link("/exams", "exams", "Exams"),
    link("/dashboard", "dashboard", "Dashboard"),
    me.role === "admin" ? link("/admin", "admin", "Admin") : null,
    link("/profile", "profile", [h("span", { class: "wide-only" }, me.username), h("span", { class: "narrow-only" }, "Profile")]),
    h("a", { href: "/docs", class: "wide-only" }, "API"),
    h("button", { type: "button", class: "linkish wide-only", onclick: signOut }, "Sign out"));
}

async function render() {
  const seq = ++renderSeq;
  for (const fn of cleanups.splice(0)) { try { fn(); } catch { /* leaving anyway */ } }
  const main = document.getElementById("main");
  const path = location.pathname;
  let route, params = [];
  for (const r of routes) {
    const m = path.match(r.re);
    if (m) { route = r; params = m.slice(1); break; }
  }
  document.body.classList.toggle("wide", !!(route && route.wide));
  if (!route) {
    drawNav();
    clear(main, h("h1", null, "Page not found"), h("p", null, h("a", { href: "/" }, "Back to the curriculum")));
    return;
  }
  let user;
  try {
    user = await currentUser();
  } catch (e) {
    if (seq !== renderSeq) return;
    clear(main, h("p", { class: "error" }, e.message));
    return;
  }
  if (seq !== renderSeq) return;
  if (route.auth && !user) {
    go("/signin?next=" + encodeURIComponent(path + location.search), { replace: true });
    return;
  }
  drawNav(route.nav);
  clear(main, h("p", { class: "loading" }, "Loading…"));
  const ctx = {
    main, params, me, go,
    query: new URLSearchParams(location.search),
    title: (t) => { document.title = t ? `${t} · tuxlab` : "tuxlab"; },
    cleanup: (fn) => cleanups.push(fn),
    current: () => seq === renderSeq,
    signedIn: (user) => { me = user; },
  };
  try {
    await route.page(ctx);
  } catch (e) {
    if (seq !== renderSeq) return;
    console.error(e);
    clear(main, h("h1", null, e.status === 404 ? "Not found" : "Something went wrong"), h("p", { class: "error" }, e.message));
  }
  if (seq === renderSeq && location.hash) {
    const target = document.getElementById(decodeURIComponent(location.hash.slice(1)));
    if (target) target.scrollIntoView();
  }
  if (seq === renderSeq && !main.contains(document.activeElement)) {
    const h1 = main.querySelector("h1");
    if (h1) { h1.setAttribute("tabindex", "-1"); h1.focus({ preventScroll: true }); }
  }
}

// Links inside the application navigate without reloading.
document.addEventListener("click", (e) => {
  const a = e.target.closest("a[href]");
  if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey || a.target) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin || /^\/(api|ws|docs|avatars|assets)(\/|$)/.test(url.pathname)) return;
  if (url.pathname === location.pathname && url.hash) return;
  e.preventDefault();
  go(url.pathname + url.search + url.hash);
});
window.addEventListener("popstate", render);
window.addEventListener("tuxlab:signout", () => {
  me = null;
  go("/signin");
});
window.addEventListener("tuxlab:signedout", (e) => {
  me = null;
  toast(e.detail && e.detail !== "Not authenticated" ? `Signed out: ${e.detail}` : "Your session ended: sign in again", "error");
  if (!/^\/sign(in|up)$/.test(location.pathname)) go("/signin?next=" + encodeURIComponent(location.pathname), { replace: true });
});

render();
