/**
 * Lighthouse on the console pages added since the console issue: alerts (its tabs, an alert, the rule
 * form), reports (list, form, detail), terminal sessions and playback, the audit log, settings and
 * enrolment (Add device), each at desktop and mobile. Prints accessibility, best practices and
 * performance per page, and the audits that cost points. Budget: 100, 100, ≥ 95 (docs/console.md).
 *
 *   npm run bench:lighthouse                       # every page, desktop and mobile
 *   LIGHTHOUSE_PAGES=/alerts,/reports/:report npm run bench:lighthouse   # only these (names below)
 *   LIGHTHOUSE_FORMS=mobile npm run bench:lighthouse              # one form factor
 *
 * A `bun test` file (not in `npm test`: scripts/test.ts runs tests/ only) so it boots the same seeded
 * console as tests/ui/every-page.test.ts on the suite's embedded PostgreSQL. Lighthouse drives Debian's
 * Chromium, the one the browser tests use, through its DevTools port; the page loads as a signed-in
 * admin (the session cookie as an extra header). Mobile is Lighthouse's default (simulated slow 4G and
 * 4× CPU slowdown); desktop is its desktop preset. One page at a time: the machine is shared.
 */
import { expect, test } from "bun:test";
import lighthouse, { type Flags } from "lighthouse";
import desktopConfig from "lighthouse/core/config/desktop-config.js";
import { launchBrowser } from "../../tests/helpers/browser";
import { seededConsole } from "../../tests/ui/seeded-console";

const CATEGORIES = ["accessibility", "best-practices", "performance"] as const;
const { app, ruleId, alertId, reportId, terminalSessionId } = await seededConsole();
/** [how the page is named in the output, its path]. */
const PAGES: [string, string][] = [
  ["/alerts", "/alerts"],
  ["/alerts?tab=history", "/alerts?tab=history"],
  ["/alerts?tab=rules", "/alerts?tab=rules"],
  ["/alerts/:alert", `/alerts/${alertId}`],
  ["/alerts/new", "/alerts/new"],
  ["/alerts/:rule/edit", `/alerts/${ruleId}/edit`],
  ["/reports", "/reports"],
  ["/reports/new", "/reports/new"],
  ["/reports/:report", `/reports/${reportId}`],
  ["/terminal/sessions", "/terminal/sessions"],
  ["/terminal/sessions/:session", `/terminal/sessions/${terminalSessionId}`],
  ["/audit", "/audit"],
  ["/settings", "/settings"],
  ["/devices/new", "/devices/new"],
];
const only = process.env.LIGHTHOUSE_PAGES?.split(",").filter(Boolean);
const forms = (process.env.LIGHTHOUSE_FORMS ?? "desktop,mobile").split(",") as ("desktop" | "mobile")[];
const pages = only ? PAGES.filter(([label]) => only.includes(label)) : PAGES;

interface Row {
  page: string;
  form: string;
  scores: Record<(typeof CATEGORIES)[number], number>;
  lost: string[];
}

/** The elements an audit names (its first three), so a lost point can be found in the page. */
function culprits(details: unknown): string {
  const items = (details as { items?: { node?: { selector?: string; snippet?: string } }[] } | undefined)
    ?.items;
  const nodes = (items ?? []).flatMap((item) => (item.node ? [item.node.selector ?? item.node.snippet] : []));
  return nodes.length > 0 ? `: ${nodes.slice(0, 3).join(" | ")}` : "";
}

test("Lighthouse: accessibility, best practices, performance per page", async () => {
  const session = await app.session("admin");
  // Chromium as the browser tests launch it, with its DevTools port open for Lighthouse.
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const browser = await launchBrowser([
    `--remote-debugging-port=${port}`,
    "--remote-debugging-address=127.0.0.1",
  ]);
  const rows: Row[] = [];
  try {
    for (const [label, page] of pages) {
      for (const form of forms) {
        const flags: Flags = {
          port,
          output: "json",
          logLevel: "error",
          onlyCategories: [...CATEGORIES],
          extraHeaders: { cookie: session.cookie },
          disableStorageReset: true,
        };
        const result = await lighthouse(
          `${app.url}${page}`,
          flags,
          form === "desktop" ? desktopConfig : undefined,
        );
        if (!result) throw new Error(`no Lighthouse result for ${page}`);
        const { categories, audits } = result.lhr;
        const scores = Object.fromEntries(
          CATEGORIES.map((c) => [c, Math.round((categories[c]?.score ?? 0) * 100)]),
        ) as Row["scores"];
        const lost = CATEGORIES.flatMap((c) =>
          (categories[c]?.auditRefs ?? [])
            .filter((ref) => ref.weight > 0)
            .map((ref) => audits[ref.id]!)
            .filter((a) => a.score !== null && a.score < 1)
            .map((a) => `${c}: ${a.id} (${a.displayValue ?? a.score})${culprits(a.details)}`),
        );
        const row = { page: label, form, scores, lost };
        rows.push(row);
        console.log(
          `${row.page.padEnd(28)} ${form.padEnd(7)} a11y ${String(scores.accessibility).padStart(3)}  best ${String(scores["best-practices"]).padStart(3)}  perf ${String(scores.performance).padStart(3)}`,
        );
        for (const line of lost) console.log(`    ${line}`);
      }
    }
  } finally {
    await browser.close();
  }
  const below = rows.filter(
    (r) => r.scores.accessibility < 100 || r.scores["best-practices"] < 100 || r.scores.performance < 95,
  );
  console.log(`\n${rows.length} audits; ${below.length} below the budget (100 / 100 / 95)`);
  expect(rows.length).toBe(pages.length * forms.length);
}, 3_600_000);
