// Fuzz properties for upload requests and quotas: create bodies of every shape (a request only when
// valid, nothing on a refusal), forged and mangled request tokens on the outsider's page and PIN,
// tus creations whose `request` / `pin` metadata is hostile (never an upload row on a refusal),
// and an admin's quota and largest-file values (the account changes only when the answer is 200).
// Part of PROPERTIES (properties.ts).
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { metadata } from '../helpers/requests.js';
import { basic, call } from '../helpers/server.js';
import { checkAnswer, FUZZ_USER, type FuzzContext } from './properties.js';

export const FUZZ_ADMIN = { name: 'fuzzadmin', password: 'fuzzadmin-password' };

const B64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const chars = (alphabet: string, min: number, max: number) =>
  fc.array(fc.constantFrom(...alphabet), { minLength: min, maxLength: max }).map((a) => a.join(''));

const nasty = fc.oneof(
  fc.string({ maxLength: 80 }),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.string({ maxLength: 30 }), { maxLength: 4 }),
  fc.constantFrom('', '0', '-1', '1e999', '99999999999999999999', '2001-01-01', '2999-01-01T00:00:00Z'),
  fc.constantFrom('\u0000', '\r\nX-Injected: 1', '<script>', "' OR 1=1 --", '\uD800', 'a'.repeat(3000)),
);

const requestBody = fc.oneof(
  fc.record(
    {
      title: nasty,
      message: nasty,
      emails: nasty,
      mobiles: nasty,
      maxFiles: nasty,
      maxFileBytes: nasty,
      maxTotalBytes: nasty,
      expires: nasty,
      reusable: nasty,
      d: nasty,
      extra: nasty,
    },
    { requiredKeys: [] },
  ),
  fc.record({
    title: fc.string({ minLength: 0, maxLength: 220 }),
    maxFiles: fc.integer({ min: -5, max: 20_000 }),
    maxFileBytes: fc.integer({ min: -5, max: 200_000 }),
    maxTotalBytes: fc.integer({ min: -5, max: 2_000_000 }),
    reusable: fc.boolean(),
    emails: fc.array(fc.constantFrom('x@example.com', 'bad', '', 'a@b'), { maxLength: 3 }),
  }),
  fc.json().map((j) => JSON.parse(j) as unknown),
);

const count = (ctx: FuzzContext, table: 'upload_requests' | 'uploads') => async () =>
  (
    await ctx.t.server.services.db
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow()
  ).n;

export function requestBodyProperty(ctx: FuzzContext) {
  const requests = count(ctx, 'upload_requests');
  return fc.asyncProperty(requestBody, async (body) => {
    const before = Number(await requests());
    const r = await call(`${ctx.t.base}/requests`, {
      method: 'POST',
      headers: {
        Authorization: basic(FUZZ_USER.name, FUZZ_USER.password),
        'Content-Type': 'application/json',
      },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
    });
    assert.ok(r.status === 200 || r.status === 400, `${r.status} for ${JSON.stringify(body)}`);
    if (r.status === 400) assert.match(String(r.body['detail']), /\S/);
    assert.equal(Number(await requests()), before + (r.status === 200 ? 1 : 0));
  });
}

const forgedToken = fc.oneof(
  chars(B64URL, 0, 60),
  fc.string({ maxLength: 80 }),
  fc.constantFrom('', '%00', '%zz', '../../x', 'a'.repeat(3000), '\r\nX: 1'),
);

export function requestTokenProperty(ctx: FuzzContext) {
  return fc.asyncProperty(forgedToken, fc.constantFrom('open', 'pin'), async (token, what) => {
    const url = `${ctx.t.base}/requests/${what}?t=${encodeURIComponent(token)}`;
    const r = await fetch(url, {
      method: what === 'pin' ? 'POST' : 'GET',
      signal: AbortSignal.timeout(30_000),
    });
    const text = await r.text();
    checkAnswer(`/requests/${what}`, r.status, r.headers.get('content-type'), text);
    assert.ok([400, 401, 429].includes(r.status), `${r.status} for ${JSON.stringify(token)}`);
  });
}

/** A request whose only link is an invited address's: a creation needs its PIN. */
async function invitedToken(ctx: FuzzContext): Promise<string> {
  const r = await call(`${ctx.t.base}/requests`, {
    method: 'POST',
    headers: { Authorization: basic(FUZZ_USER.name, FUZZ_USER.password), 'Content-Type': 'application/json' },
    body: JSON.stringify({ title: 'fuzz', emails: ['invited@example.com'], reusable: true }),
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const links = (r.body['request'] as { links: { url: string }[] }).links;
  return new URL(links[0]!.url).searchParams.get('t')!;
}

export function requestMetadataProperty(ctx: FuzzContext) {
  const uploads = count(ctx, 'uploads');
  let invited: string | undefined;
  const fields = fc.record(
    {
      filename: fc.oneof(fc.constant('f.bin'), fc.string({ maxLength: 40 })),
      request: fc.oneof(forgedToken, fc.constant('<invited>')),
      pin: fc.oneof(chars('0123456789', 0, 8), fc.string({ maxLength: 20 })),
      d: fc.constantFrom('fuzzer', 'nobody'),
      m: fc.constantFrom('x@example.com', ''),
    },
    { requiredKeys: ['request'] },
  );
  return fc.asyncProperty(
    fields,
    fc.oneof(fc.integer({ min: 0, max: 10_000_000 }), fc.constantFrom('-1', 'x', '')),
    async (meta, length) => {
      invited ??= await invitedToken(ctx);
      const values = { ...meta, request: meta.request === '<invited>' ? invited : meta.request };
      const before = Number(await uploads());
      const r = await fetch(`${ctx.t.base}/uploads`, {
        method: 'POST',
        headers: {
          'Tus-Resumable': '1.0.0',
          'Upload-Length': String(length),
          'Upload-Metadata': metadata(values as Record<string, string>),
        },
        signal: AbortSignal.timeout(30_000),
      });
      const text = await r.text();
      checkAnswer('/uploads', r.status, r.headers.get('content-type'), text);
      // No credential but the token: every one of these is refused (an invited link wants its PIN).
      assert.ok(r.status >= 400 && r.status < 500, `${r.status} for ${JSON.stringify(values)}`);
      assert.equal(Number(await uploads()), before);
    },
  );
}

const size = fc.oneof(
  nasty,
  fc.constantFrom(
    '10GiB',
    '1KiB',
    '1 MB',
    '0',
    'default',
    '-1GiB',
    '1.5GiB',
    '9999999999PiB',
    'NaN',
    'Infinity',
  ),
  fc.integer({ min: -10, max: 2 ** 53 }).map(String),
);

export function quotaValueProperty(ctx: FuzzContext) {
  const { users } = ctx.t.server.services;
  return fc.asyncProperty(
    fc.record({ quota: size, maxFileSize: size }, { requiredKeys: [] }),
    async (body) => {
      if (!(await users.find(FUZZ_ADMIN.name)))
        await users.create(
          FUZZ_ADMIN.name,
          { email: 'fuzzadmin@example.com', role: 'admin' },
          FUZZ_ADMIN.password,
        );
      const before = await users.find(FUZZ_USER.name);
      const r = await call(`${ctx.t.base}/admin/users/${FUZZ_USER.name}`, {
        method: 'PATCH',
        headers: {
          Authorization: basic(FUZZ_ADMIN.name, FUZZ_ADMIN.password),
          'Content-Type': 'application/json',
        },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(30_000),
      });
      assert.ok(r.status === 200 || r.status === 400, `${r.status} for ${JSON.stringify(body)}`);
      const after = await users.find(FUZZ_USER.name);
      if (r.status === 400) {
        assert.equal(after?.quota_bytes, before?.quota_bytes);
        assert.equal(after?.max_file_bytes, before?.max_file_bytes);
      }
      // Back to the defaults, so the other properties' uploads are not refused for quota.
      if (r.status === 200) await users.update(FUZZ_USER.name, { quota: 'default', maxFileSize: 'default' });
    },
  );
}
