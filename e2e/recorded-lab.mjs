// A laboratory's recorded terminal, replayed (docs/terminal.md,
// "Recordings"), run by internal/web/recordings_e2e_test.go
// (TestBrowserRecordedLab) on a real container engine: a learner starts a
// laboratory, the terminal pane says the session is recorded, the learner
// types a command, submits, follows the results' replay link, and the
// player shows what the shell printed for that command. axe checks the
// recorded pane and the replay in the light and the dark scheme.
//
//   node recorded-lab.mjs BASE_URL   with TUXLAB_E2E_LEARNER=user:password and TUXLAB_E2E_LAB=id
import { launch, harness, expect } from "./lib.mjs";

const base = (process.argv[2] || "").replace(/\/$/, "");
if (!base) { console.error("usage: node recorded-lab.mjs BASE_URL"); process.exit(2); }
const shots = process.env.TUXLAB_SCREENSHOTS || "artifacts/screenshots/recorded-lab";
const [name, pass] = (process.env.TUXLAB_E2E_LEARNER || "").split(":");
const lab = process.env.TUXLAB_E2E_LAB;

const browser = await launch();
const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, locale: "en-GB", timezoneId: "Europe/Berlin" });
context.setDefaultTimeout(30000);
const page = await context.newPage();
const h = harness(browser, page, shots);
const { step, shot, check, connected, run, waitScreen } = h;

await step("a learner starts a laboratory: its terminal says it is recorded", async () => {
  await page.goto(base + "/signin");
  await page.fill('input[name="username"]', name);
  await page.fill('input[name="password"]', pass);
  await page.click('button[type="submit"]');
  await page.waitForSelector('nav a[href="/dashboard"]');
  await page.goto(`${base}/labs/${lab}`);
  await page.click('button:has-text("Start the laboratory")');
  await connected();
  await page.waitForSelector('.term[data-recording="true"] .term-rec:has-text("This session is recorded")');
  await run("echo typed-$((6*7))-mark");
  await waitScreen(/^typed-42-mark\s*$/m);
  await shot("lab-recorded-terminal");
  await check("laboratory (recorded terminal)");
});

await step("after submitting, the results link the replay, which plays what the shell printed", async () => {
  await page.click('.lab-actions button:has-text("Submit")');
  await page.waitForSelector(".lab-status >> text=Submitted");
  await page.click('a:has-text("Replay this attempt\'s terminal session")');
  await page.waitForSelector(".player .ap-player");
  try {
    await page.waitForFunction(() => /^typed-42-mark\s*$/m.test((document.querySelector(".player")?.innerText || "").replace(/\u00a0/g, " ")), null, { timeout: 30000, polling: 100 });
  } catch {
    throw new Error(`the replay never showed typed-42-mark; it shows:\n${await page.innerText(".player")}`);
  }
  expect(/\/recordings\/\d+$/.test(page.url()), `the replay is at ${page.url()}`);
  await shot("lab-replay");
  await check("recording replay (laboratory)");
});

await browser.close();
console.log("recorded laboratory walk: ok");
