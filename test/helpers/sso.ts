// What the single sign-on tests check after each attempt: the page, the audit row, the accounts.
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import type { FailureReason } from '../../src/features/sso/failure.js';
import { FAILURE_TEXT } from '../../src/features/sso/failure-page.js';
import { CLIENT_ID, CLIENT_SECRET } from './oidc-provider.js';
import type { TestServer } from './server.js';

export const ROLE_ENV = {
  REMESSA_OIDC_SCOPES: 'openid email profile groups',
  REMESSA_OIDC_ROLE_CLAIM: 'groups',
  REMESSA_OIDC_ROLE_MAP: 'remessa-admins=admin,remessa-audit=auditor',
  REMESSA_OIDC_NAME: 'Test IdP',
};

/** Settings of a Remessa that signs people in at `issuer` (the tests' provider's client). */
export const ssoEnv = (issuer: string, more: Record<string, string> = {}) => ({
  REMESSA_OIDC_ISSUER: issuer,
  REMESSA_OIDC_CLIENT_ID: CLIENT_ID,
  REMESSA_OIDC_CLIENT_SECRET: CLIENT_SECRET,
  ...ROLE_ENV,
  ...more,
});

/** In the portal's sign-in page: "Sign in with Test IdP", then the provider's form as `sub`. */
export async function signInThroughProvider(page: Page, sub: string): Promise<void> {
  await page.getByRole('link', { name: 'Sign in with Test IdP' }).click();
  // The provider's own login form (any password, the login is the subject).
  await page.locator('input[name="login"]').fill(sub);
  await page.locator('input[name="password"]').fill('whatever');
  await page.getByRole('button', { name: 'Sign-in' }).click();
  await page.getByRole('heading', { name: 'Send files' }).waitFor();
}

/** On the send page: sends one small text file `name` to user `to`, and waits for its link. */
export async function sendFromPortal(page: Page, name: string, to: string): Promise<void> {
  await page.getByLabel('Files').setInputFiles([{ name, mimeType: 'text/plain', buffer: Buffer.from(name) }]);
  await page.getByLabel('Destination user').fill(to);
  await page.getByRole('button', { name: 'Send', exact: true }).click();
  await page.getByLabel(`Link for ${name}`).waitFor();
}

/** The answer to a failed sign-in: `status`, the page in `lang` saying `reason`, and its audit row. */
export async function assertFailurePage(
  t: TestServer,
  res: Response,
  status: number,
  reason: FailureReason,
  lang: 'en' | 'pt' | 'es' = 'en',
): Promise<void> {
  const html = await res.text();
  assert.equal(res.status, status, html.slice(0, 400));
  assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
  assert.match(res.headers.get('content-security-policy') ?? '', /script-src 'self'/);
  assert.ok(html.includes(`<p id="sso-reason">${htmlText(FAILURE_TEXT[lang].reasons[reason])}</p>`), html);
  assert.ok(html.includes(FAILURE_TEXT[lang].back));
  assert.doesNotMatch(html, /<script/);
  const row = await t.server.services.db
    .selectFrom('audit')
    .selectAll()
    .where('event', '=', 'login.oidc.failed')
    .orderBy('id', 'desc')
    .executeTakeFirst();
  assert.ok(row?.detail?.startsWith(`${reason}: `), `audit detail: ${row?.detail}`);
}

const htmlText = (s: string) => s.replace(/&/g, '&amp;').replace(/'/g, '&#39;').replace(/"/g, '&quot;');

export async function userNames(t: TestServer): Promise<string[]> {
  const rows = await t.server.services.db.selectFrom('users').select('name').orderBy('name').execute();
  return rows.map((r) => r.name);
}

/** POST {base}/auth/oidc/session with the code of a callback's redirect. */
export async function trade(
  t: TestServer,
  location: string,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const code = /#\/sso\/([A-Za-z0-9_-]+)$/.exec(location)?.[1] ?? '';
  const res = await fetch(`${t.base}/auth/oidc/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ code }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}
