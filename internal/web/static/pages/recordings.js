// Terminal recordings (docs/terminal.md, "Recordings"): the list of the
// learner's own (or of one sandbox's, ?container=ID, for its owner and the
// instructors of their class), and the replay of one in asciinema-player,
// vendored like xterm.js and loaded as a classic script of this origin.
import { api } from "../api.js";
import { h, clear, toast, fmtDate, fmtClock } from "../dom.js";

const PLAYER_JS = new URL("../vendor/asciinema-player/asciinema-player.min.js", import.meta.url).href;
const PLAYER_CSS = new URL("../vendor/asciinema-player/asciinema-player.css", import.meta.url).href;

let playerLoad = null;
/** loadPlayer loads asciinema-player's bundle and stylesheet once per page load. */
function loadPlayer() {
  if (!playerLoad) {
    playerLoad = new Promise((resolve, reject) => {
      document.head.append(h("link", { rel: "stylesheet", href: PLAYER_CSS }));
      const s = h("script", { src: PLAYER_JS });
      s.onload = () => (window.AsciinemaPlayer ? resolve(window.AsciinemaPlayer) : reject(new Error("The player did not load")));
      s.onerror = () => { playerLoad = null; reject(new Error("The player could not be loaded")); };
      document.head.append(s);
    });
  }
  return playerLoad;
}

/** what says what a recording was of. */
function what(r) {
  if (r.attempt_kind === "lab") return `Laboratory attempt #${r.attempt_id}`;
  if (r.attempt_kind === "exam") return `Exam attempt #${r.attempt_id}`;
  return "Free play";
}

/** duration is how long a recorded session lasted, or that it still runs. */
function duration(r) {
  if (!r.ended_at) return "still running";
  return fmtClock((Date.parse(r.ended_at) - Date.parse(r.started_at)) / 1000);
}

function size(bytes) {
  return bytes < 1024 ? `${bytes} B` : bytes < 1 << 20 ? `${(bytes / 1024).toFixed(1)} KiB` : `${(bytes / (1 << 20)).toFixed(1)} MiB`;
}

/** list draws the recordings. */
export async function list(ctx) {
  const container = ctx.query.get("container");
  const path = container ? `/api/containers/${encodeURIComponent(container)}/recordings` : "/api/recordings";
  const rs = await api("GET", path);
  ctx.title("Recordings");
  const body = h("tbody");
  const draw = (items) => clear(body, items.map((r) => {
    const mine = r.user_id === ctx.me.id;
    const del = mine ? h("button", { type: "button", class: "small ghost", "aria-label": `Delete recording ${r.id}` }, "Delete") : null;
    if (del) del.addEventListener("click", async () => {
      if (!confirm("Delete this recording for good?")) return;
      try {
        await api("DELETE", r.url);
        items = items.filter((x) => x.id !== r.id);
        draw(items);
        toast("Recording deleted");
      } catch (e) { toast(e.message, "error"); }
    });
    return h("tr", { dataset: { recordingId: r.id } },
      h("td", null, `${r.container_name} #${r.container_id}`),
      h("td", null, what(r)),
      h("td", null, fmtDate(r.started_at)),
      h("td", null, duration(r)),
      h("td", null, size(r.bytes), r.truncated ? h("span", { class: "badge warn", title: "The session printed more than a recording keeps: the rest was dropped" }, " truncated") : null),
      h("td", { class: "actions" },
        h("a", { href: `/recordings/${r.id}`, "aria-label": `Replay recording ${r.id}` }, "Replay"), " ",
        h("a", { href: r.url, download: `recording-${r.id}.cast`, "aria-label": `Download .cast of recording ${r.id}` }, "Download .cast"), " ",
        del));
  }));
  draw(rs);
  clear(ctx.main,
    h("h1", null, container ? `Recordings of sandbox #${container}` : "Your terminal recordings"),
    h("p", { class: "muted" }, "Terminals of laboratory and exam attempts are recorded; a lesson's terminal only when you tick its Record box. " +
      "Output only: what you type shows as the terminal echoed it, so passwords typed at a hidden prompt are not in them. " +
      "The teachers of your classes can replay them too. They are deleted after a retention period (30 days unless your site says otherwise)."),
    rs.length
      ? h("div", { class: "table-wrap" }, h("table", { class: "recordings" },
        h("thead", null, h("tr", null, ["Sandbox", "Of", "Started", "Length", "Size", "Actions"].map((t) => h("th", { scope: "col" }, t)))), body))
      : h("p", { class: "empty" }, "No recordings yet."));
}

/** render replays recording ctx.params[0]. */
export async function render(ctx) {
  const id = Number(ctx.params[0]);
  const url = `/api/recordings/${id}`;
  const res = await fetch(url, { credentials: "same-origin" });
  if (!res.ok) {
    const err = new Error(res.status === 404 ? "This recording does not exist, or is not yours to see" : `The server answered ${res.status}`);
    err.status = res.status;
    throw err;
  }
  const cast = await res.text();
  let header = {};
  try { header = JSON.parse(cast.slice(0, cast.indexOf("\n"))); } catch { /* the player says what is wrong */ }
  ctx.title(`Recording ${id}`);
  const box = h("div", { class: "player", "aria-label": "Replay of the terminal session" });
  clear(ctx.main,
    h("p", null, h("a", { href: "/recordings" }, "← Your recordings")),
    h("h1", null, `Recording ${id}: ${header.title || "terminal"}`),
    h("p", { class: "muted" }, header.timestamp ? `Recorded ${fmtDate(new Date(header.timestamp * 1000).toISOString())}, ${header.width}×${header.height}. ` : "",
      "Space plays and pauses; the arrow keys step through it."),
    box,
    h("p", null, h("a", { href: url, download: `recording-${id}.cast`, class: "button secondary" }, "Download .cast")));
  const Player = await loadPlayer();
  if (!ctx.current()) return;
  const player = Player.create({ data: cast }, box, { fit: "width", autoPlay: true, controls: true, idleTimeLimit: 2, theme: "asciinema" });
  ctx.cleanup(() => player.dispose());
}
