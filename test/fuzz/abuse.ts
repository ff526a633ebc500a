// Fuzz properties for abuse of what the service accepts rather than how it parses: webhook URLs
// that spell an inner address in IPv6, Windows device names as file names, and PIN guessing at
// one account over many change links. Part of PROPERTIES (properties.ts).
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { isPrivateAddress } from '../../src/features/webhooks/url-safety.js';
import { call } from '../helpers/server.js';
import { checkAnswer, type FuzzContext } from './properties.js';

/** The account the recovery property guesses at (made by the harness). */
export const GUESSEE = { name: 'guessee', password: 'guessee-password' };

const PRIVATE_REFUSAL =
  'url: loopback, link-local and private addresses are refused (REMESSA_WEBHOOK_ALLOW_PRIVATE)';

const octet = fc.nat(255);
/** IPv4 addresses a webhook may not reach, as four octets. */
const innerV4 = fc.oneof(
  fc.tuple(fc.constant(127), octet, octet, octet),
  fc.tuple(fc.constant(10), octet, octet, octet),
  fc.tuple(fc.constant(192), fc.constant(168), octet, octet),
  fc.tuple(fc.constant(169), fc.constant(254), octet, octet),
  fc.tuple(fc.constant(172), fc.integer({ min: 16, max: 31 }), octet, octet),
  fc.tuple(fc.constant(0), octet, octet, octet),
);

/** The IPv6 spellings that carry an IPv4 address. */
const V6_FORMS: ((dotted: string, hex: string) => string)[] = [
  (_d, h) => `::${h}`,
  (d) => `::${d}`,
  (_d, h) => `::ffff:${h}`,
  (d) => `::ffff:${d}`,
  (_d, h) => `0:0:0:0:0:ffff:${h}`,
  (d) => `::ffff:0:${d}`,
  (_d, h) => `64:ff9b::${h}`,
  (_d, h) => `64:ff9b:1::${h}`,
];

const innerV6 = fc
  .tuple(innerV4, fc.nat(V6_FORMS.length - 1), fc.boolean())
  .map(([[a, b, c, d], form, upper]) => {
    const hex = `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
    const text = V6_FORMS[form]!(`${a}.${b}.${c}.${d}`, hex);
    return upper ? text.toUpperCase() : text;
  });

const otherInner = fc.constantFrom(
  '::',
  '::1',
  'fe80::',
  'FE80::1',
  'febf::',
  'fc00::',
  'fd12:3456::1',
  'ff02::1',
);

/** Inner addresses in IPv6 are refused with the 400 envelope; nothing else is a 5xx. */
export function webhookUrlProperty(ctx: FuzzContext) {
  const auth = { Authorization: `Bearer ${ctx.bearer}`, 'Content-Type': 'application/json' };
  return fc.asyncProperty(
    fc.oneof(
      fc.tuple(fc.oneof(innerV6, otherInner), fc.constant(true)),
      fc.tuple(fc.string({ maxLength: 40 }), fc.constant(false)),
    ),
    fc.constantFrom('http', 'https'),
    fc.option(fc.integer({ min: 1, max: 65535 }), { nil: undefined }),
    async ([host, inner], scheme, port) => {
      const url = inner ? `${scheme}://[${host}]${port ? `:${port}` : ''}/hook` : `${scheme}://${host}/hook`;
      const res = await fetch(`${ctx.t.base}/webhooks`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ url }),
        signal: AbortSignal.timeout(30_000),
      });
      const text = await res.text();
      checkAnswer('/webhooks', res.status, res.headers.get('content-type'), text);
      if (inner) {
        assert.equal(res.status, 400, `${url} was accepted`);
        assert.equal((JSON.parse(text) as { detail: string }).detail, PRIVATE_REFUSAL, url);
      }
      if (res.status !== 200) return;
      const { webhook } = JSON.parse(text) as { webhook: { id: number; url: string } };
      const accepted = new URL(webhook.url).hostname.replace(/^\[|\]$/g, '');
      if (/^[\d.]+$|:/.test(accepted)) assert.ok(!isPrivateAddress(accepted), `${url} was accepted`);
      // At most 20 subscriptions a user: make room for the next run.
      await fetch(`${ctx.t.base}/webhooks?id=${webhook.id}`, { method: 'DELETE', headers: auth });
    },
  );
}

const DEVICES = ['con', 'prn', 'aux', 'nul', 'conin$', 'conout$'];
for (let i = 0; i <= 9; i++) DEVICES.push(`com${i}`, `lpt${i}`);

/** Windows device names, in any case, with or without extensions, never become files. */
export function reservedNameProperty(ctx: FuzzContext) {
  return fc.asyncProperty(
    fc.constantFrom(...DEVICES).chain((d) => fc.mixedCase(fc.constant(d))),
    fc.constantFrom('', ' ', '.', ' .'),
    fc.option(fc.stringMatching(/^\.[A-Za-z0-9]{1,5}(\.[a-z]{1,3})?$/), { nil: undefined }),
    fc.boolean(),
    async (device, gap, ext, multipart) => {
      const name = `${device}${ext ? gap + ext : gap}`;
      let res: Response;
      if (multipart) {
        const form = new FormData();
        form.append('f', new Blob([new Uint8Array(4)]), name);
        res = await fetch(`${ctx.t.base}/upload`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${ctx.bearer}` },
          body: form,
        });
      } else {
        res = await fetch(`${ctx.t.base}/upload?file=${encodeURIComponent(name)}`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${ctx.bearer}`, 'Content-Type': 'application/octet-stream' },
          body: new Uint8Array(4),
        });
      }
      const text = await res.text();
      checkAnswer('/upload', res.status, res.headers.get('content-type'), text);
      assert.equal(res.status, 400, `${JSON.stringify(name)} was stored`);
    },
  );
}

const guess = fc.oneof(
  fc.stringMatching(/^\d{6}$/),
  fc.constantFrom('', ' ', '0', '1234567', '00000a', '%', 'a'.repeat(300)),
);

/**
 * Many change links for one account, each guessed at: no guess changes the password, every answer
 * is an envelope from the documented set, and once ten PINs were wrong the account's recovery is
 * locked (audited once per lock).
 */
export function recoveryGuessProperty(ctx: FuzzContext) {
  const { t } = ctx;
  let wrong = 0;
  let hash: string | null | undefined;
  const passwordHash = async () => (await t.server.services.users.get(GUESSEE.name)).password_hash;
  const change = (k: string, p: string) =>
    fetch(`${t.base}/auth/changeParameters`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ k, p, z: 'guessed-password' }),
      signal: AbortSignal.timeout(30_000),
    });
  return fc.asyncProperty(fc.array(guess, { maxLength: 7 }), async (guesses) => {
    hash ??= await passwordHash();
    // A link a minute, as a patient guesser asks for them (and a fresh per-address window).
    await t.advanceClock(61_000);
    const link = await call(`${t.base}/auth/forgetParameters?u=${GUESSEE.name}`);
    assert.ok([200, 429].includes(link.status), `forget: ${link.status}`);
    if (link.status !== 200) return;
    const k = new URL(String(link.body['linkURL'])).searchParams.get('k')!;
    for (const p of guesses) {
      const res = await change(k, p);
      const text = await res.text();
      checkAnswer('/auth/changeParameters', res.status, res.headers.get('content-type'), text);
      assert.ok([400, 401, 403, 429].includes(res.status), `guess ${JSON.stringify(p)}: ${res.status}`);
      if (res.status === 403 && text.includes('wrong PIN')) wrong++;
    }
    assert.equal(await passwordHash(), hash, 'the password is unchanged');
    if (wrong >= 10) {
      const locks = await t.server.services.audit.query({
        user: GUESSEE.name,
        event: 'password.recovery_locked',
      });
      assert.ok(locks.length >= 1, `${wrong} wrong PINs and no lock`);
    }
  });
}
