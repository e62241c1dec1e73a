// E-mail verification on registration, in headless Chromium, against a
// server with TUXLAB_REQUIRE_EMAIL_VERIFICATION on: sign up, the page says to
// check the mail; signing in shows the server's 403 detail and a "Send the
// link again" button; the mail's link (read from Mailpit's HTTP API) opens
// /verify-email, which drops the token from the address bar and confirms;
// then signing in works, and the used link says so. axe checks every page in
// both colour schemes; a screenshot of each lands in $TUXLAB_SCREENSHOTS.
//
//   TUXLAB_E2E_MAILPIT=http://127.0.0.1:8025 node e2e/verify.mjs http://127.0.0.1:8000
import { summary as axeSummary } from "./axe.mjs";
import { launch, harness, expect, mailTo } from "./lib.mjs";

const base = (process.argv[2] || "").replace(/\/$/, "");
const mailpit = (process.env.TUXLAB_E2E_MAILPIT || "").replace(/\/$/, "");
if (!base || !mailpit) {
  console.error("usage: TUXLAB_E2E_MAILPIT=URL node verify.mjs BASE_URL");
  process.exit(2);
}
const shots = process.env.TUXLAB_SCREENSHOTS || "artifacts/screenshots/verify";
const [username, email, password] = ["grace", "grace@tuxlab.org", "grace's secret 1"];

const browser = await launch();
const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, locale: "en-GB" });
context.setDefaultTimeout(30000);
const page = await context.newPage();
const { step, shot, check } = harness(browser, page, shots);

async function signIn() {
  await page.goto(base + "/signin");
  await page.fill('input[name="username"]', username);
  await page.fill('input[name="password"]', password);
  await page.click('button[type="submit"]');
}

await step("sign up: the page says to check the mail", async () => {
  await page.goto(base + "/signup");
  await page.fill('input[name="username"]', username);
  await page.fill('input[name="email"]', email);
  await page.fill('input[name="password"]', password);
  await page.click('button[type="submit"]');
  await page.waitForSelector('h1:has-text("Check your mail")');
  await shot("signup-check-mail");
  await check("signup-check-mail");
});

await step("sign in before confirming: the 403 detail and a new-link button", async () => {
  await signIn();
  await page.waitForFunction(() => /Confirm your e-mail address/.test(document.querySelector('form [role="alert"]')?.textContent || ""));
  await page.waitForSelector('a[href="/verify-email"]:visible');
  await shot("signin-unverified");
  await check("signin-unverified");
});

await step("the link opens /verify-email, which confirms", async () => {
  const text = await mailTo(mailpit, email);
  const m = /(https?:\/\/[^\s/]+)(\/verify-email\?token=[A-Za-z0-9_-]{43})\b/.exec(text);
  expect(m, `no confirmation link in the mail:\n${text}`);
  await page.goto(base + m[2]);
  await page.waitForSelector('[role="status"]:has-text("E-mail address confirmed")');
  expect(new URL(page.url()).search === "", `the address still carries the token: ${page.url()}`);
  await shot("verify-email-done");
  await check("verify-email-done");
  // The same link again says it was used.
  await page.goto(base + m[2]);
  await page.waitForSelector('[role="alert"]:has-text("already used")');
});

await step("signing in works now", async () => {
  await signIn();
  await page.waitForURL((u) => new URL(u).pathname === "/");
  await page.waitForSelector('#nav button:has-text("Sign out")');
});

await step("without a token the page asks for a new link", async () => {
  await page.click('#nav button:has-text("Sign out")');
  await page.waitForURL(/\/signin/);
  await page.goto(base + "/verify-email");
  await page.waitForSelector('input[name="email"]');
  await check("verify-email-resend");
  await page.fill('input[name="email"]', "nobody@tuxlab.org");
  await page.click('button[type="submit"]');
  await page.waitForSelector('h1:has-text("Check your mail")');
});

await browser.close();
axeSummary();
