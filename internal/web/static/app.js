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
import * as classes from "./pages/classes.js";
import * as watch from "./pages/watch.js";
import * as recordings from "./pages/recordings.js";
import { signOut } from "./signout.js";

const routes = [
  { re: /^\/$/, page: curriculum.render, auth: true, nav: "learn" },
  { re: /^\/signin$/, page: authPages.signin },
  { re: /^\/signup$/, page: authPages.signup },
  { re: /^\/forgot-password$/, page: authPages.forgot },
  { re: /^\/reset-password$/, page: authPages.reset },
  { re: /^\/verify-email$/, page: authPages.verify },
  { re: /^\/lessons\/(\d+)$/, page: lesson.render, auth: true, nav: "learn", wide: true },
  { re: /^\/labs\/(\d+)$/, page: lab.render, auth: true, nav: "learn", wide: true },
  { re: /^\/exams$/, page: exams.list, auth: true, nav: "exams" },
  { re: /^\/exams\/(\d+)$/, page: exams.render, auth: true, nav: "exams", wide: true },
  { re: /^\/dashboard$/, page: dashboard.render, auth: true, nav: "dashboard" },
  { re: /^\/profile$/, page: profile.render, auth: true, nav: "profile" },
  { re: /^\/classes$/, page: classes.list, auth: true, nav: "classes" },
  { re: /^\/classes\/(\d+)$/, page: classes.render, auth: true, nav: "classes" },
  { re: /^\/admin$/, page: admin.render, auth: true, nav: "admin" },
  // Not auth: the page signs the guest in with the link's token kept (the
  // fragment, which a redirect to /signin would lose otherwise).
  { re: /^\/watch$/, page: watch.render, wide: true },
  { re: /^\/recordings$/, page: recordings.list, auth: true, nav: "dashboard" },
  { re: /^\/recordings\/(\d+)$/, page: recordings.render, auth: true, nav: "dashboard" },
];

let cleanups = [];
let me = null;
let myProfile = null; // the signed-in user's profile (name, avatar), for the navigation
let renderSeq = 0;
let currentNav;
let rendered = ""; // the path and query of the page drawn last

/** go navigates to path inside the application. */
export function go(path, { replace = false } = {}) {
  if (replace) history.replaceState(null, "", path);
  else history.pushState(null, "", path);
  render();
}

/** currentUser returns the signed-in user, loading it once per page load
 * (the session cookie says nothing to scripts: /api/auth/me answers 200 or
 * 401), with the profile's name and avatar for the navigation's profile
 * link, or null when nobody is signed in. */
async function currentUser() {
  if (me) return me;
  try {
    [me, myProfile] = await Promise.all([api("GET", "/api/auth/me", { noSignOut: true }), api("GET", "/api/profile/me", { noSignOut: true }).catch(() => null)]);
  } catch (e) {
    if (e.status === 401) return null;
    throw e;
  }
  return me;
}

/** profileLink is the navigation's way to the profile: the avatar (or the
 * name's initial) and the name, with "Profile" spelt out. */
function profileLink(active) {
  const name = (myProfile && myProfile.full_name) || me.username;
  const pic = myProfile && myProfile.avatar_url
    ? h("img", { class: "me-pic", src: myProfile.avatar_url, alt: "", width: 28, height: 28 })
    : h("span", { class: "me-pic none", "aria-hidden": "true" }, name.slice(0, 1).toUpperCase());
  return h("a", { href: "/profile", class: "me", "aria-current": active === "profile" ? "page" : null },
    pic, h("span", { class: "me-text" }, h("span", { class: "me-name wide-only" }, name), h("span", { class: "me-sub" }, "Profile")));
}

function drawNav(active) {
  const nav = document.getElementById("nav");
  const link = (href, key, text) => h("a", { href, "aria-current": active === key ? "page" : null }, text);
  if (!me) {
    clear(nav, link("/signin", "signin", "Sign in"), link("/signup", "signup", "Sign up"));
    return;
  }
  // Learners have no use for the API reference; admins find it here and on
  // the admin page.
  const admin = me.role === "admin";
  clear(nav,
    link("/", "learn", "Learn"),
    link("/exams", "exams", "Exams"),
    link("/dashboard", "dashboard", "Dashboard"),
    // Learners reach their classes from the dashboard's assignments.
    me.role !== "student" ? link("/classes", "classes", "Classes") : null,
    admin ? link("/admin", "admin", "Admin") : null,
    me.role === "instructor" ? link("/admin", "admin", "Author") : null,
    admin ? h("a", { href: "/docs", class: "wide-only" }, "API") : null,
    profileLink(active),
    h("button", { type: "button", class: "linkish wide-only", onclick: signOut }, "Sign out"));
}

async function render() {
  const seq = ++renderSeq;
  for (const fn of cleanups.splice(0)) { try { fn(); } catch { /* leaving anyway */ } }
  const main = document.getElementById("main");
  const path = location.pathname;
  rendered = path + location.search;
  let route, params = [];
  for (const r of routes) {
    const m = path.match(r.re);
    if (m) { route = r; params = m.slice(1); break; }
  }
  document.body.classList.toggle("wide", !!(route && route.wide));
  if (!route) {
    // The server answered this path's shell with 404 (docs/web.md).
    await currentUser().catch(() => null);
    if (seq !== renderSeq) return;
    drawNav();
    document.title = "Page not found · tuxlab";
    clear(main, h("div", { class: "not-found" },
      h("h1", null, "This page does not exist"),
      h("p", null, "The address may be mistyped, or the page was moved or removed."),
      h("p", null, h("a", { href: "/", class: "button" }, me ? "Go to your lessons" : "Go to the start page"))));
    const h1 = main.querySelector("h1");
    h1.setAttribute("tabindex", "-1");
    h1.focus({ preventScroll: true });
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
  // The install requires two-factor sign-in of this admin or instructor:
  // every other page's API calls would be refused until it is on.
  if (route.auth && user.mfa_setup_required && route.page !== profile.render) {
    go("/profile", { replace: true });
    return;
  }
  drawNav(route.nav);
  currentNav = route.nav;
  // Each page draws into an element of its own: a page still awaiting its
  // data when the learner has moved on then fills a detached element, and
  // never overwrites the page drawn after it.
  const page = h("div", { class: "page" }, h("p", { class: "loading" }, "Loading…"));
  clear(main, page);
  const ctx = {
    main: page, params, me, go,
    query: new URLSearchParams(location.search),
    title: (t) => { document.title = t ? `${t} · tuxlab` : "tuxlab"; },
    cleanup: (fn) => cleanups.push(fn),
    current: () => seq === renderSeq,
    signedIn: (user) => {
      me = user;
      myProfile = null;
      api("GET", "/api/profile/me").then((p) => { myProfile = p; if (me) drawNav(currentNav); }).catch(() => {});
    },
  };
  try {
    await route.page(ctx);
  } catch (e) {
    if (seq !== renderSeq) return;
    if (e.status !== 404) console.error(e);
    clear(main, h("div", { class: "not-found" },
      h("h1", null, e.status === 404 ? "This page does not exist" : "Something went wrong"),
      h("p", { class: "error" }, e.message),
      h("p", null, h("a", { href: "/" }, "Go to your lessons"))));
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
// Back and Forward draw the page again; a link to a fragment of this page
// (the skip link, a module's anchor) fires popstate too, and only scrolls.
window.addEventListener("popstate", () => {
  if (location.pathname + location.search !== rendered) render();
});
// The profile page tells the navigation about a new name or avatar.
window.addEventListener("tuxlab:profile", (e) => {
  myProfile = e.detail;
  if (me) drawNav(currentNav);
});
// Signing out leaves the page before it revokes the token (signout.js).
window.addEventListener("tuxlab:leave", () => {
  for (const fn of cleanups.splice(0)) { try { fn(); } catch { /* leaving anyway */ } }
});
window.addEventListener("tuxlab:signout", () => {
  me = null;
  myProfile = null;
  go("/signin");
});
window.addEventListener("tuxlab:signedout", (e) => {
  me = null;
  myProfile = null;
  toast(e.detail && e.detail !== "Not authenticated" ? `Signed out: ${e.detail}` : "Your session ended: sign in again", "error");
  if (!/^\/sign(in|up)$/.test(location.pathname)) go("/signin?next=" + encodeURIComponent(location.pathname), { replace: true });
});

render();
