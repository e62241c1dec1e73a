// A lesson beside a live terminal on the learner's practice sandbox.
import { api } from "../api.js";
import { h, clear, toast, rendered } from "../dom.js";
import { TerminalPanel } from "../terminal.js";
import { lessonSandbox } from "../sandbox.js";
import { previewControl } from "../preview.js";

/** split lays out a reading pane and a terminal pane, with tabs on small screens. */
export function split(ctx, left, right, labels = ["Lesson", "Terminal"]) {
  const tabs = h("div", { class: "pane-tabs", role: "tablist" },
    labels.map((l, i) => h("button", { type: "button", role: "tab", "aria-selected": i === 0 ? "true" : "false", onclick: () => show(i) }, l)));
  const wrap = h("div", { class: "split", dataset: { show: "0" } }, tabs, h("div", { class: "pane read" }, left), h("div", { class: "pane run" }, right));
  function show(i) {
    wrap.dataset.show = String(i);
    tabs.querySelectorAll("button").forEach((b, j) => b.setAttribute("aria-selected", i === j ? "true" : "false"));
  }
  clear(ctx.main, wrap);
  return { wrap, show };
}

/** render draws lesson ctx.params[0]. */
export async function render(ctx) {
  const id = Number(ctx.params[0]);
  const [theme, content, modules] = await Promise.all([
    api("GET", `/api/lessons/themes/${id}`),
    api("GET", `/api/lessons/themes/${id}/content`),
    api("GET", "/api/lessons/modules"),
  ]);
  const mod = modules.find((m) => m.id === theme.module_id);
  const lab = await api("GET", `/api/laboratories/section/${theme.module_id}/laboratory`).catch(() => null);
  ctx.title(theme.title);

  const body = rendered(content.html, { cls: "prose lesson-body" });
  const doneBtn = h("button", { type: "button", "data-focus-after-terminal": "" }, theme.completed ? "Completed ✓" : "Mark as completed");
  if (theme.completed) doneBtn.classList.add("ghost");
  doneBtn.addEventListener("click", async () => {
    try {
      await api("POST", `/api/lessons/themes/${id}/complete`);
      doneBtn.textContent = "Completed ✓";
      doneBtn.classList.add("ghost");
      toast("Lesson completed");
    } catch (e) { toast(e.message, "error"); }
  });
  const nav = h("nav", { class: "lesson-nav", "aria-label": "Lessons" },
    theme.previous_theme_id ? h("a", { href: `/lessons/${theme.previous_theme_id}`, rel: "prev" }, "← Previous") : h("span"),
    doneBtn,
    theme.next_theme_id ? h("a", { href: `/lessons/${theme.next_theme_id}`, rel: "next", class: "button" }, "Next →") : h("span"));
  const left = h("article", { class: "lesson" },
    h("p", { class: "crumbs" }, h("a", { href: `/#module-${theme.module_id}` }, mod ? mod.title : "Curriculum"), ` · ${theme.estimated_minutes} min`),
    body,
    lab ? h("p", { class: "lab-link" }, "Practise the whole module: ", h("a", { href: `/labs/${lab.id}` }, lab.title)) : null,
    nav);
  // The Markdown's own title is the page's heading.
  if (!body.querySelector("h1")) left.prepend(h("h1", null, theme.title));

  const termBox = h("div", { class: "term-box" });
  const layout = split(ctx, left, termBox);
  // A module's lessons practise on the template its laboratory runs in (a
  // machine for the storage-on-a-machine module), else on the default one.
  const templateId = lab ? lab.template_id : undefined;
  const panel = new TerminalPanel(termBox, { getSandbox: (say) => lessonSandbox(say, templateId), title: "Your sandbox", recordable: true });
  panel.root.append(previewControl(panel));
  panel.start();
  ctx.cleanup(() => panel.dispose());
  codeButtons(body, panel, layout);
}

/** shells are the code blocks' languages whose text is commands. */
const shells = new Set(["console", "bash", "sh", "shell", "shell-session"]);

/**
 * commandsOf returns what a code block asks the learner to type, or "" when
 * it shows no command. A console block (commands after "$ ", their output
 * below) gives its commands without the prompt, with "> " continuation lines
 * (a here-document) kept; a bash or sh block is all commands. Trailing
 * newlines are dropped: nothing runs until the learner presses Enter.
 */
export function commandsOf(code) {
  const lang = ((code.className || "").match(/language-([\w+-]+)/) || [])[1] || "";
  const text = code.textContent;
  if (!shells.has(lang)) return "";
  if (lang !== "console" && lang !== "shell-session") return text.replace(/\n+$/, "");
  const out = [];
  let inCommand = false;
  for (const line of text.split("\n")) {
    if (/^\$ /.test(line)) { out.push(line.slice(2)); inCommand = true; }
    else if (inCommand && /^> ?/.test(line)) out.push(line.replace(/^> ?/, ""));
    else inCommand = false;
  }
  return out.join("\n");
}

/**
 * codeButtons gives each code block of the lesson a Copy button (the
 * commands of a console block, else its text) and, for a block of commands,
 * "Run in terminal", which types them into the shell beside the lesson; the
 * learner reads them at the prompt and presses Enter (docs/web.md).
 */
function codeButtons(body, panel, layout) {
  body.querySelectorAll("pre > code").forEach((code, i) => {
    const pre = code.parentElement;
    const cmds = commandsOf(code);
    const copyText = cmds || code.textContent.replace(/\n+$/, "");
    const what = cmds ? "commands" : "text";
    const said = h("span", { class: "sr", role: "status" });
    const copyBtn = h("button", { type: "button", class: "small ghost", "aria-label": `Copy the ${what}: code block ${i + 1}` }, "Copy");
    copyBtn.addEventListener("click", async () => {
      try {
        await navigator.clipboard.writeText(copyText);
      } catch {
        toast("The browser refused the clipboard: select the text and copy it", "error");
        return;
      }
      copyBtn.textContent = "Copied ✓";
      copyBtn.dataset.state = "copied";
      said.textContent = "Copied";
      setTimeout(() => { copyBtn.textContent = "Copy"; delete copyBtn.dataset.state; said.textContent = ""; }, 2000);
    });
    const runBtn = cmds ? h("button", { type: "button", class: "small ghost", "aria-label": `Run in terminal: code block ${i + 1}` }, "Run in terminal") : null;
    runBtn?.addEventListener("click", () => {
      if (!panel.isOpen()) { toast("The terminal is not connected yet: wait for its prompt", "error"); return; }
      layout.show(1); // on a phone the terminal is the other tab
      if (typeof panel.typeText === "function") panel.typeText(cmds);
      else panel.term.paste(cmds);
      panel.focus();
      toast("Typed into the terminal: press Enter to run it");
    });
    const wrap = h("div", { class: "code-block" });
    pre.replaceWith(wrap);
    wrap.append(h("div", { class: "code-tools" }, copyBtn, runBtn, said), pre);
  });
}
