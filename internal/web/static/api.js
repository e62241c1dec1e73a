// The JSON API client. The session is a cookie the server sets at sign-in
// (HttpOnly: no script here can read the token, so neither can an injected
// one) and the browser sends with every same-origin request, in every tab.
// Requests that change something also carry the CSRF proof, which the server
// hands out in the readable cookie tuxlab_csrf: another site can make a
// browser send the cookie, but it cannot read the proof (docs/web.md).
import { learnerWords } from "./words.js";

/** cookie returns the value of the readable cookie name, or "". */
function cookie(name) {
  for (const part of document.cookie.split(";")) {
    const [k, ...v] = part.trim().split("=");
    if (k === name) return decodeURIComponent(v.join("="));
  }
  return "";
}

export const session = {
  /** csrf is the proof unsafe requests carry (X-CSRF-Token). */
  csrf: () => cookie("tuxlab_csrf"),
};

const UNSAFE = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/** ApiError is a non-2xx answer: status, the readable detail, the body and the response. */
export class ApiError extends Error {
  constructor(status, detail, body, res) {
    super(learnerWords(detail, status, body)); // words a learner knows (words.js)
    this.status = status;
    this.body = body;
    this.res = res;
  }
}

/** detailText turns the contract's error body into one readable line. */
export function detailText(body, status) {
  const d = body && body.detail;
  if (typeof d === "string") return d;
  if (Array.isArray(d)) return d.map((e) => `${(e.loc || []).slice(1).join(".") || "request"}: ${e.msg}`).join("; ");
  return `The server answered ${status}`;
}

/**
 * api calls the API. opts: body (sent as JSON, or as is when FormData or a
 * string with a contentType), query (an object), headers (an object), full
 * (return {data, res}), noSignOut (a 401 does not end the session here).
 */
export async function api(method, path, opts = {}) {
  const headers = new Headers(opts.headers || {});
  if (UNSAFE.has(method) && session.csrf()) headers.set("X-CSRF-Token", session.csrf());
  let body;
  if (opts.body instanceof FormData) body = opts.body;
  else if (typeof opts.body === "string") { body = opts.body; headers.set("Content-Type", opts.contentType || "text/plain"); }
  else if (opts.body !== undefined) { body = JSON.stringify(opts.body); headers.set("Content-Type", "application/json"); }
  let url = path;
  if (opts.query) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(opts.query)) if (v !== undefined && v !== null && v !== "") q.set(k, v);
    if ([...q].length) url += "?" + q;
  }
  let res;
  try {
    res = await fetch(url, { method, headers, body, credentials: "same-origin" });
  } catch (e) {
    throw new ApiError(0, "The server cannot be reached: check your connection", null, null);
  }
  let data = null;
  if ((res.headers.get("Content-Type") || "").includes("application/json")) data = await res.json().catch(() => null);
  if (!res.ok) {
    if (res.status === 401 && !opts.noSignOut) {
      window.dispatchEvent(new CustomEvent("tuxlab:signedout", { detail: detailText(data, 401) }));
    }
    throw new ApiError(res.status, detailText(data, res.status), data, res);
  }
  return opts.full ? { data, res } : data;
}

/** serverOffset is server time minus this clock, in ms, from a response's Date header. */
export function serverOffset(res) {
  const d = res && Date.parse(res.headers.get("Date") || "");
  return d ? d - Date.now() : 0;
}
