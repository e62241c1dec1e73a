// Sign in and sign up.
import { api } from "../api.js";
import { h, clear } from "../dom.js";

function field(label, attrs) {
  const id = "f-" + attrs.name;
  return h("p", { class: "field" }, h("label", { for: id }, label), h("input", { id, ...attrs }));
}

function nextPath(ctx) {
  const n = ctx.query.get("next") || "/";
  return n.startsWith("/") && !n.startsWith("//") ? n : "/";
}

/** MFA_NEEDED is the login's 401 detail when the account has two-factor
 * sign-in on and no code came with the password (docs/mfa.md). */
const MFA_NEEDED = "Two-factor code required";

async function logIn(ctx, username, password, otp) {
  // The server sets the session cookies; the token in the body is left alone.
  const body = { username, password };
  if (otp) body.otp = otp;
  await api("POST", "/api/auth/login", { body, headers: { "X-Tuxlab-Session": "cookie" }, noSignOut: true });
  const me = await api("GET", "/api/auth/me");
  ctx.signedIn(me);
  // An admin or instructor the install requires two-factor sign-in of goes
  // where it is turned on.
  ctx.go(me.mfa_setup_required ? "/profile" : nextPath(ctx), { replace: true });
}

function form(ctx, { title, intro, fields, submit, alt, onsubmit }) {
  const err = h("p", { class: "error", role: "alert" });
  const btn = h("button", { type: "submit" }, submit);
  const f = h("form", { class: "card auth-form", novalidate: true }, h("h1", null, title), intro ? h("p", { class: "muted" }, intro) : null, fields, err, btn, h("p", { class: "alt" }, alt));
  f.addEventListener("submit", async (e) => {
    e.preventDefault();
    err.textContent = "";
    btn.disabled = true;
    try {
      await onsubmit(Object.fromEntries(new FormData(f)));
    } catch (x) {
      err.textContent = x.message;
    } finally {
      btn.disabled = false;
    }
  });
  clear(ctx.main, h("div", { class: "auth" }, pitch(), f));
  f.querySelector("input").focus();
}

/** pitch says what a newcomer gets, beside the form. */
function pitch() {
  return h("section", { class: "pitch", "aria-label": "About tuxlab" },
    h("p", { class: "pitch-title" }, "Learn Linux system administration by doing."),
    h("ul", null,
      h("li", null, h("strong", null, "A real shell beside every lesson: "), "a Debian sandbox of your own, in the browser, with sudo."),
      h("li", null, h("strong", null, "Laboratories "), "whose tasks are checked inside your sandbox, with a reason when something is not right yet."),
      h("li", null, h("strong", null, "Timed exams "), "with questions and practical tasks, mapped to the LFCS domains."),
      h("li", null, h("strong", null, "Your progress, "), "streaks and scores on a dashboard.")));
}

/** signin is the sign-in page. */
export async function signin(ctx) {
  ctx.title("Sign in");
  if (ctx.me) { ctx.go(nextPath(ctx), { replace: true }); return; }
  // The code field appears when the server says the account needs one.
  const otp = field("Two-factor code (from your app, or a recovery code)", { name: "otp", autocomplete: "one-time-code", inputmode: "text" });
  otp.hidden = true;
  form(ctx, {
    title: "Sign in", submit: "Sign in",
    intro: "Learn Linux administration in a real shell in your browser.",
    fields: [field("Username", { name: "username", autocomplete: "username", required: true }),
      field("Password", { name: "password", type: "password", autocomplete: "current-password", required: true }), otp],
    alt: ["New here? ", h("a", { href: "/signup" + location.search }, "Create an account")],
    onsubmit: async (v) => {
      try {
        await logIn(ctx, v.username.trim(), v.password, otp.hidden ? "" : (v.otp || "").trim());
      } catch (e) {
        if (e.status === 401 && e.body && e.body.detail === MFA_NEEDED) {
          otp.hidden = false;
          otp.querySelector("input").focus();
        }
        throw e;
      }
    },
  });
}

/** signup is the registration page; it signs the new learner in. */
export async function signup(ctx) {
  ctx.title("Sign up");
  if (ctx.me) { ctx.go("/", { replace: true }); return; }
  form(ctx, {
    title: "Create your account", submit: "Sign up",
    intro: "Free, and all you need is a browser: every lesson comes with its own Linux sandbox.",
    fields: [field("Username", { name: "username", autocomplete: "username", required: true }),
      field("E-mail", { name: "email", type: "email", autocomplete: "email", required: true }),
      field("Password (8 characters or more)", { name: "password", type: "password", autocomplete: "new-password", required: true, minlength: 8 })],
    alt: ["Have an account? ", h("a", { href: "/signin" + location.search }, "Sign in")],
    onsubmit: async (v) => {
      await api("POST", "/api/auth/register", { body: { username: v.username.trim(), email: v.email.trim(), password: v.password }, noSignOut: true });
      await logIn(ctx, v.username.trim(), v.password);
    },
  });
}
