// Words a learner knows. The API's error details are written for API
// clients ("Theme not found"); learnerWords turns the ones a learner can meet
// into what the page should say, in this one place. api.js calls it for every
// error it throws; a detail not listed here is shown as the server wrote it.

/** exact maps a detail to the learner's words. */
const exact = new Map([
  ["Theme not found", "This lesson does not exist (any more)."],
  ["Module not found", "This module does not exist (any more)."],
  ["Laboratory not found", "This laboratory does not exist (any more)."],
  ["No such lab", "This laboratory does not exist (any more)."],
  ["This section has no laboratory", "This module has no laboratory."],
  ["Exam not found", "This exam does not exist (any more)."],
  ["Attempt not found", "This attempt does not exist (any more)."],
  ["Container not found", "This sandbox does not exist any more."],
  ["Container no longer exists in the engine", "This sandbox does not exist any more: delete it from your dashboard."],
  ["Container is not running: start it first", "This sandbox is stopped: start it first."],
  ["Sandbox template not found", "This kind of sandbox does not exist (any more)."],
  ["User not found", "This account does not exist (any more)."],
  ["Not Found", "This does not exist (any more)."],
  ["Not authenticated", "Please sign in first."],
  ["Could not validate credentials", "Your session ended: please sign in again."],
  ["Admin access required", "Only an administrator can do this."],
  ["User account is inactive", "This account is switched off: ask an administrator to switch it on."],
  ["Username already registered", "This username is taken: choose another one."],
  ["Email already registered", "This e-mail address already has an account: sign in instead."],
  ["Username or email already registered", "This username or e-mail address already has an account."],
  ["Request body too large", "That is too large to send."],
  ["Current password is incorrect", "Your current password is not right."],
  ["Password reset is off: this server has no mail server configured (TUXLAB_SMTP_URL); ask an administrator",
    "This server cannot send mail, so it cannot reset passwords: ask an administrator to reset yours."],
  ["This password reset link is not valid: ask for a new one", "This link is not valid (perhaps it was cut short): ask for a new one."],
  ["This password reset link was already used (or a newer one was): ask for a new one", "This link was already used, or a newer one was: ask for a new one."],
  ["This password reset link has expired: ask for a new one", "This link has expired (links work for an hour): ask for a new one."],
  ["Too many attempts, try again later", "Too many tries: wait a minute and try again."],
  ["Class not found", "This class does not exist (any more), or you are not in it."],
  ["No class has this join code", "No class has this join code: check it with your teacher."],
  ["Not a learner of this class", "You are not in this class (any more)."],
  ["Instructor access required", "Only an instructor can do this."],
  ["Too many join attempts, try again later", "Too many join codes tried: wait a minute, then try again."],
  ["You teach this class: learners join it", "You teach this class: your learners join it with its code."],
  ["This class already has an assignment of this item: delete it to set another due date", "This class already has this assignment: delete it to set another due date."],
  ["Two-factor code required", "This account has two-factor sign-in: enter the code your authenticator app shows, or a recovery code."],
  ["Incorrect two-factor code", "That code is not right or was used already: enter the app's next code, or a recovery code."],
  ["Two-factor sign-in is required for your role: turn it on first (POST /api/auth/mfa/setup, then POST /api/auth/mfa/enable)",
    "Your administrator requires two-factor sign-in for your role: turn it on in your profile first."],
  ["Two-factor sign-in is already on: turn it off first", "Two-factor sign-in is already on."],
  ["No two-factor setup is pending: call POST /api/auth/mfa/setup first", "Start again with “Set up two-factor sign-in”."],
]);

/** patterns rewrite details that carry numbers. */
const patterns = [
  [/^Sandbox quota reached: you have (\d+) of (\d+) sandboxes; delete one first$/,
    (m) => `You have ${m[1]} of the ${m[2]} sandboxes you may keep: delete one on your dashboard first.`],
  [/^Running sandbox quota reached: (\d+) of (\d+) are running; stop one first$/,
    (m) => `${m[1]} of the ${m[2]} sandboxes you may run are running: stop one on your dashboard first.`],
  [/^Too many terminals open on this sandbox \(at most (\d+)\): close one first$/,
    (m) => `Too many terminals are open on this sandbox (at most ${m[1]}): close one in another tab first.`],
  [/^The server answered 5\d\d$/, () => "Something went wrong on our side: please try again in a moment."],
];

/** fieldNames are the request fields a learner fills in, by their form label. */
const fieldNames = {
  username: "Username", email: "E-mail", password: "Password", full_name: "Full name", bio: "Bio",
  current_password: "Current password", new_password: "New password", file: "Avatar", answers: "Answers",
  name: "Name", code: "Join code", due_at: "Due date", item_id: "Item", kind: "Kind",
  code: "Code",
};

/** fieldMessage turns one entry of a 422 list into a sentence. */
function fieldMessage(e) {
  const loc = (e.loc || []).slice(1);
  const name = fieldNames[loc[loc.length - 1]];
  let msg = String(e.msg || "").replace(/^Field required(: .*)?$/, "This is required");
  msg = msg.replace(/^value is not a valid email address: /, "");
  if (!name) return `${loc.join(".") || "request"}: ${msg}`;
  // "Password must be …" already names its field.
  return msg.startsWith(name) || msg.startsWith("The " + name.toLowerCase()) ? msg : `${name}: ${msg}`;
}

/**
 * learnerWords returns what the page shows for an API error: detail is the
 * readable line api.js made of the body, status the HTTP status, body the
 * contract's error body (its detail a string or the 422 list).
 */
export function learnerWords(detail, status, body) {
  const d = body && body.detail;
  if (Array.isArray(d) && d.length) return d.map(fieldMessage).join("; ");
  const text = typeof d === "string" ? d : detail;
  if (exact.has(text)) return exact.get(text);
  for (const [re, fn] of patterns) {
    const m = re.exec(text);
    if (m) return fn(m);
  }
  if (status === 502 || status === 503 || status === 504) return "The server is busy or restarting: please try again in a moment.";
  if (status >= 500 && !(typeof d === "string")) return "Something went wrong on our side: please try again in a moment.";
  return text;
}
