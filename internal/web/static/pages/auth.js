// Sign in, sign up, a forgotten password's reset by e-mail, and the
// confirmation of a new account's e-mail address.
import { api } from "../api.js";
import { h, clear, toast } from "../dom.js";

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

/** UNVERIFIED is the login's 403 detail for an account whose e-mail address
 * is not confirmed yet, on a server that requires it (docs/accounts.md). */
const UNVERIFIED = "Confirm your e-mail address: we sent you a link";

function isUnverified(e) {
  return e.status === 403 && e.body && e.body.detail === UNVERIFIED;
}

/** checkMail replaces the page with "check your mail" for address (when
 * known) and a button that sends the confirmation link again. */
function checkMail(ctx, address) {
  clear(ctx.main, h("div", { class: "auth" }, pitch(), h("section", { class: "card auth-form", "aria-labelledby": "check-title" },
    h("h1", { id: "check-title" }, "Check your mail"),
    h("p", null, "We sent a link to confirm ", address ? h("strong", null, address) : "your e-mail address",
      ". Open it within 24 hours, then sign in."),
    h("p", { class: "muted" }, "Nothing after a few minutes? Look in your spam folder, or send the link again."),
    h("p", { class: "alt" }, h("a", { href: "/verify-email", class: "button" }, "Send the link again")),
    h("p", { class: "alt" }, h("a", { href: "/signin" }, "Back to sign in")))));
}

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

function form(ctx, { title, intro, fields, submit, alt, extra, onsubmit }) {
  const err = h("p", { class: "error", role: "alert" });
  const btn = h("button", { type: "submit" }, submit);
  const f = h("form", { class: "card auth-form", novalidate: true }, h("h1", null, title), intro ? h("p", { class: "muted" }, intro) : null, fields, err, btn,
    h("p", { class: "alt" }, alt), extra ? h("p", { class: "alt" }, extra) : null);
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
  const resend = h("a", { href: "/verify-email", class: "button" }, "Send the link again");
  resend.hidden = true;
  form(ctx, {
    title: "Sign in", submit: "Sign in",
    intro: "Learn Linux administration in a real shell in your browser.",
    fields: [field("Username", { name: "username", autocomplete: "username", required: true }),
      field("Password", { name: "password", type: "password", autocomplete: "current-password", required: true }), otp],
    alt: ["New here? ", h("a", { href: "/signup" + location.search }, "Create an account")],
    extra: [h("a", { href: "/forgot-password" }, "Forgot your password?"), resend],
    onsubmit: async (v) => {
      resend.hidden = true;
      try {
        await logIn(ctx, v.username.trim(), v.password, otp.hidden ? "" : (v.otp || "").trim());
      } catch (e) {
        if (e.status === 401 && e.body && e.body.detail === MFA_NEEDED) {
          otp.hidden = false;
          otp.querySelector("input").focus();
        }
        // The server wants the address confirmed: offer a new link.
        if (isUnverified(e)) resend.hidden = false;
        throw e;
      }
    },
  });
}

/** forgot asks for a mail with a link to reset the password. The answer is
 * the same whether the address has an account or not (the server tells
 * nobody which addresses do), so the page says what happens if it has. */
export async function forgot(ctx) {
  ctx.title("Forgot your password");
  if (ctx.me) { ctx.go("/profile", { replace: true }); return; }
  form(ctx, {
    title: "Forgot your password?", submit: "Send me a link",
    intro: "Give the e-mail address of your account: we send a link to choose a new password.",
    fields: [field("E-mail", { name: "email", type: "email", autocomplete: "email", required: true })],
    alt: ["Remembered it? ", h("a", { href: "/signin" }, "Sign in")],
    onsubmit: async (v) => {
      await api("POST", "/api/auth/forgot-password", { body: { email: v.email.trim() }, noSignOut: true });
      clear(ctx.main, h("div", { class: "auth" }, pitch(), h("section", { class: "card auth-form", "aria-labelledby": "sent-title" },
        h("h1", { id: "sent-title" }, "Check your mail"),
        h("p", null, "If an account has the address ", h("strong", null, v.email.trim()),
          ", a mail with a link to choose a new password is on its way. The link works once, for an hour."),
        h("p", { class: "muted" }, "Nothing after a few minutes? Look in your spam folder, or check the address and ask again."),
        h("p", { class: "alt" }, h("a", { href: "/signin" }, "Back to sign in")))));
    },
  });
}

/** reset sets a new password with the token of the link in the mail. The
 * token leaves the address bar at once (it stays in this page's memory), so
 * it is in no history entry once the page is drawn. */
export async function reset(ctx) {
  ctx.title("Choose a new password");
  const token = ctx.query.get("token") || "";
  if (token) history.replaceState(null, "", "/reset-password");
  if (!token) {
    clear(ctx.main, h("div", { class: "auth" }, pitch(), h("section", { class: "card auth-form", "aria-labelledby": "nolink-title" },
      h("h1", { id: "nolink-title" }, "Open the link from the mail"),
      h("p", null, "This page sets a new password with the link we send by mail. Open that link, or ask for a new one."),
      h("p", { class: "alt" }, h("a", { href: "/forgot-password", class: "button" }, "Send me a link")))));
    return;
  }
  form(ctx, {
    title: "Choose a new password", submit: "Set the new password",
    intro: "Setting it signs you out everywhere: sign in again with the new one.",
    fields: [field("New password (8 characters or more)", { name: "new_password", type: "password", autocomplete: "new-password", required: true, minlength: 8 })],
    alt: ["Link not working? ", h("a", { href: "/forgot-password" }, "Ask for a new one")],
    onsubmit: async (v) => {
      await api("POST", "/api/auth/reset-password", { body: { token, new_password: v.new_password }, noSignOut: true });
      toast("Password changed: sign in with your new password");
      ctx.go("/signin", { replace: true });
    },
  });
}

/** verify confirms a new account's e-mail address with the token of the
 * link in the mail, which leaves the address bar at once as on
 * /reset-password. Without a token it asks for a new link. */
export async function verify(ctx) {
  ctx.title("Confirm your e-mail address");
  const token = ctx.query.get("token") || "";
  if (token) history.replaceState(null, "", "/verify-email");
  if (!token) {
    form(ctx, {
      title: "Send the link again", submit: "Send me a link",
      intro: "Give the e-mail address you signed up with: we send a new link to confirm it.",
      fields: [field("E-mail", { name: "email", type: "email", autocomplete: "email", required: true })],
      alt: ["Confirmed already? ", h("a", { href: "/signin" }, "Sign in")],
      onsubmit: async (v) => {
        await api("POST", "/api/auth/resend-verification", { body: { email: v.email.trim() }, noSignOut: true });
        checkMail(ctx, v.email.trim());
      },
    });
    return;
  }
  const status = h("p", { role: "status" }, "Confirming your address...");
  const card = h("section", { class: "card auth-form", "aria-labelledby": "verify-title" },
    h("h1", { id: "verify-title" }, "Confirm your e-mail address"), status);
  clear(ctx.main, h("div", { class: "auth" }, pitch(), card));
  try {
    const r = await api("POST", "/api/auth/verify-email", { body: { token }, noSignOut: true });
    status.textContent = r.detail;
    card.append(h("p", { class: "alt" }, h("a", { href: "/signin", class: "button" }, "Sign in")));
  } catch (e) {
    status.className = "error";
    status.setAttribute("role", "alert");
    status.textContent = e.message;
    card.append(h("p", { class: "alt" }, h("a", { href: "/verify-email", class: "button" }, "Send the link again")));
  }
}

/** signup is the registration page; it signs the new learner in, or, when
 * the server requires a confirmed address, says to check the mail. */
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
      try {
        await logIn(ctx, v.username.trim(), v.password);
      } catch (e) {
        if (!isUnverified(e)) throw e;
        checkMail(ctx, v.email.trim());
      }
    },
  });
}
