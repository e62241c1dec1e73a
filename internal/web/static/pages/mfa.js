// The profile's "Two-factor sign-in" section: set up (the secret and its QR
// code), turn on with a code (the recovery codes shown once), turn off with
// the password and a code. The secret exists in this page only between
// setup and enable; the server never sends it again (docs/mfa.md).
import { api } from "../api.js";
import { h, clear, toast, fmtDate } from "../dom.js";

/** section returns the card, drawn from GET /api/auth/mfa; onChange(status)
 * runs after two-factor sign-in is turned on or off. */
export async function section(onChange) {
  const card = h("section", { class: "card", id: "two-factor", "aria-labelledby": "two-factor-title" });
  let status = await api("GET", "/api/auth/mfa");

  function title() { return h("h2", { id: "two-factor-title" }, "Two-factor sign-in"); }

  function drawOff() {
    const setUp = h("button", { type: "button" }, "Set up two-factor sign-in");
    setUp.addEventListener("click", async () => {
      setUp.disabled = true;
      try { drawSetup(await api("POST", "/api/auth/mfa/setup")); } catch (e) { toast(e.message, "error"); setUp.disabled = false; }
    });
    clear(card, title(),
      status.setup_required ? h("p", { class: "notice", role: "status" }, "Your administrator requires two-factor sign-in for your role: turn it on to use tuxlab.") : null,
      h("p", null, "Off. With it on, signing in also asks for a 6-digit code from an authenticator app on your phone (any app that reads TOTP QR codes)."),
      h("p", null, setUp));
  }

  function drawSetup(setup) {
    const err = h("p", { class: "error", role: "alert" });
    const f = h("form", { class: "mfa-enable" },
      h("p", { class: "field" }, h("label", { for: "mfa-code" }, "Code from the app"),
        h("input", { id: "mfa-code", name: "code", inputmode: "numeric", autocomplete: "one-time-code", pattern: "[0-9 ]*", maxlength: 7, required: true })),
      err,
      h("p", { class: "lab-actions" }, h("button", { type: "submit" }, "Turn on"),
        h("button", { type: "button", class: "ghost", onclick: drawOff }, "Cancel")));
    f.addEventListener("submit", async (e) => {
      e.preventDefault();
      err.textContent = "";
      try {
        const r = await api("POST", "/api/auth/mfa/enable", { body: { code: f.code.value } });
        status = await api("GET", "/api/auth/mfa");
        drawCodes(r.recovery_codes);
        onChange(status);
      } catch (x) { err.textContent = x.message; }
    });
    // The secret in groups of four, as authenticator apps show typed keys.
    const grouped = setup.secret.match(/.{1,4}/g).join(" ");
    clear(card, title(),
      h("ol", { class: "mfa-steps" },
        h("li", null, "In your authenticator app, add an account and scan this QR code:",
          h("img", { src: setup.qr_code, alt: "QR code of your two-factor secret for tuxlab", width: 192, height: 192, class: "qr" })),
        h("li", null, "Or type the key instead: ", h("code", { class: "secret", id: "mfa-secret" }, grouped)),
        h("li", null, "Enter the 6-digit code the app shows now.")),
      f);
    f.code.focus();
  }

  function drawCodes(codes) {
    const list = h("ul", { class: "recovery-codes", "aria-label": "Recovery codes" }, codes.map((c) => h("li", null, h("code", null, c))));
    const copy = h("button", { type: "button", class: "ghost" }, "Copy the codes");
    copy.addEventListener("click", async () => {
      try { await navigator.clipboard.writeText(codes.join("\n") + "\n"); toast("Recovery codes copied"); } catch { toast("Copying is not allowed here: write the codes down", "error"); }
    });
    clear(card, title(),
      h("p", { class: "notice", role: "status" }, "Two-factor sign-in is on."),
      h("p", null, h("strong", null, "Save these recovery codes now. "),
        "Each signs you in once instead of a code, should you lose your phone. They are not shown again."),
      list,
      h("p", { class: "lab-actions" }, copy, h("button", { type: "button", onclick: drawOn }, "I have saved them")));
  }

  function drawOn() {
    const err = h("p", { class: "error", role: "alert" });
    const f = h("form", null,
      h("p", { class: "field" }, h("label", { for: "mfa-off-password" }, "Password"),
        h("input", { id: "mfa-off-password", name: "password", type: "password", autocomplete: "current-password", required: true })),
      h("p", { class: "field" }, h("label", { for: "mfa-off-code" }, "Code from the app, or a recovery code"),
        h("input", { id: "mfa-off-code", name: "code", autocomplete: "one-time-code", required: true })),
      err, h("button", { type: "submit", class: "danger" }, "Turn off"));
    f.addEventListener("submit", async (e) => {
      e.preventDefault();
      err.textContent = "";
      try {
        await api("POST", "/api/auth/mfa/disable", { body: Object.fromEntries(new FormData(f)) });
        status = await api("GET", "/api/auth/mfa");
        toast("Two-factor sign-in is off");
        drawOff();
        onChange(status);
      } catch (x) { err.textContent = x.message; }
    });
    const left = status.recovery_codes_left;
    clear(card, title(),
      h("p", null, `On since ${fmtDate(status.enabled_at)}. ${left} recovery code${left === 1 ? "" : "s"} left.`),
      left <= 2 ? h("p", { class: "notice" }, "Few recovery codes left: turn two-factor sign-in off and on again for ten new ones.") : null,
      h("details", null, h("summary", null, "Turn two-factor sign-in off"), f));
  }

  if (status.enabled) drawOn(); else drawOff();
  return card;
}
