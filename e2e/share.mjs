// The shared terminal walk (docs/terminal.md, "Shared terminals"), run by
// internal/web/e2e_test.go (TestBrowserShare): a learner opens a lesson's
// terminal and shares it from the terminal's header; a second browser (its
// own context: another person, signed in as another user) opens the link and
// sees what the learner typed before and types now; the learner's header
// says who watches; the guest previews the learner's web service from the
// watch page; ending the share closes the guest's view and preview. axe
// checks the Share dialog and the watch page in the light and the dark
// scheme.
//
//   node share.mjs BASE_URL   with TUXLAB_E2E_LEARNER and TUXLAB_E2E_GUEST=user:password
import { summary as axeSummary } from "./axe.mjs";
import { launch, harness, expect } from "./lib.mjs";

const base = (process.argv[2] || "").replace(/\/$/, "");
if (!base) { console.error("usage: node share.mjs BASE_URL"); process.exit(2); }
const shots = process.env.TUXLAB_SCREENSHOTS || "artifacts/screenshots/share";
const [learnerName, learnerPass] = (process.env.TUXLAB_E2E_LEARNER || "").split(":");
const [guestName, guestPass] = (process.env.TUXLAB_E2E_GUEST || "").split(":");

const browser = await launch();
const newPage = async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 }, locale: "en-GB", timezoneId: "Europe/Berlin" });
  context.setDefaultTimeout(30000);
  return context.newPage();
};
const learner = await newPage();
const guest = await newPage();
const h = harness(browser, learner, shots);
h.watch(guest);
const { step, shot, check, waitScreen, connected, run } = h;

async function signIn(page, name, pass, next = "") {
  await page.goto(base + "/signin" + (next ? "?next=" + encodeURIComponent(next) : ""));
  await page.fill('input[name="username"]', name);
  await page.fill('input[name="password"]', pass);
  await page.click('button[type="submit"]');
}

let link;
await step("a learner shares the terminal of a lesson", async () => {
  await signIn(learner, learnerName, learnerPass);
  await learner.waitForSelector(".modules");
  await learner.click(".modules .module .themes a");
  await connected();
  await run("echo before-$((6*7))");
  await waitScreen(/before-42/);
  await learner.click('.term-tools button:text-is("Share")');
  await learner.waitForSelector("dialog.share-dialog[open]");
  await learner.waitForSelector('dialog.share-dialog :text("Not shared now.")');
  await learner.click('dialog.share-dialog button:text-is("Make a link")');
  await learner.waitForSelector("dialog.share-dialog .share-link input");
  link = await learner.inputValue("dialog.share-dialog .share-link input");
  expect(link.startsWith(base + "/watch#"), `the share link is ${link}`);
  await shot("share-dialog");
  await check("share dialog");
  await learner.click('dialog.share-dialog button:text-is("Close")');
});

await step("another person opens the link and watches", async () => {
  h.page = guest;
  // Not signed in: the page asks to sign in and keeps the link's token.
  await guest.goto(link);
  await guest.waitForSelector('h1:text-is("Sign in to watch")');
  await guest.click('#main a.button:text-is("Sign in")');
  await guest.fill('input[name="username"]', guestName);
  await guest.fill('input[name="password"]', guestPass);
  await guest.click('button[type="submit"]');
  await guest.waitForSelector(`h1:text-is("Watching ${learnerName}'s terminal")`);
  await waitScreen(/before-42/); // the output kept
  h.page = learner;
  await run("echo live-$((6*7))");
  h.page = guest;
  await waitScreen(/live-42/); // the live output
  const status = await guest.textContent(".watch-status");
  expect(/Read-only/.test(status), `the guest's status says ${status}`);
  await shot("watching");
  await check("watch page");
  // What the guest types never reaches the shell.
  await guest.click(".term-host .xterm-screen");
  await guest.keyboard.type("echo guest-typed\n");
  h.page = learner;
  await learner.waitForSelector(`.term-watchers:text("Watched by ${guestName}")`);
  await run("echo after-$((6*7))");
  await waitScreen(/after-42/);
  expect(!/guest-typed/.test(await h.screen()), "a read-only guest typed into the learner's shell");
  await shot("learner-watched");
});

let previewTab;
await step("the guest previews the learner's web service from the watch page", async () => {
  // The learner serves a page on 8000; the guest's bar (below the shared
  // terminal, even read-only: looking is not typing) opens it in a new tab
  // through the share (docs/preview.md, "Invited guests").
  h.page = learner;
  await run(`mkdir -p /tmp/gsite && echo '<h1>Guest preview works</h1>' > /tmp/gsite/index.html && /.tuxlab/bin/httpd -p 8000 -h /tmp/gsite && echo served-$((40+2))`);
  await waitScreen(/^served-42\s*$/m);
  h.page = guest;
  await guest.waitForSelector(".watch .preview-bar:not([hidden])");
  await guest.fill(".watch .preview-bar .preview-port", "8000");
  const href = await guest.getAttribute(".watch .preview-bar .preview-open", "href");
  expect(/^\/preview\/\d+\/8000\/\?share=/.test(href), `the guest's preview link is ${href}`);
  const [tab] = await Promise.all([guest.context().waitForEvent("page"), guest.click(".watch .preview-bar .preview-open")]);
  await tab.waitForSelector("text=Guest preview works");
  const url = new URL(tab.url());
  expect(/^\/preview\/\d+\/8000\/~[^/]+\/$/.test(url.pathname) && !url.search.includes("share="), `the guest's preview is at ${tab.url()}`);
  const file = `${shots}/guest-preview-tab.png`;
  await tab.screenshot({ path: file });
  console.log(`  screenshot ${file}`);
  previewTab = tab;
  await shot("watching-with-preview");
  await check("watch page with the preview bar");
});

await step("a may-type share: the guest types once the learner allows it", async () => {
  h.page = learner;
  await learner.click('.term-tools button:text-is("Share")');
  await learner.check('dialog.share-dialog input[name="share-mode"][value="write"]');
  await learner.click('dialog.share-dialog button:text-is("Make a link")');
  await learner.waitForSelector('dialog.share-dialog .share-item:has-text("May type") .share-link input');
  const link2 = await learner.inputValue('dialog.share-dialog .share-item:has-text("May type") .share-link input');
  h.page = guest;
  await guest.goto("about:blank"); // a new page load: the link differs only after #
  await guest.goto(link2);
  await guest.waitForSelector('.watch-status:text("Read-only")');
  await learner.check('dialog.share-dialog .share-item:has-text("May type") input[type="checkbox"]');
  await guest.waitForSelector('.watch-status:text("You may type")');
  await guest.click(".term-host .xterm-screen");
  await guest.keyboard.type("echo typed-by-guest-$((6*7))\n");
  h.page = learner;
  await waitScreen(/typed-by-guest-42/);
  h.page = guest;
  await waitScreen(/typed-by-guest-42/);
  await shot("guest-typing");
  await check("watch page (may type)");
  await learner.click('dialog.share-dialog button:text-is("Close")');
});

await step("the learner ends sharing; the guest's view closes", async () => {
  await learner.click('.term-tools button:text-is("Share")');
  await learner.waitForSelector(`dialog.share-dialog .share-watchers:text("watching: ${guestName}")`);
  while (await learner.$('dialog.share-dialog button:text-is("End sharing")')) {
    const n = await learner.locator("dialog.share-dialog .share-item").count();
    await learner.click('dialog.share-dialog button:text-is("End sharing") >> nth=0');
    await learner.waitForFunction((n) => document.querySelectorAll("dialog.share-dialog .share-item").length < n, n);
  }
  await learner.waitForSelector('dialog.share-dialog :text("Not shared now.")');
  await guest.waitForSelector('.watch-status:text("Sharing ended by the owner")');
  await learner.waitForSelector(".term-watchers", { state: "hidden" });
  h.page = guest;
  await shot("watch-ended");
  // The guest's preview ends with the share, its ticket notwithstanding.
  await previewTab.reload();
  await previewTab.waitForSelector("text=This share link is unknown, ended or expired");
  await previewTab.close();
});

await browser.close();
axeSummary();
