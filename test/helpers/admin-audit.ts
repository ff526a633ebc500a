// The admin audit search's checks, run on SQLite and PostgreSQL (test/admin-reports.test.ts): a
// known trail written directly, its pages and filters, and its CSV byte for byte.
import assert from 'node:assert/strict';
import { adminGet, assertRefused, envelopeKeys, insertAudit } from './admin-fixtures.js';
import type { TestServer } from './server.js';

const B = Date.UTC(2020, 2, 1);
const iso = (ms: number) => new Date(ms).toISOString();

/** Seven rows in [B, B + 8 s) and one at its end; the search's filters and pages over them. */
export async function checkAuditSearch(t: TestServer, auth: string): Promise<void> {
  const ids = await insertAudit(t, [
    { at: B + 1000, event: 'login', user_name: 'Alice', remote: '192.0.2.1' },
    {
      at: B + 2000,
      event: 'login.failed',
      user_name: 'alice',
      remote: '192.0.2.1',
      detail: 'wrong password',
    },
    { at: B + 3000, event: 'user.updated', user_name: 'bob', actor: 'ALICE', detail: '{"role":"auditor"}' },
    {
      at: B + 4000,
      event: 'upload',
      user_name: 'carol',
      file_id: 77,
      detail: '{"name":"a.txt","bytes":5}',
      bytes: 5,
    },
    { at: B + 5000, event: 'download.refused', user_name: 'carol', file_id: 77, detail: 'link revoked' },
    { at: B + 6000, event: 'password.change_failed', user_name: 'dave', detail: 'wrong PIN' },
    { at: B + 7000, event: 'logout', user_name: 'alice' },
    { at: B + 8000, event: 'login', user_name: 'alice' },
  ]);
  const [r1, r2, r3, r4, r5, r6, r7] = ids as [number, number, number, number, number, number, number];
  const range = `from=${iso(B)}&to=${B + 8000}`;
  const search = async (query: string) => {
    const r = await adminGet(t, `/audit?${range}&${query}`, auth);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body as { entries: { id: number }[]; next: string | null } & Record<string, unknown>;
  };
  const idsOf = async (query: string) => (await search(query)).entries.map((e) => e.id);

  const all = await search('');
  assert.deepEqual(Object.keys(all), envelopeKeys('entries', 'next'));
  assert.equal(all['description'], 'handlerAdminAudit:succsessfully');
  assert.deepEqual(
    all.entries.map((e) => e.id),
    [r7, r6, r5, r4, r3, r2, r1],
    'newest first, the row at `to` left out',
  );
  assert.equal(all.next, null);
  assert.deepEqual(all.entries[4], {
    id: r3,
    time: iso(B + 3000),
    event: 'user.updated',
    user: 'bob',
    actor: 'ALICE',
    remote: null,
    fileId: null,
    detail: { role: 'auditor' },
  });
  assert.deepEqual(all.entries[5], {
    id: r2,
    time: iso(B + 2000),
    event: 'login.failed',
    user: 'alice',
    actor: null,
    remote: '192.0.2.1',
    fileId: null,
    detail: 'wrong password',
  });

  assert.deepEqual(await idsOf('user=ALICE'), [r7, r3, r2, r1], 'user or actor, any case');
  assert.deepEqual(await idsOf('event=login'), [r2, r1], 'a prefix of whole names: not logout');
  assert.deepEqual(await idsOf('event=login.'), [r2], 'only the sub-events');
  assert.deepEqual(await idsOf('event=password'), [r6]);
  assert.deepEqual(await idsOf('file=77'), [r5, r4]);
  assert.deepEqual(await idsOf('outcome=failed'), [r6, r5, r2]);
  assert.deepEqual(await idsOf('outcome=ok'), [r7, r4, r3, r1]);
  const late = await adminGet(t, `/audit?user=carol&outcome=failed&from=${B + 5000}&to=${B + 8000}`, auth);
  assert.deepEqual(
    (late.body['entries'] as { id: number }[]).map((e) => e.id),
    [r5],
  );
  await checkPages(search, [r7, r6, r5, r4, r3, r2, r1], B + 5000);
}

type Search = (query: string) => Promise<{ entries: { id: number }[]; next: string | null }>;

/** Pages of three over the seven rows (newest first); the third row's time is `thirdAt`. */
async function checkPages(search: Search, ids: number[], thirdAt: number): Promise<void> {
  const [r7, r6, r5, r4, r3, r2, r1] = ids;
  const first = await search('limit=3');
  assert.deepEqual(
    first.entries.map((e) => e.id),
    [r7, r6, r5],
  );
  assert.equal(first.next, `${thirdAt}.${r5}`, 'the time and id of the last row');
  const second = await search(`limit=3&cursor=${first.next}`);
  assert.deepEqual(
    second.entries.map((e) => e.id),
    [r4, r3, r2],
  );
  const last = await search(`limit=3&cursor=${second.next}`);
  assert.deepEqual(
    last.entries.map((e) => e.id),
    [r1],
  );
  assert.equal(last.next, null);
}

/** The CSV export of five awkward rows, byte for byte. */
export async function checkAuditCsv(t: TestServer, auth: string): Promise<void> {
  const C = Date.UTC(2020, 3, 1);
  const [c1, c2, c3, c4, c5] = await insertAudit(t, [
    { at: C + 1, event: 'login', user_name: 'plain', remote: '192.0.2.9' },
    {
      at: C + 2,
      event: 'upload',
      user_name: 'comma,user',
      file_id: 5,
      detail: '{"name":"a,b.txt","bytes":3}',
    },
    { at: C + 3, event: 'login.failed', user_name: 'quote"user', detail: 'line1\nline2' },
    { at: C + 4, event: 'login.failed', user_name: '=cmd|calc', detail: '+SUM(A1)' },
    { at: C + 5, event: 'user.updated', user_name: '-minus', actor: '@a"t', detail: 'crlf\r\nend' },
  ]);
  const csv = await fetch(`${t.base}/admin/audit?format=csv&from=${C}&to=${C + 10}&limit=1`, {
    headers: { Authorization: auth },
  });
  assert.equal(csv.status, 200);
  assert.equal(csv.headers.get('content-type'), 'text/csv; charset=utf-8');
  assert.equal(csv.headers.get('content-disposition'), 'attachment; filename="audit.csv"');
  const time = (n: number) => iso(C + n);
  assert.equal(
    await csv.text(),
    'id,time,event,user,actor,remote,file_id,detail\r\n' +
      `${c5},${time(5)},user.updated,'-minus,"'@a""t",,,"crlf\r\nend"\r\n` +
      `${c4},${time(4)},login.failed,'=cmd|calc,,,,'+SUM(A1)\r\n` +
      `${c3},${time(3)},login.failed,"quote""user",,,,"line1\nline2"\r\n` +
      `${c2},${time(2)},upload,"comma,user",,,5,"{""name"":""a,b.txt"",""bytes"":3}"\r\n` +
      `${c1},${time(1)},login,plain,,192.0.2.9,,\r\n`,
    'RFC 4180, newest first, every row (limit does not apply)',
  );
  const none = await fetch(`${t.base}/admin/audit?format=csv&from=${C + 100}&to=${C + 200}`, {
    headers: { Authorization: auth },
  });
  assert.equal(await none.text(), 'id,time,event,user,actor,remote,file_id,detail\r\n');
}

/** Parameters that are not ones: 400 with the error envelope, whatever the route. */
export async function checkHostileParams(t: TestServer, auth: string): Promise<void> {
  const refused: [string, RegExp?][] = [
    ['/audit?from=yesterday', /from: ISO 8601/],
    ['/audit?from=2024-13-01', /from/],
    ['/audit?to=2023-02-29', /to/],
    ['/audit?from=2024-01-01T25:00:00Z', /from/],
    ['/audit?to=99999999999999999999', /to/],
    ['/audit?from=2024-01-02&to=2024-01-01', /before/],
    ['/audit?limit=0'],
    ['/audit?limit=501'],
    ['/audit?limit=100000000000'],
    ['/audit?limit=ten'],
    ['/audit?cursor=abc', /cursor/],
    ['/audit?cursor=-1', /cursor/],
    ['/audit?cursor=0', /cursor/],
    ['/audit?cursor=1e9', /cursor/],
    ['/audit?cursor=12', /cursor/],
    ['/audit?cursor=12.0', /cursor/],
    ['/audit?cursor=99999999999999999999', /cursor/],
    ['/audit?event=%25', /event/],
    ['/audit?outcome=maybe'],
    ['/audit?file=abc'],
    [`/audit?user=${'x'.repeat(300)}`],
    ['/audit?format=xml'],
    ['/files?state=deleted'],
    ['/files?from=not-a-date', /from/],
    ['/files?cursor=%27%20or%201%3D1', /cursor/],
    ['/files?limit=9999'],
    ['/files/abc/timeline'],
    ['/files/0/timeline'],
    ['/outbox?status=lost'],
    ['/outbox?channel=pigeon'],
    ['/outbox?cursor=abc', /cursor/],
    ['/stats?bucket=week'],
    ['/stats?from=2021-01-01&to=2021-03-15&bucket=hour', /at most 1000 buckets/],
    ['/stats?from=2021-01-02&to=2021-01-01', /before/],
    ['/stats?from=%00', /from/],
  ];
  const before = await t.server.services.db
    .selectFrom('audit')
    .select((eb) => eb.fn.countAll().as('n'))
    .executeTakeFirstOrThrow();
  for (const [path, detail] of refused) {
    const r = await adminGet(t, path, auth);
    assertRefused(r, 400, detail);
    assert.deepEqual(Object.keys(r.body).slice(0, 4), ['status', 'description', 'apiver', 'time'], path);
  }
  const after = await t.server.services.db
    .selectFrom('audit')
    .select((eb) => eb.fn.countAll().as('n'))
    .executeTakeFirstOrThrow();
  assert.equal(Number(after.n), Number(before.n), 'a refused read writes nothing');
}
