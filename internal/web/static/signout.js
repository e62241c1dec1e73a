// Signing out, shared by the navigation bar (app.js) and the profile page.
// It lives apart from app.js so that no page module imports the router that
// imports it: the router hears of the sign-out through an event.
import { api } from "./api.js";

/** signOut revokes the session's token and every older one (so every tab
 * and terminal of the account ends), has the server clear the session
 * cookies, and tells the router (event "tuxlab:signout"), which goes to the
 * sign-in page. */
export async function signOut() {
  // Leave the page first (event "tuxlab:leave": its terminal closes), so no
  // open terminal hears of the revoked token and reports it as an error.
  window.dispatchEvent(new CustomEvent("tuxlab:leave"));
  try { await api("POST", "/api/auth/logout", { noSignOut: true }); } catch { /* gone anyway */ }
  forgetTerminals();
  window.dispatchEvent(new CustomEvent("tuxlab:signout"));
}

/** forgetTerminals drops the terminal session ids this browser kept
 * (terminal.js): logout ended those shells, and the next person to sign in
 * here has no use for them. */
function forgetTerminals() {
  try {
    for (const k of Object.keys(localStorage)) if (k.startsWith("tuxlab.term.")) localStorage.removeItem(k);
  } catch { /* no storage: nothing kept */ }
}
