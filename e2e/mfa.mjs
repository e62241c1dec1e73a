// Two-factor sign-in in the browser: a new learner sets it up on the profile
// (QR code and key), turns it on with the code an authenticator app would
// show, sees the recovery codes once, signs out, and signs in again: the
// sign-in form asks for the code when the server says one is needed. axe
// checks each new view in both colour schemes. Exits non-zero on the first
// failed expectation, a CSP violation or a script error.
//
//   node e2e/mfa.mjs http://127.0.0.1:8000
//
// Environment: CHROMIUM (default /usr/bin/chromium), TUXLAB_SCREENSHOTS,
// TUXLAB_E2E_ADMIN=user:password (an admin without two-factor sign-in: the
// admin page's rule is switched on, and the admin is then sent to the
// profile to turn it on).
import { createHmac } from "node:crypto";
import { summary as axeSummary } from "./axe.mjs";
import { launch, harness, expect } from "./lib.mjs";

const base = (process.argv[2] || "").replace(/\/$/, "");
if (!base) { console.error("usage: node mfa.mjs BASE_URL"); process.exit(2); }
const shots = process.env.TUXLAB_SCREENSHOTS || "artifacts/screenshots/mfa";

/** totp is the code an authenticator app shows for a base32 secret at
 * time ms (RFC 6238: HMAC-SHA1, 30-second steps, 6 digits). */
function totp(secret, ms) {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  let bits = "";
  for (const c of secret.replace(/\s+/g, "").toUpperCase()) bits += alphabet.indexOf(c).toString(2).padStart(5, "0");
  const key = Buffer.from(bits.match(/.{8}/g).map((b) => parseInt(b, 2)));
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(Math.floor(ms / 1000 / 30)));
  const mac = createHmac("sha1", key).update(counter).digest();
  const off = mac[mac.length - 1] & 0xf;
  return String((mac.readUInt32BE(off) & 0x7fffffff) % 1_000_000).padStart(6, "0");
}

const browser = await launch();
const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, locale: "en-GB" });
context.setDefaultTimeout(30000);
const page = await context.newPage();
const { step, shot, check } = harness(browser, page, shots);
const user = `mfa${Date.now().toString(36).slice(-6)}`;
const password = "correct horse battery";
let secret, codes;

await step("sign up and open the profile before the lessons have loaded", async () => {
  // The start page's data is held back until the profile is drawn: its late
  // answer must not overwrite the page the learner moved to (CI saw it).
  let release;
  const held = new Promise((r) => { release = r; });
  await page.route("**/api/lessons/modules", async (route) => { await held; await route.continue(); });
  await page.goto(base + "/signup");
  await page.waitForSelector('input[name="email"]');
  await page.fill('input[name="username"]', user);
  await page.fill('input[name="email"]', `${user}@tuxlab.org`);
  await page.fill('input[name="password"]', password);
  await page.click('button[type="submit"]');
  await page.waitForURL((u) => new URL(u).pathname === "/");
  await page.click('nav a[href="/profile"]');
  await page.waitForSelector("#two-factor-title");
  const late = page.waitForResponse((r) => new URL(r.url()).pathname === "/api/lessons/modules");
  release();
  await late;
  await page.evaluate(() => new Promise((r) => setTimeout(r, 300)));
  await page.unroute("**/api/lessons/modules");
  expect(await page.$("#two-factor") !== null, `the start page's late answer replaced the profile: the page shows "${await page.textContent("main h1")}"`);
  expect(/Off\./.test(await page.textContent("#two-factor")), "the two-factor section does not say it is off");
});

await step("set up: QR code and key", async () => {
  await page.click('button:has-text("Set up two-factor sign-in")');
  await page.waitForSelector("#two-factor img.qr");
  await page.waitForFunction(() => document.querySelector("#two-factor img.qr").naturalWidth > 0);
  secret = (await page.textContent("#mfa-secret")).replace(/\s+/g, "");
  expect(/^[A-Z2-7]{32}$/.test(secret), `the key on the page is ${JSON.stringify(secret)}`);
  expect(await page.evaluate(() => document.activeElement.id === "mfa-code"), "the code field has no focus");
  await shot("mfa-setup");
  await check("two-factor setup");
});

await step("a wrong code is refused, the app's code turns it on and shows the recovery codes once", async () => {
  const right = totp(secret, Date.now());
  await page.fill("#mfa-code", right === "000000" ? "111111" : "000000");
  await page.click('#two-factor button:has-text("Turn on")');
  await page.waitForSelector("#two-factor .error:not(:empty)");
  expect(/Code/.test(await page.textContent("#two-factor .error")), "no error beside a wrong code");
  await page.fill("#mfa-code", right);
  await page.click('#two-factor button:has-text("Turn on")');
  await page.waitForSelector(".recovery-codes li");
  codes = await page.$$eval(".recovery-codes li", (els) => els.map((e) => e.textContent.trim()));
  expect(codes.length === 10 && codes.every((c) => /^[0-9a-z]{4}-[0-9a-z]{4}-[0-9a-z]{4}$/.test(c)), `recovery codes ${JSON.stringify(codes)}`);
  await shot("mfa-recovery-codes");
  await check("two-factor recovery codes");
  await page.click('button:has-text("I have saved them")');
  await page.waitForSelector("#two-factor summary");
  expect(/10 recovery codes left/.test(await page.textContent("#two-factor")), "the section does not count 10 codes left");
  await check("two-factor on");
  // The key is gone from the page, and a reload does not bring it back.
  await page.reload();
  await page.waitForSelector("#two-factor summary");
  expect(!(await page.content()).includes(secret), "the secret is on the page after a reload");
});

await step("sign out, and sign in with the password, then the code", async () => {
  await page.click('nav button:has-text("Sign out")');
  await page.waitForURL(/\/signin/);
  await page.waitForSelector('input[name="username"]');
  await page.fill('input[name="username"]', user);
  await page.fill('input[name="password"]', password);
  expect(!(await page.isVisible('input[name="otp"]')), "the code field shows before the server asked for it");
  await page.click('button[type="submit"]');
  await page.waitForSelector('input[name="otp"]', { state: "visible" });
  expect(await page.evaluate(() => document.activeElement.name === "otp"), "the code field has no focus");
  expect(/authenticator app/.test(await page.textContent("form .error")), "no words about the code");
  await shot("signin-code");
  await check("sign-in with a code");
  // The code of the next step: the one that turned it on is used, and the
  // server accepts one step of drift.
  await page.fill('input[name="otp"]', totp(secret, Date.now() + 30000));
  await page.click('button[type="submit"]');
  await page.waitForURL((u) => new URL(u).pathname === "/");
  await page.waitForSelector(".modules, main h1");
});

await step("a recovery code signs in once", async () => {
  await page.click('nav button:has-text("Sign out")');
  await page.waitForURL(/\/signin/);
  await page.waitForSelector('input[name="username"]');
  await page.fill('input[name="username"]', user);
  await page.fill('input[name="password"]', password);
  await page.click('button[type="submit"]');
  await page.waitForSelector('input[name="otp"]', { state: "visible" });
  await page.fill('input[name="otp"]', codes[0]);
  await page.click('button[type="submit"]');
  await page.waitForURL((u) => new URL(u).pathname === "/");
});

if (process.env.TUXLAB_E2E_ADMIN) {
  await step("the admin requires two-factor sign-in of staff, and is sent to turn it on", async () => {
    const [name, pw] = process.env.TUXLAB_E2E_ADMIN.split(":");
    await page.click('nav button:has-text("Sign out")');
    await page.waitForURL(/\/signin/);
    await page.waitForSelector('input[name="username"]');
    await page.fill('input[name="username"]', name);
    await page.fill('input[name="password"]', pw);
    await page.click('button[type="submit"]');
    await page.waitForURL((u) => new URL(u).pathname === "/");
    await page.goto(base + "/admin");
    await page.waitForSelector("#mfa-required");
    const row = page.locator("tr", { hasText: user });
    expect(/on\s*Turn off/.test(await row.textContent()), `the learner's row says ${await row.textContent()}`);
    await check("admin with two-factor");
    await page.check("#mfa-required");
    await page.waitForSelector("text=Admins and instructors must now use two-factor sign-in");
    // The rule holds this admin back too: any page leads to the profile.
    await page.goto(base + "/admin");
    await page.waitForURL((u) => new URL(u).pathname === "/profile");
    await page.waitForSelector("#two-factor .notice");
    expect(/requires two-factor sign-in/.test(await page.textContent("#two-factor")), "the profile does not say why");
    await shot("mfa-required");
    await check("two-factor required");
  });
}

await browser.close();
axeSummary();
