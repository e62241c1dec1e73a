// A forgotten password, in headless Chromium: from the sign-in page's
// "Forgot your password?" to the mail (read from the SMTP server, Mailpit,
// through its HTTP API), its link, a new password, and signing in with it;
// the old password and the used link no longer work. axe checks every page
// in both colour schemes; a screenshot of each lands in $TUXLAB_SCREENSHOTS.
//
//   TUXLAB_E2E_MAILPIT=http://127.0.0.1:8025 TUXLAB_E2E_USER=ada:ada@tuxlab.org:password \
//     node e2e/reset.mjs http://127.0.0.1:8000
//
// The account must exist; the mail's link may point to another public
// address (TUXLAB_PUBLIC_URL): its path and query are opened on BASE_URL.
import { summary as axeSummary } from "./axe.mjs";
import { launch, harness, expect, mailTo } from "./lib.mjs";

const base = (process.argv[2] || "").replace(/\/$/, "");
const mailpit = (process.env.TUXLAB_E2E_MAILPIT || "").replace(/\/$/, "");
const [username, email, oldPassword] = (process.env.TUXLAB_E2E_USER || "").split(":");
if (!base || !mailpit || !oldPassword) {
  console.error("usage: TUXLAB_E2E_MAILPIT=URL TUXLAB_E2E_USER=name:email:password node reset.mjs BASE_URL");
  process.exit(2);
}
const shots = process.env.TUXLAB_SCREENSHOTS || "artifacts/screenshots/reset";
const newPassword = "a brand new secret";

const browser = await launch();
const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, locale: "en-GB" });
context.setDefaultTimeout(30000);
const page = await context.newPage();
const { step, shot, check } = harness(browser, page, shots);

/** submit clicks the form's button and waits for its error line to say something matching re. */
async function expectError(re) {
  await page.click('button[type="submit"]');
  await page.waitForFunction((src) => new RegExp(src).test(document.querySelector('form [role="alert"]')?.textContent || ""), re.source);
}

let linkPath;
await step("ask for a reset mail from the sign-in page", async () => {
  await page.goto(base + "/signin");
  await page.waitForSelector('a[href="/forgot-password"]');
  await check("sign-in");
  await page.click('a[href="/forgot-password"]');
  await page.waitForSelector('input[name="email"]');
  expect(new URL(page.url()).pathname === "/forgot-password", `the page is ${page.url()}`);
  await shot("forgot-password");
  await check("forgot-password");
  await page.fill('input[name="email"]', "not an address");
  await expectError(/E-mail/);
  await page.fill('input[name="email"]', email.toUpperCase());
  await page.click('button[type="submit"]');
  await page.waitForSelector('h1:has-text("Check your mail")');
  await shot("forgot-password-sent");
  await check("forgot-password-sent");
});

await step("the mail carries a link to /reset-password", async () => {
  const text = await mailTo(mailpit, email);
  const m = /(https?:\/\/[^\s/]+)(\/reset-password\?token=[A-Za-z0-9_-]{43})\b/.exec(text);
  expect(m, `no reset link in the mail:\n${text}`);
  linkPath = m[2];
});

await step("open the link and set a new password", async () => {
  await page.goto(base + linkPath);
  await page.waitForSelector('input[name="new_password"]');
  // The token left the address bar (and so the history) at once.
  expect(new URL(page.url()).search === "", `the address still carries the token: ${page.url()}`);
  await shot("reset-password");
  await check("reset-password");
  await page.fill('input[name="new_password"]', "short");
  await expectError(/New password/);
  await page.fill('input[name="new_password"]', newPassword);
  await page.click('button[type="submit"]');
  await page.waitForURL(/\/signin$/);
  await page.waitForSelector('#toast.show:has-text("Password changed")');
  await shot("reset-password-done");
});

await step("the old password fails, the new one signs in", async () => {
  await page.fill('input[name="username"]', username);
  await page.fill('input[name="password"]', oldPassword);
  await expectError(/./);
  await page.fill('input[name="password"]', newPassword);
  await page.click('button[type="submit"]');
  await page.waitForURL((u) => new URL(u).pathname === "/");
  await page.waitForSelector('nav button:has-text("Sign out"), #nav button:has-text("Sign out")');
});

await step("the used link says so", async () => {
  await page.click('#nav button:has-text("Sign out")');
  await page.waitForURL(/\/signin/);
  await page.goto(base + linkPath);
  await page.waitForSelector('input[name="new_password"]');
  await page.fill('input[name="new_password"]', "yet another secret");
  await expectError(/already used/);
  await shot("reset-password-used");
  await check("reset-password-used");
});

await step("without a token the page points to the mail", async () => {
  await page.goto(base + "/reset-password");
  await page.waitForSelector('h1:has-text("Open the link from the mail")');
  await check("reset-password-no-token");
});

await browser.close();
axeSummary();
