// The recorded response corpus (test/response-corpus.test.ts): raw HTTP exchanges with a test
// server, the few values that change from run to run replaced by placeholders, and the comparison
// with test/fixtures/response-corpus.json (or, with REMESSA_RECORD_CORPUS=1, its rewriting).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { rawRequest } from './raw.js';

export const FIXTURE = fileURLToPath(new URL('../../../test/fixtures/response-corpus.json', import.meta.url));
export const RECORDING = process.env['REMESSA_RECORD_CORPUS'] === '1';

export interface CorpusRequest {
  method: string;
  target: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** false: no Host line at all */
  host?: boolean;
}

export interface CorpusAnswer {
  status: number;
  header(name: string): string | undefined;
  text: string;
  json: Record<string, unknown>;
}

export interface Entry {
  name: string;
  request: { line: string; headers: Record<string, string>; body?: string };
  /** The status line after the version: "200 OK". */
  status: string;
  /** Lower-case names, sorted; a repeated header's values joined by "\n". */
  headers: Record<string, string>;
  body: string;
}

type Labeller = (kind: string, value: string) => string;

/**
 * What differs between two runs of the same requests, and only that; each rule says why its value
 * varies (`to` gets the whole match, then its groups). Besides these: the server's port (picked
 * per run; normalise), Date and the build-time headers of portal assets (headerValue), and the
 * Content-Length of a body a placeholder changed the length of (Corpus.entry). Everything else
 * (ids, sizes, sha256 ETags, Last-Modified and expiry times of the stopped test clock, rate-limit
 * counters, error details) is compared as sent.
 */
const RULES: { why: string; pattern: RegExp; to: (label: Labeller, ...match: string[]) => string }[] = [
  {
    why: 'the envelope `time` is the wall clock and process uptime (Go time.String), not the test clock',
    pattern:
      /\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{6} [+-]\d{4} (?:[A-Z]{2,5}|[+-]\d{2}(?:\d{2})?) m=\+\d+\.\d{9}/g,
    to: () => '<go-time>',
  },
  {
    why: 'JWTs carry a random jti (and the port, in iss and aud); numbered so a reuse still shows',
    pattern: /eyJ[A-Za-z0-9_-]+\.eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+/g,
    to: (label, jwt) => label('jwt', jwt!),
  },
  {
    why: 'link and change tokens (k=, z=) are 32 random bytes; numbered by first appearance',
    pattern: /((?:^|[?&])(?:k|z)=|"k":")([A-Za-z0-9_-]{43})(?![A-Za-z0-9_-])/g,
    to: (label, _match, prefix, token) => `${prefix}${label('token', token!)}`,
  },
  {
    why: 'tus upload ids are 18 random bytes',
    pattern: /(\/uploads\/)([A-Za-z0-9_-]{24})(?![A-Za-z0-9_-])/g,
    to: (label, _match, prefix, id) => `${prefix}${label('upload', id!)}`,
  },
  {
    why: 'webhook signing secrets are random',
    pattern: /whsec_[A-Za-z0-9_-]{43}/g,
    to: (label, secret) => `whsec_${label('secret', secret!)}`,
  },
  {
    why: 'PINs (only in requests) are random',
    pattern: /((?:^|[?&])p=|"p":")(\d{6})(?!\d)/g,
    to: (label, _match, prefix, pin) => `${prefix}${label('pin', pin!)}`,
  },
  {
    why: 'portal bundle names carry esbuild’s hash (the CSS body itself is compared)',
    pattern: /\/assets\/(app|styles)-[A-Z0-9]{8}\.(js|css)/g,
    to: (_label, _match, name, ext) => `/assets/${name}-<hash>.${ext}`,
  },
];

/**
 * Headers that vary by themselves: Date (the wall clock); for files served from disk (portal
 * assets) Last-Modified and the mtime half of the weak ETag (the build time).
 */
function headerValue(name: string, value: string, staticFile: boolean): string {
  if (name === 'date' && /^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/.test(value))
    return '<date>';
  if (staticFile && name === 'last-modified') return '<mtime>';
  if (staticFile && name === 'etag') return value.replace(/^(W\/"[0-9a-f]+-)[0-9a-f]+"$/, '$1<mtime>"');
  return value;
}

export class Corpus {
  readonly entries: Entry[] = [];
  private readonly labels = new Map<string, string>();
  private readonly counts = new Map<string, number>();
  private readonly hostPort: string;

  /** `settle` runs before every request: what the previous one left to finish is finished. */
  constructor(
    private readonly origin: string,
    private readonly settle: () => Promise<void>,
  ) {
    this.hostPort = new URL(origin).host;
  }

  private readonly label: Labeller = (kind, value) => {
    const key = `${kind}\0${value}`;
    let label = this.labels.get(key);
    if (!label) {
      const n = (this.counts.get(kind) ?? 0) + 1;
      this.counts.set(kind, n);
      label = `<${kind}:${n}>`;
      this.labels.set(key, label);
    }
    return label;
  };

  /** The rules above, and the server's port (picked per run). */
  normalise(text: string): string {
    let out = text.split(this.hostPort).join('127.0.0.1:<port>');
    for (const rule of RULES) out = out.replace(rule.pattern, (...m) => rule.to(this.label, ...m));
    return out;
  }

  async send(name: string, req: CorpusRequest): Promise<CorpusAnswer> {
    assert.ok(!this.entries.some((e) => e.name === name), `two corpus entries named ${name}`);
    await this.settle();
    const headers = { ...req.headers };
    const body = req.body === undefined ? undefined : Buffer.from(req.body);
    const framed = Object.keys(headers).some((h) => /^(content-length|transfer-encoding)$/i.test(h));
    if (body && !framed) headers['Content-Length'] = String(body.length);
    const lines = [
      ...(req.host === false ? [] : [`Host: ${this.hostPort}`]),
      ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
      'Connection: close',
    ];
    const head = `${req.method} ${req.target} HTTP/1.1\r\n${lines.map((l) => `${l}\r\n`).join('')}\r\n`;
    const raw = await rawRequest(this.origin, head, body ?? '');
    assert.ok(raw.status !== null, `${name}: no answer`);
    const answer = parse(raw.head, Buffer.from(raw.body, 'latin1'), req.method === 'HEAD');
    this.entries.push(this.entry(name, req, headers, body, answer));
    return answer.view;
  }

  private entry(
    name: string,
    req: CorpusRequest,
    headers: Record<string, string>,
    body: Buffer | undefined,
    answer: Parsed,
  ): Entry {
    const n = (s: string) => this.normalise(s);
    const requestBody =
      body === undefined
        ? undefined
        : body.length <= 400 && !/[^\x20-\x7e\r\n]/.test(body.toString('latin1'))
          ? n(body.toString('latin1'))
          : `<${body.length} bytes, sha256 ${createHash('sha256').update(body).digest('hex')}>`;
    const text = answer.body.toString('utf8');
    const shown = n(text);
    const staticFile = /^\/assets\//.test(req.target);
    const out: Record<string, string> = {};
    for (const [k, v] of answer.headers) {
      const value = headerValue(k, n(v), staticFile);
      out[k] = out[k] === undefined ? value : `${out[k]}\n${value}`;
    }
    // The body's own length was checked against Content-Length (parse); a placeholder of another
    // width than the value it stands for (the uptime in `time`) changes it, so it is recomputed.
    if (out['content-length'] !== undefined && !answer.head && shown !== text)
      out['content-length'] = `${Buffer.byteLength(shown)} (normalised body)`;
    // A HEAD answer's Content-Length is that of the body GET would get, unseen here: for a JSON
    // envelope it includes the width of its `time`, which varies as above.
    if (answer.head && out['content-length'] && /^application\/json\b/.test(out['content-type'] ?? ''))
      out['content-length'] = '<length of the unsent JSON body>';
    return {
      name,
      request: {
        line: n(`${req.method} ${req.target}${req.host === false ? ' (no Host)' : ''}`),
        headers: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, n(v)])),
        ...(requestBody === undefined ? {} : { body: requestBody }),
      },
      status: answer.statusText,
      headers: Object.fromEntries(Object.entries(out).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))),
      body: shown,
    };
  }
}

interface Parsed {
  statusText: string;
  headers: [string, string][];
  body: Buffer;
  head: boolean;
  view: CorpusAnswer;
}

function parse(head: string, rawBody: Buffer, isHead: boolean): Parsed {
  const [statusLine, ...lines] = head.split('\r\n');
  const m = /^HTTP\/1\.[01] (\d{3})(?: (.*))?$/.exec(statusLine!);
  assert.ok(m, `not a status line: ${statusLine}`);
  const headers = lines.map((l): [string, string] => {
    const i = l.indexOf(':');
    return [l.slice(0, i).toLowerCase(), Buffer.from(l.slice(i + 1).trim(), 'latin1').toString('utf8')];
  });
  const get = (name: string) => headers.find(([k]) => k === name)?.[1];
  const chunked = /\bchunked\b/i.test(get('transfer-encoding') ?? '');
  const body = chunked ? dechunk(rawBody) : rawBody;
  const length = get('content-length');
  if (length !== undefined && !isHead && !/^(1\d\d|204|304) /.test(`${m[1]} `))
    assert.equal(body.length, Number(length), `${statusLine}: the body is not Content-Length long`);
  const text = body.toString('utf8');
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // not JSON: the caller reads `text`
  }
  return {
    statusText: `${m[1]} ${m[2] ?? ''}`.trim(),
    headers,
    body,
    head: isHead,
    view: { status: Number(m[1]), header: get, text, json },
  };
}

function dechunk(raw: Buffer): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const eol = raw.indexOf('\r\n', at);
    assert.ok(eol >= 0, 'chunked body cut short');
    const size = Number.parseInt(raw.subarray(at, eol).toString('latin1'), 16);
    if (size === 0) return Buffer.concat(parts);
    parts.push(raw.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
}

/**
 * Rewrites the fixture (record mode) or compares with it, describing the first differences. With
 * `failure` (the script stopped part way) only the entries sent so far are compared: a changed
 * answer that broke the script shows as that difference, and the failure itself otherwise.
 */
export function checkAgainstFixture(entries: Entry[], failure?: unknown): void {
  if (RECORDING) {
    if (failure) throw failure;
    writeFileSync(FIXTURE, `${JSON.stringify(entries, null, 2)}\n`);
    return;
  }
  const expected = JSON.parse(readFileSync(FIXTURE, 'utf8')) as Entry[];
  const count = failure ? entries.length : Math.max(expected.length, entries.length);
  const problems: string[] = [];
  for (let i = 0; i < count && problems.length < 3; i++) {
    const diff = describeDifference(expected[i], entries[i]);
    if (diff) problems.push(`#${i + 1} ${diff}`);
  }
  if (problems.length === 0 && failure) throw failure;
  if (problems.length > 0)
    assert.fail(
      `responses differ from test/fixtures/response-corpus.json (first ${problems.length}):\n\n` +
        `${problems.join('\n\n')}\n\n` +
        (failure ? `The script then stopped: ${String(failure)}\n\n` : '') +
        'If the change is intended: REMESSA_RECORD_CORPUS=1 node scripts/run-tests.js response-corpus',
    );
}

function describeDifference(want: Entry | undefined, got: Entry | undefined): string | null {
  if (!want) return `"${got!.name}": not in the fixture`;
  if (!got) return `"${want.name}": in the fixture, not sent`;
  const out: string[] = [];
  const show = (v: unknown) => (v === undefined ? '(absent)' : JSON.stringify(v));
  if (want.name !== got.name) out.push(`  name: expected ${show(want.name)}, got ${show(got.name)}`);
  if (JSON.stringify(want.request) !== JSON.stringify(got.request))
    out.push(`  request: expected ${show(want.request)}\n           got      ${show(got.request)}`);
  if (want.status !== got.status)
    out.push(`  status: expected ${show(want.status)}, got ${show(got.status)}`);
  for (const name of [...new Set([...Object.keys(want.headers), ...Object.keys(got.headers)])].sort())
    if (want.headers[name] !== got.headers[name])
      out.push(`  header ${name}: expected ${show(want.headers[name])}, got ${show(got.headers[name])}`);
  if (want.body !== got.body) {
    let at = 0;
    while (at < want.body.length && want.body[at] === got.body[at]) at++;
    const around = (s: string) => show(s.slice(Math.max(0, at - 60), at + 60));
    out.push(
      `  body (${want.body.length} → ${got.body.length} characters) first differs at ${at}:\n` +
        `    expected …${around(want.body)}…\n    got      …${around(got.body)}…`,
    );
  }
  return out.length === 0 ? null : `"${got.name}" (${got.request.line})\n${out.join('\n')}`;
}
