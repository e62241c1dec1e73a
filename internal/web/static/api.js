// The JSON API client. The token lives in this tab's sessionStorage: it is
// sent as a bearer header (never a cookie, so no request can be forged from
// another site), and it is gone when the tab closes.
import { learnerWords } from "./words.js";
const KEY = "tuxlab.token";

export const session = {
  token: () => sessionStorage.getItem(KEY),
  set: (t) => sessionStorage.setItem(KEY, t),
  clear: () => { sessionStorage.removeItem(KEY); sessionStorage.removeItem("tuxlab.me"); },
};

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
 * string with a contentType), query (an object), full (return {data, res}).
 */
export async function api(method, path, opts = {}) {
  const headers = new Headers();
  const token = session.token();
  if (token) headers.set("Authorization", "Bearer " + token);
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
    res = await fetch(url, { method, headers, body });
  } catch (e) {
    throw new ApiError(0, "The server cannot be reached: check your connection", null, null);
  }
  let data = null;
  if ((res.headers.get("Content-Type") || "").includes("application/json")) data = await res.json().catch(() => null);
  if (!res.ok) {
    if (res.status === 401 && token && !opts.noSignOut) {
      session.clear();
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
