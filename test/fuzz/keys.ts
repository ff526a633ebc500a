// Fuzz properties for API keys: forged and mangled keys as Basic's password and as Bearer tokens
// are refused (401, or 429 once an address has failed too often) and never reach a 5xx; bodies of
// every shape for POST /keys make a key only when valid, and a refused one makes nothing.
// Part of PROPERTIES (properties.ts).
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { basic, call } from '../helpers/server.js';
import { checkAnswer, FUZZ_USER, type FuzzContext } from './properties.js';

const B64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const chars = (alphabet: string, min: number, max: number) =>
  fc.array(fc.constantFrom(...alphabet), { minLength: min, maxLength: max }).map((a) => a.join(''));

/** Strings shaped like keys, well-formed or nearly so. */
const forgedKey = fc.oneof(
  fc.tuple(chars('0123456789abcdef', 16, 16), chars(B64URL, 43, 43)).map(([id, s]) => `rmk_${id}_${s}`),
  fc.tuple(chars('0123456789abcdefABCDEF', 0, 20), chars(B64URL, 0, 60)).map(([id, s]) => `rmk_${id}_${s}`),
  fc.string({ maxLength: 80 }).map((s) => `rmk_${s}`),
);

export function forgedKeyProperty(ctx: FuzzContext) {
  return fc.asyncProperty(forgedKey, fc.boolean(), async (key, asBasic) => {
    const auth = asBasic ? basic(FUZZ_USER.name, key) : `Bearer ${key}`;
    const r = await fetch(`${ctx.t.base}/download/list?page=1`, {
      headers: { Authorization: auth },
      signal: AbortSignal.timeout(30_000),
    });
    const text = await r.text();
    checkAnswer('/download/list', r.status, r.headers.get('content-type'), text);
    assert.ok([400, 401, 429].includes(r.status), `${r.status} for ${JSON.stringify(auth)}`);
  });
}

const nasty = fc.oneof(fc.string({ maxLength: 120 }), fc.integer(), fc.constant(null), fc.array(fc.string()));
const keyBody = fc.oneof(
  fc.record({ name: nasty, expires: nasty, scopes: nasty, extra: nasty }, { requiredKeys: [] }),
  fc.record({ name: fc.string({ maxLength: 120 }), scopes: fc.subarray(['upload', 'download', 'root', '']) }),
  fc.json().map((j) => JSON.parse(j) as unknown),
);

export function keyBodyProperty(ctx: FuzzContext) {
  const { db } = ctx.t.server.services;
  const count = async () => (await db.selectFrom('api_keys').select('id').execute()).length;
  const { auth, users } = ctx.t.server.services;
  return fc.asyncProperty(keyBody, async (body) => {
    // A token of its own: earlier properties move the clock past the shared one's expiry.
    const user = (await users.find(FUZZ_USER.name))!;
    const { token } = await auth.issueToken({ user, keyId: null, scopes: null }, 'token', null);
    const before = await count();
    const r = await call(`${ctx.t.base}/keys`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
    });
    assert.ok(r.status === 200 || r.status === 400, `${r.status} for ${JSON.stringify(body)}`);
    const made = r.status === 200 ? (r.body['apiKey'] as { id: string }) : null;
    assert.equal(await count(), before + (made ? 1 : 0));
    // Revoked at once, and removed, so the account never reaches its key limit.
    if (made) await db.deleteFrom('api_keys').where('id', '=', made.id).execute();
  });
}
