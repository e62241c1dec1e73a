// Finding the learner's sandbox for a terminal: the one this tab used, or a
// running one, or a stopped one started again, or a new one from the template.
import { api } from "./api.js";

const REMEMBER = "tuxlab.sandbox";
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** running returns container c once it runs, starting it when stopped. */
export async function running(c, say = () => {}) {
  for (let i = 0; c.status === "creating" && i < 120; i++) {
    say("Your sandbox is being created…");
    await sleep(1000);
    c = await api("GET", `/api/containers/${c.id}`);
  }
  if (c.status === "stopped") {
    say("Starting your sandbox…");
    c = await api("POST", `/api/containers/${c.id}/start`);
  }
  if (c.status !== "running") throw Object.assign(new Error(c.status_detail || `The sandbox is ${c.status}`), { status: 409 });
  return c;
}

/** containerById returns that sandbox, running. */
export async function containerById(id, say) {
  return running(await api("GET", `/api/containers/${id}`), say);
}

/**
 * lessonSandbox returns the learner's practice sandbox (not a lab's or an
 * exam attempt's), running:
 * templateId picks the template (default: Debian, else the first).
 */
export async function lessonSandbox(say = () => {}, templateId) {
  const list = await api("GET", "/api/containers/sandbox");
  // Labs and exam attempts have sandboxes of their own, which go with them.
  let usable = list.filter((c) => !c.name.startsWith("Lab: ") && !c.name.startsWith("Exam: ") && c.status !== "error");
  if (templateId) usable = usable.filter((c) => c.template_id === templateId);
  const remembered = Number(sessionStorage.getItem(REMEMBER));
  let c = usable.find((c) => c.id === remembered) || usable.find((c) => c.status === "running") || usable[0];
  if (!c) {
    say("Creating your sandbox…");
    let tid = templateId;
    if (!tid) {
      const templates = await api("GET", "/api/sandbox-templates");
      const t = templates.find((t) => t.name === "Debian") || templates[0];
      if (!t) throw new Error("No sandbox template exists yet: ask an admin");
      tid = t.id;
    }
    c = await api("POST", "/api/containers/create", { body: { template_id: tid, name: "Practice" } });
  }
  c = await running(c, say);
  sessionStorage.setItem(REMEMBER, String(c.id));
  return c;
}

/**
 * quotaChoices answers a start refused because the sandbox quota is reached
 * (409): it lists the learner's running sandboxes, each with the one click
 * that frees a place, "Stop “Lab: …” and start", which stops that sandbox and
 * calls retry. It returns an element to show under the refusal.
 */
export async function quotaChoices(retry) {
  const box = document.createElement("div");
  box.className = "quota-choices";
  const list = await api("GET", "/api/containers/sandbox").catch(() => []);
  const running = list.filter((c) => c.status === "running");
  if (!running.length) return box;
  const p = document.createElement("p");
  p.textContent = "Free a place: stop one of your running sandboxes (its files stay; it starts again when you open it).";
  box.append(p);
  for (const c of running) {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "secondary";
    b.textContent = `Stop “${c.name}” and start`;
    b.addEventListener("click", async () => {
      box.querySelectorAll("button").forEach((x) => { x.disabled = true; });
      try {
        await api("POST", `/api/containers/${c.id}/stop`);
        await retry();
      } catch (e) {
        p.textContent = e.message;
        box.querySelectorAll("button").forEach((x) => { x.disabled = false; });
      }
    });
    box.append(" ", b);
  }
  return box;
}
