// learner.mjs's walk on a phone (390x844, touch, 2x): a new learner signs
// up, reads a lesson through the Lesson/Terminal tabs, solves the first
// laboratory in the terminal, checks and submits it and finds it passed on
// the curriculum, starts the next laboratory with no clean-up, takes an exam
// (an answer survives a reload), finds the same vi after a reload (Esc from
// the key bar), opens a second tab that is still signed in, and ends on the
// dashboard. Every page is checked by axe in the light and the dark colour
// scheme and saved in both. Exits non-zero on the first failed expectation,
// a Content-Security-Policy violation or a script error.
//
//   node e2e/phone.mjs http://127.0.0.1:8000
//
// Environment: CHROMIUM (default /usr/bin/chromium), TUXLAB_SCREENSHOTS
// (default artifacts/screenshots/phone).
import { summary as axeSummary } from "./axe.mjs";
import { launch, harness, expect, solveLabOne } from "./lib.mjs";

const base = (process.argv[2] || "").replace(/\/$/, "");
if (!base) { console.error("usage: node phone.mjs BASE_URL"); process.exit(2); }
const shots = process.env.TUXLAB_SCREENSHOTS || "artifacts/screenshots/phone";

const browser = await launch();
const context = await browser.newContext({
  viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2,
  locale: "en-GB", timezoneId: "Europe/Berlin",
});
context.setDefaultTimeout(30000);
const page = await context.newPage();
const h = harness(browser, page, shots);
const { step, shot, check, waitScreen, connected, run } = h;

/** look saves the page in light, then runs axe in both schemes and saves it in dark. */
async function look(name, full = false) {
  await shot(`${name.replace(/\W+/g, "-")}-light`, full);
  await check(name, { full });
}
/** tab picks a pane of a split page: Lesson, Tasks or Questions, or Terminal. */
async function tab(label) {
  await page.click(`.pane-tabs button:has-text("${label}")`);
  await page.waitForSelector(`.pane-tabs button[aria-selected="true"]:has-text("${label}")`);
}
/** noHorizontalScroll fails when the page is wider than the phone's screen. */
async function noHorizontalScroll(what) {
  const w = await page.evaluate(() => document.documentElement.scrollWidth);
  expect(w <= 390, `${what} is ${w} px wide on a 390 px screen`);
}

const user = `pip${Date.now().toString(36).slice(-6)}`;
const password = "correct horse battery";

await step("sign up on a phone", async () => {
  await page.goto(base + "/signup");
  await page.waitForSelector('input[name="email"]');
  await look("phone sign-up");
  await page.fill('input[name="username"]', user);
  await page.fill('input[name="email"]', `${user}@tuxlab.org`);
  await page.fill('input[name="password"]', password);
  await page.click('button[type="submit"]');
  await page.waitForSelector(".modules .module");
  await noHorizontalScroll("the curriculum");
  await look("phone curriculum");
});

let lessonURL;
await step("read a lesson, then its terminal, through the tabs", async () => {
  await page.click(".modules .module .themes a");
  await page.waitForSelector(".lesson-body h1, .lesson h1");
  lessonURL = page.url();
  expect(await page.isVisible(".lesson-body") && !(await page.isVisible(".term-box")), "the lesson tab shows the terminal too");
  await noHorizontalScroll("the lesson");
  await look("phone lesson");
  await tab("Terminal");
  await connected();
  expect(!(await page.isVisible(".lesson-body")), "the terminal tab shows the lesson too");
  expect(await page.isVisible(".term-keys"), "no key bar on a phone");
  await run("echo small-$((6*7))");
  await waitScreen(/^small-42\s*$/m);
  await look("phone lesson terminal");
});

let labPath;
await step("solve the first laboratory in its terminal, check and submit it", async () => {
  await tab("Lesson");
  await page.click('.lab-link a[href^="/labs/"]');
  await page.waitForSelector(".lab h1");
  labPath = new URL(page.url()).pathname;
  await noHorizontalScroll("the laboratory");
  await look("phone lab");
  await page.click("text=Start the laboratory");
  // Starting shows the terminal tab.
  await page.waitForSelector('.pane-tabs button[aria-selected="true"]:has-text("Terminal")');
  await connected();
  await run(solveLabOne[0]);
  await waitScreen(/^made-2\s*$/m);
  await run(solveLabOne[1]);
  await waitScreen(/^solved-3\s*$/m);
  await look("phone lab terminal");
  await tab("Tasks");
  await page.click("text=Check my work");
  await page.waitForSelector('.tasks .task:last-child[data-state="pass"]');
  const states = await page.$$eval(".tasks .task", (ts) => ts.map((t) => t.dataset.state));
  expect(states.length > 0 && states.every((s) => s === "pass"), `the tasks are ${states}`);
  await page.locator(".tasks .task:last-child").scrollIntoViewIfNeeded();
  await look("phone lab passed");
  await page.click('.lab-actions button:has-text("Submit")');
  await page.waitForSelector(".lab-status >> text=sandbox was removed");
  expect(/Submitted: 100% .*, passed\./.test(await page.textContent(".lab-status")), `submitted: ${await page.textContent(".lab-status")}`);
});

await step("the curriculum card shows the laboratory passed", async () => {
  await page.click('nav a[href="/"]');
  const state = `.lab-link:has(a[href="${labPath}"]) .lab-state`;
  await page.waitForSelector(`${state}[data-state="passed"]`);
  expect(/Passed · best 100%/.test(await page.textContent(state)), `the card says ${await page.textContent(state)}`);
  await page.locator(state).scrollIntoViewIfNeeded();
  await look("phone curriculum lab passed");
});

await step("start the next module's laboratory with no clean-up", async () => {
  await page.click(`.lab-link a[href^="/labs/"]:not([href="${labPath}"])`);
  await page.waitForSelector(".lab h1");
  await page.click("text=Start the laboratory");
  await page.waitForSelector('.pane-tabs button[aria-selected="true"]:has-text("Terminal")');
  await connected();
  await look("phone lab two terminal");
});

await step("take an exam: an answer survives a reload", async () => {
  await page.click('nav a[href="/exams"]');
  await page.waitForSelector(".cards .card");
  await noHorizontalScroll("the exams");
  await look("phone exams");
  await page.click(".cards .card h2 a");
  await page.waitForSelector(".exam h1");
  await page.click("text=Start the exam");
  // The sandbox quota may be full: take the page's offer to stop one.
  const offer = page.locator('.quota-choices button:has-text("Stop “Lab: ")');
  const timer = page.waitForFunction(() => /\d+:\d\d left/.test(document.querySelector(".timer")?.textContent || ""), null, { timeout: 90000 });
  const first = await Promise.race([offer.first().waitFor({ timeout: 90000 }).then(() => "offer"), timer.then(() => "timer")]);
  if (first === "offer") {
    await offer.first().scrollIntoViewIfNeeded();
    await look("phone exam quota");
    await offer.first().click();
  }
  await timer;
  const radio = page.locator('.question input[type="radio"]').first();
  const [name, value] = [await radio.getAttribute("name"), await radio.getAttribute("value")];
  await radio.check();
  await page.waitForSelector("form.questions[data-draft-saved]");
  await page.reload();
  await page.waitForFunction(() => /\d+:\d\d left/.test(document.querySelector(".timer")?.textContent || ""));
  expect(await page.isChecked(`.question input[name="${name}"][value="${value}"]`), "the answer was lost on reload");
  await noHorizontalScroll("the exam");
  await page.locator(`.question:has(input[name="${name}"])`).scrollIntoViewIfNeeded();
  await look("phone exam attempt");
  await tab("Terminal");
  await connected();
  await look("phone exam terminal");
  await tab("Questions");
  await page.click('form.questions button[type="submit"]');
  await page.waitForSelector(".score");
  expect(/Your score: \d+%/.test(await page.textContent(".score")), "no score after submitting");
  await page.locator(".score").scrollIntoViewIfNeeded();
  await look("phone exam results");
});

await step("reload with vi open in the lesson's terminal: the same vi comes back", async () => {
  await page.goto(lessonURL);
  await tab("Terminal");
  await connected();
  await run("clear; vi phone.txt");
  await waitScreen(/^~\s*$/m);
  await page.keyboard.press("i");
  await page.keyboard.type("typed on a phone");
  // A touch keyboard has no Esc: the key bar's.
  await page.click('.term-keys button[aria-label="Esc (Escape)"]');
  await page.keyboard.type(":");
  await waitScreen(/^:\s*$/m); // vi is in its command line: Esc reached it
  await page.click('.term-keys button[aria-label="Esc (Escape)"]');
  await page.reload();
  await page.waitForSelector(".lesson-body");
  await tab("Terminal");
  await page.waitForSelector('.term[data-state="connected"]', { timeout: 90000 });
  await waitScreen(/^typed on a phone\s*$/m);
  await waitScreen(/^~\s*$/m);
  const size = () => page.evaluate(() => `${document.querySelector(".term").dataset.rows} ${document.querySelector(".term").dataset.cols}`);
  await look("phone vi after reload");
  await page.click(".term-host .xterm-screen");
  await page.keyboard.type(":q!");
  await page.keyboard.press("Enter");
  await waitScreen(/\$ *$/m);
  await run("test -e phone.txt || echo unsaved-$((6*7))");
  await waitScreen(/^unsaved-42\s*$/m);
  // The shell's terminal has the size the learner sees, after the reload too.
  const [rows, cols] = (await size()).split(" ");
  await run("clear; stty size");
  await waitScreen(/^\d+ \d+\s*$/m);
  const said = (await h.screen()).match(/^(\d+) (\d+)\s*$/m);
  expect(said[1] === rows && said[2] === cols, `stty size says ${said[1]} ${said[2]}, the terminal shows ${rows} ${cols}`);
});

await step("a second tab is still signed in", async () => {
  const second = await context.newPage();
  h.watch(second);
  h.page = second;
  await second.goto(base + "/dashboard");
  await second.waitForSelector(".tiles .tile");
  expect(new URL(second.url()).pathname === "/dashboard", `the second tab is at ${second.url()}`);
  expect(await second.isVisible('nav a[href="/profile"]'), "the second tab is not signed in");
  await look("phone second tab");
  await second.close();
  h.page = page;
});

await step("dashboard", async () => {
  await page.click('nav a[href="/dashboard"]');
  await page.waitForSelector(".tiles .tile");
  await page.waitForFunction(() => document.querySelectorAll("#sandboxes li").length >= 2);
  await noHorizontalScroll("the dashboard");
  await look("phone dashboard", true);
});

await browser.close();
axeSummary();
console.log(`passed: screenshots in ${shots}`);
