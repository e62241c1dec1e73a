// The classes walk (docs/classes.md), run by internal/web/e2e_test.go
// (TestBrowserClasses): an instructor creates a class and reads its join
// code; a learner joins it from the dashboard; the instructor sets an
// assignment and sees the learner in the class's table and its CSV; the
// learner sees the assignment on the dashboard. Every page is checked with
// axe in the light and the dark scheme. Needs no container engine.
//
//   node classes.mjs BASE_URL   with TUXLAB_E2E_TEACHER and TUXLAB_E2E_LEARNER=user:password
import { summary as axeSummary } from "./axe.mjs";
import { launch, harness, expect } from "./lib.mjs";

const base = (process.argv[2] || "").replace(/\/$/, "");
if (!base) { console.error("usage: node classes.mjs BASE_URL"); process.exit(2); }
const shots = process.env.TUXLAB_SCREENSHOTS || "artifacts/screenshots/classes";
const [teacherName, teacherPass] = (process.env.TUXLAB_E2E_TEACHER || "").split(":");
const [learnerName, learnerPass] = (process.env.TUXLAB_E2E_LEARNER || "").split(":");

const browser = await launch();
const newPage = async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, locale: "en-GB", timezoneId: "Europe/Berlin" });
  context.setDefaultTimeout(20000);
  return context.newPage();
};
const teacher = await newPage();
const learner = await newPage();
const h = harness(browser, teacher, shots);
h.watch(learner);
const { step, shot, check } = h;

async function signIn(page, name, pass) {
  await page.goto(base + "/signin");
  await page.fill('input[name="username"]', name);
  await page.fill('input[name="password"]', pass);
  await page.click('button[type="submit"]');
  await page.waitForSelector(".modules");
}

let code, classURL;
await step("an instructor creates a class", async () => {
  await signIn(teacher, teacherName, teacherPass);
  await teacher.click('nav a[href="/classes"]');
  await teacher.waitForSelector("#class-name");
  await shot("classes-teacher-empty");
  await check("classes (instructor)");
  await teacher.fill("#class-name", "Linux 101");
  await teacher.click('form[aria-label="New class"] button[type="submit"]');
  await teacher.waitForSelector("#join-code-value");
  classURL = teacher.url();
  expect(/\/classes\/\d+$/.test(classURL), `after creating, the page is ${classURL}`);
  code = (await teacher.textContent("#join-code-value")).trim();
  expect(/^[A-HJKMNP-Z2-9]{8}$/.test(code), `join code ${code}`);
  await teacher.waitForSelector("#assign-item");
  await shot("class-teacher-empty");
  await check("class (no learner yet)");
});

await step("a learner joins it from the dashboard", async () => {
  h.page = learner;
  await signIn(learner, learnerName, learnerPass);
  await learner.click('nav a[href="/dashboard"]');
  await learner.waitForSelector("#assignments #join-code");
  // Typed as a person would: lower case, with a dash.
  await learner.fill("#assignments #join-code", code.slice(0, 4).toLowerCase() + "-" + code.slice(4));
  await learner.click('#assignments form[aria-label="Join a class"] button[type="submit"]');
  await learner.waitForSelector('#toast.show:has-text("You are in Linux 101")');
  await shot("dashboard-joined");
  await check("dashboard (joined)");
});

await step("the instructor sets an assignment and sees the learner", async () => {
  h.page = teacher;
  await teacher.reload();
  await teacher.waitForSelector(`table.learners td:has-text("${learnerName}")`);
  await teacher.selectOption("#assign-item", { index: 0 });
  await teacher.click('form[aria-label="New assignment"] button[type="submit"]');
  await teacher.waitForSelector('#toast.show:has-text("Assignment set")');
  await teacher.waitForSelector('button[aria-label^="Delete the assignment of "]');
  await shot("class-teacher", true);
  await check("class (instructor)", { full: true });
  const csv = await teacher.evaluate(async () => {
    const a = document.querySelector('a[download][href*="learners.csv"]');
    const r = await fetch(a.href);
    return { type: r.headers.get("Content-Type"), text: await r.text() };
  });
  expect(csv.type.startsWith("text/csv") && csv.text.startsWith("username,") && csv.text.includes(learnerName), `the CSV: ${JSON.stringify(csv)}`);
});

await step("the learner sees the assignment and the class", async () => {
  h.page = learner;
  await learner.reload();
  await learner.waitForSelector("#assignments li");
  const text = await learner.textContent("#assignments li");
  expect(/Linux 101/.test(text) && /to do/.test(text), `the assignment reads ${text}`);
  await shot("dashboard-assignment");
  await check("dashboard (assignment)");
  expect(!(await learner.$('nav a[href="/classes"]')), "a learner's navigation has Classes");
  await learner.click('#assignments a[href="/classes"]');
  await learner.waitForSelector('button:has-text("Leave Linux 101")');
  expect(!(await learner.$("#class-name")), "a learner is offered to create a class");
  await shot("classes-learner");
  await check("classes (learner)");
  await learner.click('a:text-is("Linux 101")');
  await learner.waitForSelector('h2:text-is("Assignments")');
  expect(!(await learner.$("#join-code-value")), "a learner sees the join code");
  await check("class (learner)");
});

await browser.close();
axeSummary();
