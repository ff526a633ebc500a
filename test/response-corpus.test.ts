// The recorded response corpus: a fixed sequence of raw HTTP requests over every endpoint of the
// interface and its extensions, whose answers (status line, headers, body) must stay exactly as
// recorded in test/fixtures/response-corpus.json. It guards changes meant to move code without
// changing behaviour; the values that differ from run to run are replaced by placeholders, each
// by a rule that says why (test/helpers/corpus.ts), and everything else is compared byte for byte.
//
// After an intended change of a response, record the fixture again and review its diff:
//   npm run build && REMESSA_RECORD_CORPUS=1 node scripts/run-tests.js response-corpus
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import type { ParsedMail } from 'mailparser';
import { Corpus, type CorpusAnswer, checkAgainstFixture } from './helpers/corpus.js';
import { outcomeKnown } from './helpers/files.js';
import { eventually, HttpPeer, MailSink } from './helpers/peers.js';
import { basic, closeWith, serverFor, type TestServer } from './helpers/server.js';

const DAY = 24 * 3600 * 1000;
/** The test clock stands still at this instant (moved on only by the script), so times are fixed. */
const START = Date.parse('2030-06-03T09:00:00.000Z');
const BOUNDARY = 'corpus-boundary-5f1c';
const FORM = { 'Content-Type': 'application/x-www-form-urlencoded' };
const JSON_BODY = { 'Content-Type': 'application/json' };
const MULTIPART = { 'Content-Type': `multipart/form-data; boundary=${BOUNDARY}` };
const TUS = { 'Tus-Resumable': '1.0.0' };
const ALICE = { Authorization: basic('alice', 'alice-password') };
const BOB = { Authorization: basic('bob', 'bob-password') };
const RAW = { ...ALICE, 'Content-Type': 'application/octet-stream' };
const CREDS = { grant_type: 'password', username: 'alice', password: 'alice-password' };

/** A file's text: readable in the fixture, the same every run (so its sha256 ETag is too). */
const text = (name: string, lines: number) =>
  Array.from({ length: lines }, (_, i) => `${name} line ${i + 1}\n`).join('');
const form = (o: Record<string, string>) => new URLSearchParams(o).toString();
const json = (o: object) => JSON.stringify(o);

function multipart(parts: { filename?: string; type?: string; data: string; field?: string }[]): string {
  const part = (p: (typeof parts)[number], i: number) =>
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${p.field ?? `part${i}`}"` +
    `${p.filename === undefined ? '' : `; filename="${p.filename}"`}\r\n` +
    `${p.type ? `Content-Type: ${p.type}\r\n` : ''}\r\n${p.data}\r\n`;
  return `${parts.map(part).join('')}--${BOUNDARY}--\r\n`;
}

const pathOf = (url: string) => `${new URL(url).pathname}${new URL(url).search}`;
const tokenOf = (url: string) => new URL(url, 'http://x').searchParams.get('k')!;
const linkOf = (r: CorpusAnswer) => (r.json['files'] as { linkURL: string }[])[0]!.linkURL;
const pinOf = (mail: ParsedMail) => /PIN\): (\d{6})/.exec(mail.text ?? '')![1]!;
const mailed = (mail: ParsedMail, what: RegExp) => what.exec(mail.text ?? '')![1]!;
/** Six digits other than `pin`. */
const wrongPin = (pin: string) => String((Number(pin) + 1) % 1_000_000).padStart(6, '0');

/** What every part of the script uses. */
interface Run {
  /** `line` is the method and the target: "GET /v1/healthz". */
  send(name: string, line: string, headers?: Record<string, string>, body?: string): Promise<CorpusAnswer>;
  corpus: Corpus;
  mail: MailSink;
  t: TestServer;
  /** Moves the stopped test clock on. */
  advance(ms: number): void;
  /** Delivers what the outbox holds (no background job does: the order stays fixed). */
  deliver(): Promise<void>;
}

test('every endpoint answers as recorded in test/fixtures/response-corpus.json', async (ctx) => {
  const mail = closeWith(ctx, await MailSink.start());
  const sms = closeWith(ctx, await HttpPeer.start());
  const t = await serverFor(ctx, {
    env: {
      REMESSA_SMTP_URL: mail.url,
      REMESSA_MAIL_FROM: 'Remessa <no-reply@remessa.test>',
      REMESSA_SMS_PROVIDER: 'webhook',
      REMESSA_SMS_URL: `${sms.url}/sms`,
    },
    startWorkers: false,
  });
  let now = START;
  t.clock.now = () => now;
  await t.createUser('alice', 'alice-password');
  await t.createUser('bob', 'bob-password', { lang: 'en' });
  await t.createUser('erin', 'erin-password', { lang: 'en' });
  await t.createUser('newbie', null, { lang: 'en' });
  const { audit, notify } = t.server.services;
  // A download's bookkeeping ends after its response: it is waited for, so what follows is fixed.
  const settle = async () => {
    await eventually(async () => (await audit.query({ event: 'download' })).every(outcomeKnown));
  };
  const corpus = new Corpus(t.origin, settle);
  const run: Run = {
    send: (name, line, headers = {}, body) => {
      const [method, target] = line.split(' ') as [string, string];
      return corpus.send(name, { method, target, headers, ...(body === undefined ? {} : { body }) });
    },
    corpus,
    mail,
    t,
    advance: (ms) => {
      now += ms;
    },
    deliver: () => notify.deliverDue(),
  };

  try {
    await script(run);
  } catch (err) {
    checkAgainstFixture(corpus.entries, err);
  }
  checkAgainstFixture(corpus.entries);
});

async function script(run: Run) {
  await probesAndPages(run);
  await backupArea(run);
  const bearer = await authentication(run);
  const files = await uploads(run, bearer);
  await downloads(run, linkOf(files.reports));
  await delivery(run, tokenOf(linkOf(files.invoice)), tokenOf(linkOf(files.secure)));
  await recovery(run);
  await webhooks(run, bearer);
  await resumable(run);
  await run.send('Expect other than 100-continue 417', 'GET /v1/nothing', { Expect: 'something' });
  await run.send('target * 400', 'GET *');
  await run.send('readyz at the end', 'GET /v1/readyz');
}

async function probesAndPages({ send, corpus }: Run) {
  await send('healthz', 'GET /v1/healthz');
  await send('readyz', 'GET /v1/readyz');
  await send('openapi.json', 'GET /v1/openapi.json');
  await send('docs', 'GET /v1/docs');
  const shell = await send('portal shell', 'GET /');
  await send('portal asset', `GET ${/href="(\/assets\/styles-[^"]+\.css)"/.exec(shell.text)![1]}`);
  await send('portal password page', 'GET /v1/auth/change?lang=en');
  await send('unknown path 404', 'GET /v1/nothing');
  await send('wrong method 405', 'PUT /v1/upload');
  await send('malformed URL 400', 'GET /v1/download/file%zz');
  await corpus.send('no Host 400', { method: 'GET', target: '/v1/nothing', host: false });
}

/** A file retired to the backup area: uploaded, then its link's validity (7 days) ends. */
async function backupArea({ send, t, advance }: Run) {
  const old = await send('upload raw', 'POST /v1/upload?file=old.txt', RAW, text('old', 3));
  advance(7 * DAY + 60_000);
  await t.server.workers.get('file-sweeper')!.runOnce();
  const backups = await send('list backup', 'GET /v1/download/list/backup?page=1', ALICE);
  const backupLink = pathOf(linkOf(backups));
  await send('backup download', `GET ${backupLink}`);
  await send('backup HEAD', `HEAD ${backupLink}`);
  await send('retired area link 401', `GET ${pathOf(linkOf(old))}`);
}

/** The token endpoint, login and logout; answers a bearer token of alice's. */
async function authentication({ send }: Run): Promise<Record<string, string>> {
  const token = await send('token', 'POST /v1/oauth2/token', FORM, form(CREDS));
  const alias = { Content_type: FORM['Content-Type'] };
  await send('token via Content_type', 'POST /v1/oauth2/token', alias, form(CREDS));
  const wrong = form({ ...CREDS, password: 'nope' });
  await send('token wrong password 401', 'POST /v1/oauth2/token', FORM, wrong);
  await send('token wrong grant 400', 'POST /v1/oauth2/token', FORM, form({ ...CREDS, grant_type: 'code' }));
  await send('token JSON body 400', 'POST /v1/oauth2/token', JSON_BODY, json(CREDS));
  const login = await send('login', 'POST /v1/auth/login', { ...ALICE, Content_type: 'application/json' });
  const session = { Authorization: `Bearer ${String(login.json['bearer'])}` };
  await send('login without credentials 401', 'POST /v1/auth/login');
  await send('login wrong password 401', 'POST /v1/auth/login', { Authorization: basic('alice', 'x') });
  await send('login malformed Basic 400', 'POST /v1/auth/login', { Authorization: 'Basic !!!' });
  await send('portal me', 'GET /portal/me', session);
  await send('logout', 'POST /v1/auth/logout', session);
  await send('logout again 401', 'POST /v1/auth/logout', session);
  await send('list with a revoked bearer 401', 'GET /v1/download/list?page=1', session);
  return { Authorization: `Bearer ${String(token.json['access_token'])}` };
}

/** Uploads (multipart, recipients, another user's area), refusals and the lists. */
async function uploads({ send }: Run, bearer: Record<string, string>) {
  const two = multipart([
    { filename: 'report.txt', type: 'text/plain', data: text('report', 40) },
    { field: 'note', data: 'not a file' },
    { filename: 'report.txt', data: text('second', 2) },
  ]);
  const reports = await send('upload multipart Bearer', 'POST /v1/upload', { ...bearer, ...MULTIPART }, two);
  const announce = 'file=invoice.txt&m=carol@example.com&c=%2B5511999990000&i=Monthly%20invoice';
  const invoice = await send('upload m= c= i=', `POST /v1/upload?${announce}`, RAW, text('invoice', 5));
  const forBob = multipart([{ filename: 'secure.txt', data: text('secure', 4) }]);
  const toBob = { ...ALICE, ...MULTIPART };
  const secure = await send('upload m= d=', 'POST /v1/upload?d=bob&m=bob@example.com', toBob, forBob);
  const chunked = { ...RAW, 'Transfer-Encoding': 'chunked' };
  await send('upload chunked', 'POST /v1/upload?file=chunked.txt', chunked, '5\r\nhello\r\n0\r\n\r\n');

  const refuse = (name: string, query: string, headers: Record<string, string>, body = 'x') =>
    send(name, `POST /v1/upload?${query}`, headers, body);
  await refuse('upload path traversal 400', 'file=../../etc/passwd', RAW);
  await refuse('upload JSON body 400', 'file=a.txt', { ...ALICE, ...JSON_BODY }, '{}');
  await refuse('upload bad m= 400', 'file=a.txt&m=not-an-email', RAW);
  await refuse('upload unknown d= 400', 'file=a.txt&d=nobody', RAW);
  await refuse('upload wrong password 401', 'file=a.txt', { ...RAW, Authorization: basic('alice', 'nope') });
  const gzip = { ...RAW, 'Transfer-Encoding': 'gzip, chunked' };
  await refuse('upload gzip transfer coding 400', 'file=a.txt', gzip, '5\r\nhello\r\n0\r\n\r\n');
  const cut = `--${BOUNDARY}\r\nContent-Dis`;
  await refuse('upload multipart cut short 400', 'file=cut.txt', { ...ALICE, ...MULTIPART }, cut);

  await send('list', 'GET /v1/download/list?page=1', ALICE);
  await send('list of bob', 'GET /v1/download/list?page=1', BOB);
  await send('list page 0 400', 'GET /v1/download/list?page=0', ALICE);
  await send('list no page 400', 'GET /v1/download/list', ALICE);
  return { reports, invoice, secure };
}

/** Downloads by the owner's link: whole, HEAD, ranges, conditional requests, the landing page. */
async function downloads({ send }: Run, linkURL: string) {
  const link = pathOf(linkURL);
  const got = await send('download', `GET ${link}`);
  await send('download HEAD', `HEAD ${link}`);
  await send('download Range', `GET ${link}`, { Range: 'bytes=0-9' });
  await send('download suffix Range', `GET ${link}`, { Range: 'bytes=-5' });
  await send('download Range 416', `GET ${link}`, { Range: 'bytes=100000-' });
  await send('download If-None-Match 304', `GET ${link}`, { 'If-None-Match': got.header('etag')! });
  const since = { 'If-Modified-Since': got.header('last-modified')! };
  await send('download If-Modified-Since 304', `GET ${link}`, since);
  await send('download stale If-Range', `GET ${link}`, { Range: 'bytes=0-9', 'If-Range': '"other"' });
  await send('download without k 400', 'GET /v1/download/file');
  await send('download unknown k 401', `GET /v1/download/file?k=${'A'.repeat(43)}`);
  await send('landing page', `GET ${link}`, { Accept: 'text/html' });
}

/** Delivery tracking and resending (the invoice's owner link); a recipient's link with a PIN. */
async function delivery({ send, mail, advance, deliver }: Run, owner: string, secureOwner: string) {
  await send('info of an owner link', `GET /v1/download/info?k=${owner}`);
  await send('status pending', `GET /v1/download/status?k=${owner}`);
  await deliver();
  await mail.take('carol@example.com');
  await send('status sent', `GET /v1/download/status?k=${owner}`);
  const resend = `POST /v1/download/resend?k=${owner}`;
  await send('resend too soon 429', `${resend}&to=carol@example.com`);
  advance(61_000);
  await send('resend', `${resend}&to=carol@example.com`);
  await send('resend not a recipient 404', `${resend}&to=dave@example.com`);
  await send('resend without to 400', resend);
  await send('status without k 401', 'GET /v1/download/status');

  const recipient = pathOf(mailed(await mail.take('bob@example.com'), /(http\S+\/download\/file\?\S+)/));
  const rk = tokenOf(recipient);
  await send('status of a recipient link 403', `GET /v1/download/status?k=${rk}`);
  await send('info of a recipient link', `GET /v1/download/info?k=${rk}`);
  await send('recipient download without PIN 403', `GET ${recipient}`);
  await send('pin', `POST /v1/download/pin?k=${rk}&lang=en`);
  await send('pin again 429', `POST /v1/download/pin?k=${rk}&lang=en`);
  await send('pin of an owner link 400', `POST /v1/download/pin?k=${owner}`);
  await send('pin without k 400', 'POST /v1/download/pin');
  await deliver();
  const pin = pinOf(await mail.take('bob@example.com'));
  await send('recipient download wrong PIN 403', `GET ${recipient}&p=${wrongPin(pin)}`);
  await send('recipient download', `GET ${recipient}&p=${pin}`);
  await send('status after a download', `GET /v1/download/status?k=${secureOwner}`);
}

/** Password recovery (forgetParameters, changeParameters) and first access. */
async function recovery({ send, mail, deliver }: Run) {
  const forget = await send('forgetParameters', 'GET /v1/auth/forgetParameters?u=erin', JSON_BODY);
  const k = tokenOf(String(forget.json['linkURL']));
  await send('forget again within a minute', 'GET /v1/auth/forget?u=erin');
  await send('forgetParameters without u 400', 'GET /v1/auth/forgetParameters');
  await send('forgetParameters unknown user 401', 'GET /v1/auth/forgetParameters?u=nobody');
  await send('forgetParameters HEAD 405', 'HEAD /v1/auth/forgetParameters?u=erin');
  await deliver();
  const p = pinOf(await mail.take('erin@example.com'));
  const change = 'POST /v1/auth/changeParameters';
  await send('change wrong PIN 403', change, JSON_BODY, json({ k, p: wrongPin(p), z: 'erin-new-password' }));
  await send('change weak password 400', change, JSON_BODY, json({ k, p, z: 'x' }));
  await send('change malformed JSON 400', change, JSON_BODY, '{"k":');
  await send('change', change, JSON_BODY, json({ k, p, z: 'erin-new-password' }));
  await send('change used link 401', change, JSON_BODY, json({ k, p, z: 'erin-other-password' }));
  await send('change without k 400', change, JSON_BODY, '{}');

  const first = await send('firstaccess', 'GET /v1/auth/firstaccess?u=newbie');
  await send('firstaccess of a user with a password 403', 'GET /v1/auth/firstaccess?u=alice');
  await deliver();
  const letter = await mail.take('newbie@example.com');
  const newbie = tokenOf(String(first.json['linkURL']));
  assert.equal(tokenOf(mailed(letter, /(http\S+\/auth\/change\?\S+)/)), newbie);
  const fields = form({ k: newbie, p: pinOf(letter), z: 'newbie-password' });
  await send('change by form body', `${change}?k=ignored`, FORM, fields);
  const signIn = form({ ...CREDS, username: 'newbie', password: 'newbie-password' });
  await send('token after first access', 'POST /v1/oauth2/token', FORM, signIn);
}

/** Webhook subscriptions: list, add (JSON and form), refusals, remove. */
async function webhooks({ send }: Run, bearer: Record<string, string>) {
  const hook = { url: 'https://hooks.example.com/remessa', events: ['file.uploaded'] };
  const asJson = { ...ALICE, ...JSON_BODY };
  await send('webhooks empty', 'GET /v1/webhooks', ALICE);
  await send('webhook add', 'POST /v1/webhooks', asJson, json(hook));
  const all = form({ url: 'https://erp.example.com/in' });
  await send('webhook add by form, all events', 'POST /v1/webhooks', { ...bearer, ...FORM }, all);
  const inward = form({ url: 'http://127.0.0.1/x' });
  await send('webhook private address 400', 'POST /v1/webhooks', { ...ALICE, ...FORM }, inward);
  await send('webhook unknown event 400', 'POST /v1/webhooks', asJson, json({ ...hook, events: ['nope'] }));
  await send('webhook malformed JSON 400', 'POST /v1/webhooks', asJson, '{');
  await send('webhooks', 'GET /v1/webhooks', ALICE);
  await send('webhook remove', 'DELETE /v1/webhooks?id=1', ALICE);
  await send('webhook remove again 404', 'DELETE /v1/webhooks?id=1', ALICE);
  await send('webhook remove without id 400', 'DELETE /v1/webhooks', ALICE);
  await send('webhooks without credentials 401', 'GET /v1/webhooks');
}

/** tus resumable uploads: creation, offsets, checksums, termination. */
async function resumable({ send }: Run) {
  const meta = { 'Upload-Metadata': `filename ${Buffer.from('resumed.txt').toString('base64')}` };
  const content = text('resumed', 2);
  const [head, tail] = [content.slice(0, 10), content.slice(10)];
  const sum = (s: string) => `sha256 ${createHash('sha256').update(s).digest('base64')}`;
  const bytes = { ...ALICE, ...TUS, 'Content-Type': 'application/offset+octet-stream' };
  await send('tus OPTIONS', 'OPTIONS /v1/uploads');
  await send('tus without Tus-Resumable 412', 'POST /v1/uploads', { ...ALICE, 'Upload-Length': '10' });
  await send('tus bad Upload-Length 400', 'POST /v1/uploads', { ...ALICE, ...TUS, 'Upload-Length': 'ten' });
  const length = { 'Upload-Length': String(content.length) };
  const created = await send('tus create', 'POST /v1/uploads', { ...ALICE, ...TUS, ...length, ...meta });
  const upload = created.header('location')!;
  await send('tus HEAD', `HEAD ${upload}`, { ...ALICE, ...TUS });
  const at = (offset: number, more: Record<string, string> = {}) => ({
    ...bytes,
    'Upload-Offset': String(offset),
    ...more,
  });
  await send('tus PATCH', `PATCH ${upload}`, at(0), head);
  await send('tus PATCH wrong offset 409', `PATCH ${upload}`, at(0), head);
  const raw = at(10, { 'Content-Type': 'application/octet-stream' });
  await send('tus PATCH wrong type 415', `PATCH ${upload}`, raw, tail);
  const mismatch = at(10, { 'Upload-Checksum': sum('other') });
  await send('tus PATCH checksum mismatch 460', `PATCH ${upload}`, mismatch, tail);
  await send('tus PATCH md5 400', `PATCH ${upload}`, at(10, { 'Upload-Checksum': 'md5 AAAA' }), tail);
  await send('tus PATCH last bytes', `PATCH ${upload}`, at(10, { 'Upload-Checksum': sum(tail) }), tail);
  await send('tus GET result', `GET ${upload}`, ALICE);
  await send('tus HEAD of another user 404', `HEAD ${upload}`, { ...BOB, ...TUS });

  const withBody = { ...bytes, 'Upload-Length': '20', ...meta };
  const partly = await send('tus create with upload', 'POST /v1/uploads', withBody, 'first');
  const partial = partly.header('location')!;
  await send('tus OPTIONS of an upload', `OPTIONS ${partial}`);
  await send('tus POST to an upload 405', `POST ${partial}`, ALICE);
  await send('tus DELETE', `DELETE ${partial}`, { ...ALICE, ...TUS });
  await send('tus HEAD after DELETE 404', `HEAD ${partial}`, { ...ALICE, ...TUS });
}
