// Accessibility checks with axe-core: the WCAG 2.0 and 2.1 A and AA rules,
// run in the light and the dark colour scheme on the page as it stands.
// learner.mjs calls axe(page, name) on every page it visits; a serious or
// critical violation fails the run, a minor or moderate one is printed
// (TUXLAB_E2E_AXE_REPORT=1 prints the serious ones too instead of failing,
// to see every page's findings in one run).
//
// axe.min.js is evaluated through the DevTools protocol (page.evaluate), not
// injected with addScriptTag: that inserts an inline <script>, which the
// page's Content-Security-Policy (script-src 'self', the policy under test)
// refuses.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const axeSource = readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");

export const schemes = ["light", "dark"];
const tags = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"];
const failing = new Set(["serious", "critical"]);

/** totals gathers every page's counts, for the summary at the end. */
export const totals = [];

/**
 * axe checks page in both colour schemes and returns the violations;
 * it throws when one is serious or critical. exclude lists CSS selectors
 * of markup that is not ours (each with its reason in the caller).
 */
export async function axe(page, name, { exclude = [] } = {}) {
  const bad = [];
  for (const colorScheme of schemes) {
    await page.emulateMedia({ colorScheme });
    if (!(await page.evaluate(() => typeof window.axe === "object"))) await page.evaluate(axeSource);
    const violations = await page.evaluate(async ([exclude, tags]) => {
      const ctx = exclude.length ? { include: [document], exclude: exclude.map((s) => [s]) } : document;
      const r = await window.axe.run(ctx, { runOnly: { type: "tag", values: tags }, resultTypes: ["violations"] });
      return r.violations.map((v) => ({
        id: v.id, impact: v.impact, help: v.help,
        nodes: v.nodes.map((n) => ({ target: n.target.join(" "), summary: (n.failureSummary || "").split("\n").slice(0, 3).join(" ") })),
      }));
    }, [exclude, tags]);
    const count = (levels) => violations.filter((v) => levels.includes(v.impact)).reduce((s, v) => s + v.nodes.length, 0);
    const row = { page: name, scheme: colorScheme, rules: violations.length, serious: count(["serious", "critical"]), other: count(["minor", "moderate"]) };
    totals.push(row);
    console.log(`  axe ${name} (${colorScheme}): ${row.serious} serious or critical, ${row.other} minor or moderate` +
      (violations.length ? ` [${violations.map((v) => `${v.id}:${v.impact}`).join(", ")}]` : ""));
    for (const v of violations) {
      if (!failing.has(v.impact)) continue;
      for (const n of v.nodes.slice(0, 8)) bad.push(`${colorScheme}: ${v.id} (${v.impact}) ${n.target}: ${n.summary}`);
    }
  }
  await page.emulateMedia({ colorScheme: null });
  if (bad.length && process.env.TUXLAB_E2E_AXE_REPORT) { console.log(`  axe on ${name}:\n    ${bad.join("\n    ")}`); return; }
  if (bad.length) throw new Error(`axe on ${name}:\n    ${bad.join("\n    ")}`);
}

/** summary prints one line per page: serious or critical in light and dark. */
export function summary() {
  const by = new Map();
  for (const r of totals) {
    const e = by.get(r.page) || {};
    e[r.scheme] = r;
    by.set(r.page, e);
  }
  console.log("axe (WCAG 2.1 A/AA; serious+critical / minor+moderate):");
  for (const [p, e] of by) console.log(`  ${p.padEnd(28)} light ${e.light?.serious}/${e.light?.other}  dark ${e.dark?.serious}/${e.dark?.other}`);
}
