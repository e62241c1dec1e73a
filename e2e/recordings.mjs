// The recordings walk (docs/terminal.md, "Recordings"), run by
// internal/web/recordings_e2e_test.go (TestBrowserRecordings): a learner
// finds their recordings from the dashboard, replays one in the embedded
// player (the marker the recorded shell printed appears in the player's
// screen, under the pages' CSP), and finds the download link; the
// instructor of the learner's class replays it too, another learner gets
// "does not exist". axe checks each page in the light and the dark scheme.
//
//   node recordings.mjs BASE_URL   with TUXLAB_E2E_LEARNER, TUXLAB_E2E_TEACHER, TUXLAB_E2E_OTHER=user:password,
//                                  TUXLAB_E2E_RECORDING=id, TUXLAB_E2E_MARKER=text
import { launch, harness, expect } from "./lib.mjs";

const base = (process.argv[2] || "").replace(/\/$/, "");
if (!base) { console.error("usage: node recordings.mjs BASE_URL"); process.exit(2); }
const shots = process.env.TUXLAB_SCREENSHOTS || "artifacts/screenshots/recordings";
const account = (v) => (process.env[v] || "").split(":");
const [learnerName, learnerPass] = account("TUXLAB_E2E_LEARNER");
const [teacherName, teacherPass] = account("TUXLAB_E2E_TEACHER");
const [otherName, otherPass] = account("TUXLAB_E2E_OTHER");
const id = process.env.TUXLAB_E2E_RECORDING;
const marker = process.env.TUXLAB_E2E_MARKER;

const browser = await launch();
const newPage = async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, locale: "en-GB", timezoneId: "Europe/Berlin" });
  context.setDefaultTimeout(20000);
  return context.newPage();
};
const learner = await newPage();
const h = harness(browser, learner, shots);
const { step, shot, check } = h;

async function signIn(page, name, pass) {
  await page.goto(base + "/signin");
  await page.fill('input[name="username"]', name);
  await page.fill('input[name="password"]', pass);
  await page.click('button[type="submit"]');
  await page.waitForSelector(`nav a[href="/dashboard"]`);
}

// playerText is what the player's terminal shows.
const playerText = (page) => page.evaluate(() => (document.querySelector(".player")?.innerText || "").replace(/\u00a0/g, " "));

async function waitForMarker(page) {
  try {
    await page.waitForFunction((m) => (document.querySelector(".player")?.innerText || "").replace(/\u00a0/g, " ").includes(m), marker, { timeout: 20000, polling: 100 });
  } catch {
    throw new Error(`the player never showed ${marker}; it shows:\n${await playerText(page)}`);
  }
}

await step("a learner finds their recordings from the dashboard", async () => {
  await signIn(learner, learnerName, learnerPass);
  await learner.click('nav a[href="/dashboard"]');
  await learner.click('a[href="/recordings"]');
  await learner.waitForSelector(`tr[data-recording-id="${id}"]`);
  const download = await learner.getAttribute(`tr[data-recording-id="${id}"] a[download]`, "href");
  expect(download === `/api/recordings/${id}`, `download link ${download}`);
  await shot("recordings-list");
  await check("recordings (learner)");
});

await step("the learner replays one: the recorded output plays in the page", async () => {
  await learner.click(`tr[data-recording-id="${id}"] a[href="/recordings/${id}"]`);
  await learner.waitForSelector(".player .ap-player");
  await waitForMarker(learner);
  const cast = await learner.evaluate(async (u) => { const r = await fetch(u); return { type: r.headers.get("Content-Type"), text: await r.text() }; }, `/api/recordings/${id}`);
  expect(cast.type === "application/x-asciicast" && cast.text.startsWith('{"version":2'), `the download is ${cast.type}: ${cast.text.slice(0, 40)}`);
  await shot("recording-replay");
  await check("recording replay (learner)");
});

await step("the instructor of the learner's class replays it; another learner cannot", async () => {
  const teacher = await newPage();
  h.watch(teacher);
  h.page = teacher;
  await signIn(teacher, teacherName, teacherPass);
  await teacher.goto(`${base}/recordings/${id}`);
  await waitForMarker(teacher);
  await shot("recording-replay-teacher");
  const other = await newPage();
  h.watch(other);
  h.page = other;
  await signIn(other, otherName, otherPass);
  await other.goto(`${base}/recordings/${id}`);
  await other.waitForSelector('h1:has-text("This page does not exist")');
  expect(!(await other.$(".player")), "another learner sees a player");
  await shot("recording-other-learner");
});

await browser.close();
console.log("recordings walk: ok");
