// Real-browser helpers for portal tests: Debian's Chromium driven by playwright-core (never a
// downloaded browser), CSP-violation capture, an axe-core scan and screenshots under test-results/.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';

export const CHROMIUM = process.env['REMESSA_TEST_CHROMIUM'] ?? '/usr/bin/chromium';

/**
 * Browser tests need Debian's Chromium. Where it is missing they skip with this message, unless
 * REMESSA_TEST_REQUIRE_BROWSER=1 (set by .ci/run, which installs it) makes that a failure.
 */
export const BROWSER_SKIP = `${CHROMIUM} not found: browser tests skipped (apt-get install -y chromium)`;
export function browserSkip(): string | false {
  if (existsSync(CHROMIUM)) return false;
  if (process.env['REMESSA_TEST_REQUIRE_BROWSER'] === '1') throw new Error(BROWSER_SKIP);
  return BROWSER_SKIP;
}
export const PHONE = { width: 360, height: 740 };
export const DESKTOP = { width: 1280, height: 800 };
const SHOTS = path.resolve('test-results/portal');

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--disable-quic',
    ],
  });
}

export interface OpenedPage {
  context: BrowserContext;
  page: Page;
  /** Console messages and securitypolicyviolation events that mention the CSP. */
  cspViolations: string[];
  /** Every console error (for debugging failures). */
  consoleErrors: string[];
  close(): Promise<void>;
}

export async function openPage(
  browser: Browser,
  opts: { viewport?: { width: number; height: number }; locale?: string; timezoneId?: string } = {},
): Promise<OpenedPage> {
  const context = await browser.newContext({
    viewport: opts.viewport ?? DESKTOP,
    locale: opts.locale ?? 'en-US',
    ...(opts.timezoneId ? { timezoneId: opts.timezoneId } : {}),
    serviceWorkers: 'block',
  });
  const page = await context.newPage();
  const cspViolations: string[] = [];
  const consoleErrors: string[] = [];
  page.on('console', (msg) => {
    const text = msg.text();
    if (/content security policy/i.test(text)) cspViolations.push(text);
    if (msg.type() === 'error') consoleErrors.push(text);
  });
  page.on('pageerror', (err) => consoleErrors.push(`pageerror: ${err.message}`));
  await context.exposeBinding('__cspViolation', (_source, text: string) => {
    cspViolations.push(text);
  });
  await context.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e) => {
      const w = window as unknown as { __cspViolation?: (s: string) => void };
      w.__cspViolation?.(`${e.violatedDirective} blocked ${e.blockedURI}`);
    });
  });
  return { context, page, cspViolations, consoleErrors, close: () => context.close() };
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  targets: string[];
}

/** Runs axe-core (WCAG 2 A/AA rules) on the page; returns serious and critical violations. */
export async function seriousAxeViolations(page: Page): Promise<AxeViolation[]> {
  // Runtime evaluation is not subject to the page's CSP, so the strict policy stays on.
  await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(ctx: Document, opts: object): Promise<AxeResults> } }).axe;
    interface AxeResults {
      violations: { id: string; impact: string | null; help: string; nodes: { target: string[] }[] }[];
    }
    const res = await axe.run(document, {
      runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] },
    });
    return res.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      targets: v.nodes.map((n) => n.target.join(' ')),
    }));
  });
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

/** True when the page is wider than the viewport (horizontal scrolling). */
export async function scrollsSideways(page: Page): Promise<boolean> {
  return page.evaluate(() => document.documentElement.scrollWidth > document.documentElement.clientWidth);
}

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
}

/**
 * What every page of the portal must pass, where it stands now: no serious axe violation on a
 * desktop and on a phone, no sideways scrolling at 360 px, no CSP violation so far; screenshots
 * `<name>-desktop` and `<name>-phone`. The page is left at desktop size.
 */
export async function assertPageChecks(o: OpenedPage, name: string): Promise<void> {
  const { page } = o;
  await page.setViewportSize(DESKTOP);
  assert.deepEqual(await seriousAxeViolations(page), [], `${name}: axe on desktop`);
  await screenshot(page, `${name}-desktop`);
  await page.setViewportSize(PHONE);
  assert.equal(await scrollsSideways(page), false, `${name}: no sideways scroll at 360 px`);
  assert.deepEqual(await seriousAxeViolations(page), [], `${name}: axe on a phone`);
  await screenshot(page, `${name}-phone`);
  await page.setViewportSize(DESKTOP);
  assert.deepEqual(o.cspViolations, [], `${name}: CSP`);
}

/** The portal's password sign-in form, filled and sent (`words`: its labels in another language). */
export async function signInWithPassword(
  page: Page,
  user: string,
  password: string,
  words = ['Username', 'Password', 'Sign in'],
): Promise<void> {
  await page.getByLabel(words[0]!).fill(user);
  await page.getByLabel(words[1]!, { exact: true }).fill(password);
  await page.getByRole('button', { name: words[2]! }).click();
}
