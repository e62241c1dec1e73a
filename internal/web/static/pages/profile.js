// The profile: avatar upload and removal, name, bio, e-mail, password.
import { api } from "../api.js";
import { h, clear, toast } from "../dom.js";
import { signOut } from "../signout.js";
import { section as twoFactor } from "./mfa.js";

/** render draws the caller's profile. */
export async function render(ctx) {
  ctx.title("Profile");
  let p = await api("GET", "/api/profile/me");
  const avatar = h("div", { class: "avatar-box" });
  const nameEl = h("p", { class: "big" });
  const fileInput = h("input", { type: "file", id: "avatar-file", accept: "image/png,image/jpeg,image/gif,image/webp", class: "sr-file" });
  const removeBtn = h("button", { type: "button", class: "ghost" }, "Remove");
  function drawAvatar() {
    clear(avatar, p.avatar_url
      ? h("img", { src: p.avatar_url, alt: `Avatar of ${p.username}`, width: 128, height: 128, class: "avatar" })
      : h("div", { class: "avatar none", "aria-label": "No avatar" }, (p.full_name || p.username).slice(0, 1).toUpperCase()));
    removeBtn.hidden = !p.avatar_url;
    nameEl.textContent = p.full_name || p.username;
    window.dispatchEvent(new CustomEvent("tuxlab:profile", { detail: p })); // the navigation's profile link
  }
  fileInput.addEventListener("change", async () => {
    const f = fileInput.files[0];
    if (!f) return;
    const fd = new FormData();
    fd.append("file", f);
    try {
      p = await api("POST", "/api/profile/avatar", { body: fd });
      drawAvatar();
      toast("Avatar updated");
    } catch (e) { toast(e.message, "error"); }
    fileInput.value = "";
  });
  removeBtn.addEventListener("click", async () => {
    try { p = await api("DELETE", "/api/profile/avatar"); drawAvatar(); toast("Avatar removed"); } catch (e) { toast(e.message, "error"); }
  });
  drawAvatar();

  const err = h("p", { class: "error", role: "alert" });
  const info = h("form", { class: "card" },
    h("h2", null, "About you"),
    h("p", { class: "field" }, h("label", { for: "p-name" }, "Full name"), h("input", { id: "p-name", name: "full_name", value: p.full_name, maxlength: 100, autocomplete: "name" })),
    h("p", { class: "field" }, h("label", { for: "p-email" }, "E-mail"), h("input", { id: "p-email", name: "email", type: "email", value: p.email, autocomplete: "email" })),
    h("p", { class: "field" }, h("label", { for: "p-bio" }, "Bio"), h("textarea", { id: "p-bio", name: "bio", rows: 4, maxlength: 1000 }, p.bio)),
    err, h("button", { type: "submit" }, "Save"));
  info.addEventListener("submit", async (e) => {
    e.preventDefault();
    err.textContent = "";
    const v = Object.fromEntries(new FormData(info));
    try { p = await api("PUT", "/api/profile/me", { body: v }); drawAvatar(); toast("Profile saved"); } catch (x) { err.textContent = x.message; }
  });

  const perr = h("p", { class: "error", role: "alert" });
  const pw = h("form", { class: "card" },
    h("h2", null, "Password"),
    h("p", { class: "field" }, h("label", { for: "pw-cur" }, "Current password"), h("input", { id: "pw-cur", name: "current_password", type: "password", autocomplete: "current-password", required: true })),
    h("p", { class: "field" }, h("label", { for: "pw-new" }, "New password"), h("input", { id: "pw-new", name: "new_password", type: "password", autocomplete: "new-password", required: true, minlength: 8 })),
    perr, h("button", { type: "submit" }, "Change password"));
  pw.addEventListener("submit", async (e) => {
    e.preventDefault();
    perr.textContent = "";
    try {
      await api("PUT", "/api/profile/password", { body: Object.fromEntries(new FormData(pw)), noSignOut: true });
      // The server has set the new token's cookies: the old token no longer works.
      pw.reset();
      toast("Password changed");
    } catch (x) { perr.textContent = x.message; }
  });

  // Two-factor sign-in: once it is on, the signed-in user is read again, so
  // the pages the install's rule held back open at once.
  const mfa = await twoFactor(async () => { ctx.signedIn(await api("GET", "/api/auth/me")); });

  clear(ctx.main,
    h("h1", null, "Your profile"),
    h("div", { class: "columns" },
      h("section", { class: "card profile-card" }, avatar,
        h("div", null,
          nameEl,
          h("p", { class: "muted" }, `@${p.username} · ${p.role}`),
          h("p", { class: "avatar-actions" }, h("label", { for: "avatar-file", class: "button", tabindex: 0, onkeydown: (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); fileInput.click(); } } }, "Upload an avatar"), fileInput, removeBtn),
          h("p", { class: "muted small" }, "PNG, JPEG, GIF or WebP, at most 2 MiB; it is cropped to a square."),
          h("p", { class: "narrow-only" }, h("button", { type: "button", class: "ghost", onclick: signOut }, "Sign out")))),
      h("div", null, info, pw, mfa)));
  if (ctx.me.mfa_setup_required) mfa.scrollIntoView();
}
