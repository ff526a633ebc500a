// The admin transfers' checks, run on SQLite and PostgreSQL (test/admin-reports.test.ts): two files
// through their whole life (announced, downloaded, retired, purged), listed and told at each step.
import assert from 'node:assert/strict';
import { adminGet, assertRefused, envelopeKeys } from './admin-fixtures.js';
import { bytes, outcomeKnown, uploadFile } from './files.js';
import { eventually, type MailSink } from './peers.js';
import type { TestServer } from './server.js';

const DAY = 86_400_000;

interface Transfer {
  id: number;
  state: string;
  [key: string]: unknown;
}

interface Entry {
  time: string;
  source: string;
  event: string;
  [key: string]: unknown;
}

/** `t` runs without workers and e-mails `mail`; recipient links need no PIN. */
export async function checkTransfers(
  t: TestServer,
  mail: MailSink,
  who: { sender: string; auditor: string },
): Promise<void> {
  const { db, notify } = t.server.services;
  const a = await uploadFile(t, who.sender, 'Report.csv', bytes(10), { m: 'bob@example.com' });
  const b = await uploadFile(t, who.sender, 'notes.txt', bytes(3));
  await notify.deliverDue();
  const letter = await mail.take('bob@example.com');
  const link = /(https?:\/\/\S+\/download\/file\?lang=\w+&k=[A-Za-z0-9_-]+)/.exec(letter.text ?? '')![1]!;
  assert.equal((await (await fetch(link)).arrayBuffer()).byteLength, 10);
  await eventually(async () => {
    const rows = await db.selectFrom('audit').select('detail').where('event', '=', 'download').execute();
    return rows.length === 1 && outcomeKnown(rows[0]!);
  });
  const list = async (query: string) => {
    const r = await adminGet(t, `/files?${query}`, who.auditor);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body as { files: Transfer[]; next: string | null } & Record<string, unknown>;
  };
  const ids = async (query: string) => (await list(query)).files.map((f) => f.id);

  const held = await list('');
  assert.deepEqual(Object.keys(held), envelopeKeys('files', 'next'));
  const row = await db.selectFrom('files').selectAll().where('id', '=', a.id).executeTakeFirstOrThrow();
  const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
  const bob = { address: 'bob@example.com', channel: 'email', status: 'sent', downloads: 1 };
  assert.deepEqual(held.files, [
    { ...held.files[0]!, id: b.id, recipients: [], downloads: 0 },
    {
      id: a.id,
      name: 'Report.csv',
      size: 10,
      sha256: a.sha256,
      state: 'area',
      owner: 'alice',
      sender: 'alice',
      created: iso(row.created_at),
      expires: iso(row.expires_at),
      retired: null,
      purged: null,
      recipients: [bob],
      downloads: 1,
    },
  ]);
  assert.deepEqual(await ids('user=ALICE&q=REPORT'), [a.id]);
  assert.deepEqual(await ids('user=bob'), [], 'a recipient is neither owner nor sender');
  assert.deepEqual(await ids('state=backup'), []);
  assert.deepEqual(await ids(`from=${row.created_at + DAY}`), []);
  const first = await list('limit=1');
  assert.deepEqual([first.files.map((f) => f.id), first.next], [[b.id], String(b.id)]);
  const second = await list(`limit=1&cursor=${first.next}`);
  assert.deepEqual([second.files.map((f) => f.id), second.next], [[a.id], null]);

  // Retired to backup, then purged: the rows go, the listing stays.
  const sweep = () => t.server.workers.get('file-sweeper')!.runOnce();
  await t.advanceClock(8 * DAY);
  await sweep();
  assert.deepEqual(
    (await list('state=backup')).files.map((f) => [f.id, f.state, typeof f['retired']]),
    [
      [b.id, 'backup', 'string'],
      [a.id, 'backup', 'string'],
    ],
  );
  await t.advanceClock(31 * DAY);
  await sweep();
  assert.equal(
    await db.selectFrom('files').select('id').executeTakeFirst(),
    undefined,
    'purged rows are gone',
  );
  const audit = async (event: string) =>
    (
      await db
        .selectFrom('audit')
        .select('at')
        .where('file_id', '=', a.id)
        .where('event', '=', event)
        .executeTakeFirstOrThrow()
    ).at;
  const purged = await list('state=purged');
  assert.deepEqual(purged.files[1], {
    id: a.id,
    name: 'Report.csv',
    size: 10,
    sha256: a.sha256,
    state: 'purged',
    owner: 'alice',
    sender: 'alice',
    created: iso(await audit('upload')),
    expires: null,
    retired: iso(await audit('file.retired')),
    purged: iso(await audit('file.purged')),
    recipients: [bob],
    downloads: 1,
  });
  assert.deepEqual(await ids(''), [b.id, a.id]);
  assert.deepEqual(await ids('state=purged&q=port.c'), [a.id]);
  assert.deepEqual(await ids('state=purged&user=Alice'), [b.id, a.id]);
  assert.deepEqual(await ids('user=bob'), []);
  assert.deepEqual(await ids('state=area'), []);
  assert.deepEqual(await ids(`state=purged&limit=1&cursor=${b.id}`), [a.id]);

  await checkTimeline(t, who.auditor, a.id, [link, a.linkURL, letter.text ?? '']);
  assertRefused(await adminGet(t, '/files/999999/timeline', who.auditor), 404);
}

/** A's story, in time order, with no secret in it. */
async function checkTimeline(t: TestServer, auth: string, id: number, secrets: string[]): Promise<void> {
  const r = await adminGet(t, `/files/${id}/timeline`, auth);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.deepEqual(Object.keys(r.body), envelopeKeys('file', 'timeline'));
  assert.equal((r.body['file'] as Transfer).state, 'purged');
  const timeline = r.body['timeline'] as Entry[];
  const times = timeline.map((e) => e.time);
  assert.deepEqual(times, [...times].sort(), 'in time order');
  assert.deepEqual(timeline.map((e) => `${e.source} ${e.event}`).sort(), [
    'audit download',
    'audit file.purged',
    'audit file.retired',
    'audit link.created',
    'audit notify.queued',
    'audit notify.sent',
    'audit upload',
    'outbox file-link',
  ]);
  assert.deepEqual(
    timeline.slice(-2).map((e) => e.event),
    ['file.retired', 'file.purged'],
  );
  const message = timeline.find((e) => e.source === 'outbox')!;
  assert.deepEqual(
    { ...message, time: undefined, detail: undefined },
    {
      time: undefined,
      source: 'outbox',
      event: 'file-link',
      detail: undefined,
      user: 'alice',
      remote: null,
      channel: 'email',
      status: 'sent',
      attempts: 1,
      lastError: null,
    },
  );
  const download = timeline.find((e) => e.event === 'download')!;
  assert.equal(download['user'], 'bob@example.com');
  assert.equal((download['detail'] as Record<string, unknown>)['complete'], true);
  const text = JSON.stringify(r.body);
  for (const secret of secrets) {
    const token = new URL(/https?:\/\/\S+/.exec(secret)?.[0] ?? 'http://x/?k=').searchParams.get('k');
    if (token) assert.ok(!text.includes(token), 'no link token');
  }
  assert.ok(!/"pin"|"token"|"text"/i.test(text), 'no PIN, token or message text');
}
