// Property-based fuzzing of the HTTP surface: queries, headers, multipart framing and
// raw sockets with half-closes and resets. Shared by the bounded suite in `npm test`
// (test/fuzz.test.ts) and the long run `npm run fuzz -- --count N` (test/fuzz/run.ts).
// Every property asserts: the server stays up, every answer is a well-formed envelope (or the
// token endpoint's OAuth error object, or a download) with a status below 500.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { httpHead, rawRequest } from '../helpers/raw.js';
import { basic, ERROR_KEYS, errorKeys, type TestServer } from '../helpers/server.js';
import { recoveryGuessProperty, reservedNameProperty, webhookUrlProperty } from './abuse.js';
import { forgedKeyProperty, keyBodyProperty } from './keys.js';
import {
  quotaValueProperty,
  requestBodyProperty,
  requestMetadataProperty,
  requestTokenProperty,
} from './requests.js';

export const FUZZ_USER = { name: 'fuzzer', password: 'fuzzer-password' };

/** Every route of interface.md and the extensions, with its methods. */
const ROUTES: { path: string; methods: string[] }[] = [
  { path: '/oauth2/token', methods: ['POST'] },
  { path: '/auth/login', methods: ['POST'] },
  { path: '/auth/logout', methods: ['POST'] },
  { path: '/auth/forgetParameters', methods: ['GET', 'POST'] },
  { path: '/auth/changeParameters', methods: ['POST'] },
  { path: '/auth/firstaccess', methods: ['GET'] },
  { path: '/upload', methods: ['POST'] },
  { path: '/download/file', methods: ['GET', 'HEAD'] },
  { path: '/download/file/backup', methods: ['GET', 'HEAD'] },
  { path: '/download/list', methods: ['GET'] },
  { path: '/download/list/backup', methods: ['GET'] },
  { path: '/download/pin', methods: ['POST'] },
  { path: '/download/info', methods: ['GET'] },
  { path: '/webhooks', methods: ['GET', 'POST', 'DELETE'] },
  { path: '/keys', methods: ['GET', 'POST'] },
  { path: '/keys/0123456789abcdef', methods: ['DELETE'] },
  { path: '/admin/keys', methods: ['GET'] },
  { path: '/docs', methods: ['GET', 'POST', 'HEAD'] },
  { path: '/docs/json', methods: ['GET', 'PUT'] },
  { path: '/docs/static/index.html', methods: ['GET', 'HEAD', 'DELETE'] },
  { path: '/docs/static/swagger-ui.css', methods: ['GET', 'HEAD'] },
  { path: '/openapi.json', methods: ['GET', 'POST'] },
  { path: '/nowhere', methods: ['GET', 'DELETE', 'PUT'] },
];

const PARAM_NAMES = ['k', 'p', 'z', 'u', 'd', 'c', 'm', 'i', 'file', 'page', 'lang', 'dl', 'grant_type', 'x'];

const nasty = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.constantFrom(
    '',
    '%00',
    '%',
    '%zz',
    '../../etc/passwd',
    '0',
    '-1',
    '99999999999999999999',
    'a'.repeat(3000),
  ),
  fc.constantFrom('\u0000', '\r\nX-Injected: 1', '<script>', "' OR 1=1 --", '\uFFFF', '\uD800'),
);

const query = fc.dictionary(fc.constantFrom(...PARAM_NAMES), nasty, { maxKeys: 5 });

const route = fc
  .constantFrom(...ROUTES)
  .chain((r) => fc.record({ path: fc.constant(r.path), method: fc.constantFrom(...r.methods) }));

/** Checks one answer: below 500 (or the one documented 503 of a full disk), with the right shape. */
export function checkAnswer(path: string, status: number, contentType: string | null, text: string): void {
  assert.ok(status < 500, `${path}: ${status} ${text.slice(0, 300)}`);
  if (status < 400) return; // a download or a success envelope
  if (status === 304) return;
  if (!contentType?.includes('application/json'))
    assert.fail(`${path}: ${status} answered with ${contentType}`);
  if (text === '') return; // HEAD
  const body = JSON.parse(text) as Record<string, unknown>;
  if (path.endsWith('/oauth2/token')) {
    assert.deepEqual(Object.keys(body).sort(), ['error', 'error_description', 'error_uri'], text);
    return;
  }
  assert.deepEqual(errorKeys(body), ERROR_KEYS, text);
  assert.equal(body['status'], status);
}

/** Percent-encodes every byte (also of strings encodeURIComponent refuses, such as lone surrogates). */
function encodeBytes(v: string): string {
  return [...Buffer.from(v, 'utf8')].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('');
}

function encodeQuery(q: Record<string, string>): string {
  const parts = Object.entries(q).map(([k, v]) => {
    // Some values go raw (odd escapes) and some encoded, as clients do both.
    const value = /^%|%00/.test(v) ? v : encodeBytes(v);
    return `${encodeURIComponent(k)}=${value}`;
  });
  return parts.length ? `?${parts.join('&')}` : '';
}

export interface FuzzContext {
  t: TestServer;
  bearer: string;
  seed: number;
  numRuns: number;
}

async function ask(method: string, url: string, init: RequestInit = {}): Promise<void> {
  const res = await fetch(url, { method, ...init, signal: AbortSignal.timeout(30_000) });
  const text = await res.text();
  checkAnswer(new URL(url).pathname, res.status, res.headers.get('content-type'), text);
}

/** Queries of every shape on every route, anonymous, with Basic and with Bearer. */
export function queriesProperty(ctx: FuzzContext) {
  return fc.asyncProperty(route, query, fc.constantFrom('none', 'basic', 'bearer'), async (r, q, scheme) => {
    // A logout with the shared bearer would revoke it for the properties that follow.
    const auth = r.path === '/auth/logout' && scheme === 'bearer' ? 'none' : scheme;
    const headers: Record<string, string> = {};
    if (auth === 'basic') headers['Authorization'] = basic(FUZZ_USER.name, FUZZ_USER.password);
    if (auth === 'bearer') headers['Authorization'] = `Bearer ${ctx.bearer}`;
    const init: RequestInit = { headers };
    if (r.method === 'POST') {
      headers['Content-Type'] = 'application/x-www-form-urlencoded';
      init.body = new URLSearchParams(Object.entries(q)).toString();
    }
    await ask(r.method, `${ctx.t.base}${r.path}${encodeQuery(q)}`, init);
  });
}

const headerValue = fc.oneof(
  nasty,
  fc.constantFrom(
    'Basic',
    'Basic ',
    'Basic !!!',
    'Basic Og==',
    `Basic ${Buffer.from(':').toString('base64')}`,
    `Basic ${Buffer.from('a'.repeat(5000)).toString('base64')}`,
    'Bearer',
    'Bearer x.y.z',
    'Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJmdXp6ZXIifQ.',
    'Digest username="x"',
    'multipart/form-data',
    'multipart/form-data; boundary=',
    'application/json',
    'application/octet-stream',
    'text/plain',
  ),
);

/** Authorization, Content-Type, Content_type, Range and conditional headers of every shape. */
export function headersProperty(ctx: FuzzContext) {
  return fc.asyncProperty(
    route,
    fc.record(
      {
        Authorization: headerValue,
        'Content-Type': headerValue,
        Content_type: headerValue,
        Range: fc.oneof(
          nasty,
          fc.constantFrom('bytes=0-0', 'bytes=-5', 'bytes=5-', 'bytes=9-1', 'bytes=0-1,2-3'),
        ),
        'If-None-Match': nasty,
        'If-Modified-Since': nasty,
      },
      { requiredKeys: [] },
    ),
    fc.oneof(fc.constant(''), fc.string({ maxLength: 200 }), fc.constant('{"k":')),
    async (r, headers, body) => {
      // fetch refuses some values (control characters): those never reach a server from it.
      const clean: Record<string, string> = {};
      for (const [k, v] of Object.entries(headers)) if (/^[\t\x20-\x7e]*$/.test(v)) clean[k] = v;
      const init: RequestInit = { headers: clean };
      if (r.method === 'POST' && body) init.body = body;
      await ask(r.method, `${ctx.t.base}${r.path}`, init);
    },
  );
}

/** Multipart bodies with odd boundaries, headers and truncation. */
export function multipartProperty(ctx: FuzzContext) {
  const part = fc.record({
    name: fc.oneof(fc.constant('file'), nasty),
    filename: fc.option(fc.oneof(fc.constant('a.txt'), nasty), { nil: undefined }),
    data: fc.uint8Array({ maxLength: 2000 }),
    extraHeader: fc.option(
      fc.constantFrom('Content-Type: text/plain', 'Content-Transfer-Encoding: base64', 'X: y'),
      {
        nil: undefined,
      },
    ),
  });
  return fc.asyncProperty(
    fc.oneof(fc.constant('XyZzY'), fc.stringMatching(/^[A-Za-z0-9'()+_,./:=?-]{1,70}$/)),
    fc.array(part, { maxLength: 4 }),
    fc.option(fc.nat(4000), { nil: undefined }),
    fc.boolean(),
    async (boundary, parts, cut, closingDelimiter) => {
      const chunks: Buffer[] = [];
      for (const p of parts) {
        const disposition = `Content-Disposition: form-data; name="${p.name}"${p.filename === undefined ? '' : `; filename="${p.filename}"`}`;
        chunks.push(
          Buffer.from(
            `--${boundary}\r\n${disposition}\r\n${p.extraHeader ? `${p.extraHeader}\r\n` : ''}\r\n`,
          ),
          Buffer.from(p.data),
          Buffer.from('\r\n'),
        );
      }
      if (closingDelimiter) chunks.push(Buffer.from(`--${boundary}--\r\n`));
      let body = Buffer.concat(chunks);
      if (cut !== undefined && cut < body.length) body = body.subarray(0, cut);
      await ask('POST', `${ctx.t.base}/upload?file=fuzz.bin`, {
        headers: {
          Authorization: `Bearer ${ctx.bearer}`,
          'Content-Type': `multipart/form-data; boundary=${boundary}`,
        },
        body,
      });
    },
  );
}

const ending = fc.constantFrom('half-close', 'reset', 'keep-open') as fc.Arbitrary<
  'half-close' | 'reset' | 'keep-open'
>;

/** Raw bytes over TCP: broken request lines, header junk, chunked framing, short bodies, resets. */
export function rawSocketProperty(ctx: FuzzContext) {
  const host = new URL(ctx.t.origin).host;
  const apiPath = new URL(ctx.t.base).pathname;
  const line = fc.oneof(
    fc.string({ maxLength: 60 }),
    fc.constantFrom(
      'Transfer-Encoding: chunked',
      'Transfer-Encoding: gzip, chunked',
      'Content-Length: 10',
      'Content-Length: -1',
      'Content-Length: 99999999999999999999',
      'Content-Length: 5\r\nContent-Length: 6',
      'Content-Type: application/octet-stream',
      'Content-Type: multipart/form-data; boundary=b',
      'Expect: 100-continue',
      'Connection: close',
      `Authorization: ${basic(FUZZ_USER.name, FUZZ_USER.password)}`,
    ),
  );
  const body = fc.oneof(
    fc.string({ maxLength: 300 }),
    fc.constantFrom(
      '0\r\n\r\n',
      '5\r\nabc',
      'zz\r\n',
      'ffffffffffffffff\r\n',
      '--b\r\nContent-Disposition: form-data; name="f"; filename="a"\r\n\r\nxx',
    ),
  );
  return fc.asyncProperty(
    fc.constantFrom('GET', 'POST', 'HEAD', 'PUT', 'OPTIONS', 'TRACE', 'BREW', 'G\u00c9T'),
    fc.oneof(fc.constantFrom(...ROUTES.map((r) => `${apiPath}${r.path}`)), fc.string({ maxLength: 50 })),
    fc.array(line, { maxLength: 5 }),
    body,
    ending,
    async (method, target, lines, payload, end) => {
      const head = httpHead(method, target.startsWith('/') ? target : `/${target}`, host, lines);
      const a = await rawRequest(ctx.t.origin, head, payload, {
        ending: end,
        waitMs: end === 'keep-open' ? 300 : 10_000,
      });
      if (a.status !== null)
        assert.ok(a.status < 500, `${a.status} for ${JSON.stringify(head + payload).slice(0, 300)}`);
    },
  );
}

/**
 * A transfer coding Node cannot frame (anything but chunked last, or gzip before chunked) on any
 * method and route, the tus endpoints included: a 400 envelope, however the client ends.
 */
export function codingsProperty(ctx: FuzzContext) {
  const host = new URL(ctx.t.origin).host;
  const apiPath = new URL(ctx.t.base).pathname;
  const tus = ['/uploads', '/uploads/AAAAAAAAAAAAAAAAAAAAAAAA'];
  return fc.asyncProperty(
    fc.constantFrom('GET', 'POST', 'HEAD', 'PATCH', 'OPTIONS', 'DELETE'),
    // (not the token endpoint: its errors are OAuth error objects)
    fc.oneof(
      fc.constantFrom(...tus),
      fc.constantFrom(...ROUTES.map((r) => r.path).filter((r) => r !== '/oauth2/token')),
    ),
    fc.constantFrom('gzip', 'deflate', 'br', 'identity', 'gzip, chunked', 'chunked, gzip', 'x-fuzz'),
    fc.constantFrom('', '5\r\nhello\r\n0\r\n\r\n', 'hello'),
    fc.constantFrom('half-close', 'keep-open') as fc.Arbitrary<'half-close' | 'keep-open'>,
    async (method, path, coding, payload, end) => {
      const head = httpHead(method, `${apiPath}${path}`, host, [
        `Authorization: ${basic(FUZZ_USER.name, FUZZ_USER.password)}`,
        'Tus-Resumable: 1.0.0',
        'Content-Type: application/offset+octet-stream',
        `Transfer-Encoding: ${coding}`,
      ]);
      const a = await rawRequest(ctx.t.origin, head, payload, { ending: end, waitMs: 10_000 });
      const what = JSON.stringify(head + payload);
      assert.equal(a.status, 400, `${a.status} for ${what}`);
      if (method !== 'HEAD') assert.deepEqual(errorKeys(a.json), ERROR_KEYS, `${a.body} for ${what}`);
    },
  );
}

export const PROPERTIES = {
  queries: queriesProperty,
  headers: headersProperty,
  multipart: multipartProperty,
  rawSockets: rawSocketProperty,
  webhookUrls: webhookUrlProperty,
  reservedNames: reservedNameProperty,
  recoveryGuessing: recoveryGuessProperty,
  codings: codingsProperty,
  requestBodies: requestBodyProperty,
  quotaValues: quotaValueProperty,
  requestTokens: requestTokenProperty,
  requestMetadata: requestMetadataProperty,
  keyBodies: keyBodyProperty,
  // Last: its failed sign-ins may leave the address refused (429) for a minute.
  forgedKeys: forgedKeyProperty,
} as const;

/** Runs one property with the context's seed and count; fast-check shrinks a failure to its smallest case. */
export async function runProperty(ctx: FuzzContext, name: keyof typeof PROPERTIES): Promise<void> {
  const property = PROPERTIES[name](ctx) as fc.IAsyncProperty<unknown[]>;
  await fc.assert(property, { seed: ctx.seed, numRuns: ctx.numRuns, endOnFailure: true });
}
