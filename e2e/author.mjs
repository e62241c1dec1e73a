// An instructor's way through authoring, in headless Chromium: sign in, open
// the Author page, create a module and a lesson in it (both drafts), write
// the lesson, preview it as a learner reads it, and publish both; a learner
// signed in beside them does not see the draft, and sees it once published.
// Screenshots land in $TUXLAB_SCREENSHOTS (default artifacts/screenshots/author).
// Exits non-zero on the first failed expectation, a CSP violation or a
// script error.
//
//   TUXLAB_E2E_INSTRUCTOR=user:password TUXLAB_E2E_LEARNER=user:password node e2e/author.mjs http://127.0.0.1:8000
import { summary as axeSummary } from "./axe.mjs";
import { launch, harness, expect } from "./lib.mjs";

const base = (process.argv[2] || "").replace(/\/$/, "");
const [teacher, teacherPass] = (process.env.TUXLAB_E2E_INSTRUCTOR || "").split(":");
const [learner, learnerPass] = (process.env.TUXLAB_E2E_LEARNER || "").split(":");
if (!base || !teacher || !learner) {
  console.error("usage: TUXLAB_E2E_INSTRUCTOR=u:p TUXLAB_E2E_LEARNER=u:p node author.mjs BASE_URL");
  process.exit(2);
}
const shots = process.env.TUXLAB_SCREENSHOTS || "artifacts/screenshots/author";

const browser = await launch();
/** signIn opens a new context signed in as name. */
async function signIn(name, pass) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 }, locale: "en-GB" });
  context.setDefaultTimeout(20000);
  const p = await context.newPage();
  await p.goto(base + "/signin");
  await p.fill('input[name="username"]', name);
  await p.fill('input[name="password"]', pass);
  await p.click('button[type="submit"]');
  await p.waitForSelector("main h1");
  return p;
}

const page = await signIn(teacher, teacherPass);
const { step, shot, check, watch } = harness(browser, page, shots);
const student = await signIn(learner, learnerPass);
watch(student);
const title = "Shell scripts from scratch";

/** learnerSees reports whether the learner's curriculum lists the module. */
async function learnerSees() {
  await student.goto(base + "/");
  await student.waitForSelector("main h1");
  await student.waitForLoadState("networkidle");
  return (await student.locator(`text=${title}`).count()) > 0;
}

await step("the Author page", async () => {
  await page.click('nav a[href="/admin"]');
  await page.waitForSelector('h1:text-is("Your content")');
  expect(!(await page.isVisible("text=Users")), "an instructor sees the users tab");
  await shot("author-empty");
});

await step("a draft module and lesson", async () => {
  await page.fill('input[aria-label="Name of a new module"]', title);
  await page.fill('input[aria-label="Description of the new module"]', "Write and run your first scripts.");
  await page.click('button:text-is("Create module")');
  await page.waitForSelector(`summary:has-text("${title}") .tag.draft`);
  await page.fill(`input[aria-label="Title of a new lesson in ${title}"]`, "Your first script");
  await page.click('button:text-is("Add lesson")');
  await page.waitForSelector('li:has-text("Your first script") .tag.draft');
  expect(!(await learnerSees()), "the learner sees the draft module");
  // Its owner finds it on the Learn page, tagged.
  await page.click('nav a[href="/"]');
  await page.waitForSelector(`.module h2:has-text("${title}") .tag.draft`);
  await page.click('nav a[href="/admin"]');
  await page.waitForSelector('h1:text-is("Your content")');
});

await step("write and preview the lesson", async () => {
  await page.click('li:has-text("Your first script") button:text-is("Edit lesson")');
  const area = page.locator('textarea[aria-label="Markdown of Your first script"]');
  await area.fill("# Your first script\n\nPut `echo hello` in a file and run it with `sh`.\n");
  await page.click('button:text-is("Save lesson")');
  await page.waitForSelector("#toast:has-text('Lesson saved')");
  await page.click('li:has-text("Your first script") button:text-is("Preview")');
  await page.waitForSelector(".preview .lesson-body code:text-is('echo hello')");
  await shot("author-preview", true);
  await check("author preview", { full: true });
});

await step("publish", async () => {
  await page.check('input[aria-label="Your first script is published"]');
  await page.waitForSelector("#toast:has-text('Your first script: published')");
  expect(!(await learnerSees()), "the learner sees a published lesson of a draft module");
  await page.check(`input[aria-label="${title} is published"]`);
  await page.waitForSelector(`#toast:has-text('${title}: published')`);
  await page.waitForSelector(`summary:has-text("${title}"):not(:has(.tag.draft))`);
  expect(await learnerSees(), "the learner does not see the published module");
  await student.click(`text=Your first script`);
  await student.waitForSelector(".lesson-body code:text-is('echo hello')");
});

await browser.close();
axeSummary();
console.log(`passed: screenshots in ${shots}`);
