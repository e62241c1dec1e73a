// What learner.mjs (desktop) and phone.mjs share: the browser, named steps
// that stop the run on the first failure (or a CSP violation or script
// error), numbered screenshots, axe in both colour schemes, and the terminal
// as the learner sees it (the rows xterm.js draws).
import { chromium } from "playwright-core";
import { axe } from "./axe.mjs";
import { mkdirSync } from "node:fs";
import { join } from "node:path";

/** launch starts headless Chromium ($CHROMIUM, default /usr/bin/chromium). */
export function launch() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    // Chromium's own sandbox cannot run as root (CI runs as root).
    args: process.getuid && process.getuid() === 0 ? ["--no-sandbox"] : [],
  });
}

/** expect throws msg unless cond holds. */
export function expect(cond, msg) { if (!cond) throw new Error(msg); }

/**
 * harness drives h.page (replace it to drive another tab): step, shot,
 * check (axe in both schemes and a dark screenshot), and the terminal's
 * screen, waitScreen, connected and run. Screenshots land in shots.
 */
export function harness(browser, page, shots) {
  mkdirSync(shots, { recursive: true });
  const problems = [];
  let n = 0;
  const h = {
    page,
    /** watch reports CSP violations and script errors of p as failures. */
    watch(p) {
      p.on("console", (m) => {
        const t = m.text();
        if (/Content.Security.Policy|Refused to/i.test(t)) problems.push(`CSP: ${t}`);
        else if (m.type() === "error" && !/Failed to load resource/.test(t)) console.log(`  (console error: ${t})`);
      });
      p.on("pageerror", (e) => problems.push(`script error: ${e.message}`));
      p.on("dialog", (d) => d.accept());
    },
    async shot(name, full = false) {
      const file = join(shots, `${String(++n).padStart(2, "0")}-${name}.png`);
      await h.page.screenshot({ path: file, fullPage: full });
      console.log(`  screenshot ${file}`);
    },
    /** check runs axe in both schemes (axe.mjs) and saves the page in dark too. */
    async check(name, opts = {}) {
      await axe(h.page, name, opts);
      await h.page.emulateMedia({ colorScheme: "dark" });
      await h.shot(`${name.replace(/\W+/g, "-")}-dark`, opts.full);
      await h.page.emulateMedia({ colorScheme: null });
    },
    async step(name, fn) {
      const t0 = Date.now();
      process.stdout.write(`- ${name}\n`);
      try {
        await fn();
      } catch (e) {
        console.error(`FAIL: ${name}: ${e.message}`);
        await h.page.screenshot({ path: join(shots, `failed-${name.replace(/\W+/g, "-")}.png`) }).catch(() => {});
        await browser.close();
        process.exit(1);
      }
      if (problems.length) {
        console.error(`FAIL: ${name}:\n  ${problems.join("\n  ")}`);
        await browser.close();
        process.exit(1);
      }
      console.log(`  ok (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
    },
    screen: () => h.page.evaluate(() => (document.querySelector(".term-host .xterm-rows")?.innerText || "").replace(/\u00a0/g, " ")),
    async waitScreen(re, timeout = 20000) {
      try {
        await h.page.waitForFunction(([src, flags]) => new RegExp(src, flags).test((document.querySelector(".term-host .xterm-rows")?.innerText || "").replace(/\u00a0/g, " ")),
          [re.source, re.flags], { timeout, polling: 100 });
      } catch {
        throw new Error(`the terminal never showed ${re}; it shows:\n${await h.screen()}`);
      }
    },
    async connected(timeout = 90000) {
      await h.page.waitForSelector('.term[data-state="connected"]', { timeout });
      await h.waitScreen(/\$ *$/m, 30000); // the shell's prompt
    },
    async run(cmd) {
      await h.page.click(".term-host .xterm-screen");
      await h.page.keyboard.type(cmd);
      await h.page.keyboard.press("Enter");
    },
  };
  h.watch(page);
  return h;
}

// The commands that solve the first module's laboratory, as its lessons teach them.
export const solveLabOne = [
  "mkdir -p webapp/releases/{v1,v2} webapp/shared/{config,logs} && echo made-$((1+1))",
  "cp incoming/app.conf webapp/shared/config/app.conf && mv incoming/index.html webapp/releases/v2/ && ln -s releases/v2 webapp/current && " +
    "ln webapp/shared/config/app.conf webapp/releases/v2/app.conf && rm -- incoming/-old.txt && rm -r incoming/cache && echo solved-$((2+1))",
];

/**
 * mailTo waits (up to 30 s) for a mail to address on the Mailpit server at
 * mailpit (its HTTP API's base URL) and returns the mail's text.
 */
export async function mailTo(mailpit, address) {
  const deadline = Date.now() + 30000;
  while (Date.now() < deadline) {
    const list = await (await fetch(`${mailpit}/api/v1/messages`)).json();
    const m = (list.messages || []).find((x) => (x.To || []).some((t) => t.Address.toLowerCase() === address.toLowerCase()));
    if (m) return (await (await fetch(`${mailpit}/api/v1/message/${encodeURIComponent(m.ID)}`)).json()).Text;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no mail to ${address} within 30 s`);
}
