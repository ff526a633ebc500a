// Rotating the server secret (docs/operations.md): with REMESSA_PREVIOUS_SECRET, what the old
// secret signed, sealed or hashed keeps working; `remessa secret reseal` re-seals what is stored,
// after which the old secret can go. Without it, a listing still answers (it used to be a 500).
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Keys } from '../src/platform/security/keys.js';
import { Resealer } from '../src/platform/security/reseal.js';
import { openDatabase } from '../src/platform/sql/database.js';
import { remessa } from './helpers/cli.js';
import { createTempDatabase, PG_REQUIRED, PG_SKIP, postgresAvailable } from './helpers/postgres.js';
import { basic, call, freePort, startTestServer, type TestServer } from './helpers/server.js';

const pgAvailable = await postgresAvailable();
if (!pgAvailable && PG_REQUIRED) throw new Error(PG_SKIP);

const OLD = 'old-secret-old-secret-old-secret';
const NEW = 'new-secret-new-secret-new-secret';
const OTHER = 'some-other-secret-some-other-secret';

describe('Keys with a previous secret', () => {
  const old = new Keys(OLD);
  const rotating = new Keys(NEW, OLD);
  const fresh = new Keys(NEW);

  test('opens what either secret sealed, and seals with the new one', () => {
    const sealed = old.seal('a link token');
    assert.equal(rotating.unseal(sealed), 'a link token');
    assert.throws(() => fresh.unseal(sealed));
    const resealed = rotating.resealed(sealed);
    assert.ok(resealed);
    assert.equal(fresh.unseal(resealed), 'a link token');
    assert.equal(rotating.resealed(resealed), null, 'already current');
    assert.throws(() => rotating.resealed(new Keys(OTHER).seal('x')), 'opened by neither');
    assert.throws(() => old.unseal(rotating.seal('new')), 'sealed with the new secret only');
  });

  test('a PIN hashed with either secret matches; a wrong PIN matches neither', () => {
    const hash = old.hmac('123456');
    assert.equal(rotating.hmacMatches('123456', hash), true);
    assert.equal(rotating.hmacMatches('654321', hash), false);
    assert.equal(fresh.hmacMatches('123456', hash), false);
    assert.equal(rotating.hmacMatches('123456', rotating.hmac('123456')), true);
  });
});

describe('rotating REMESSA_SECRET on a running installation', () => {
  let dataDir: string;
  let port: number;
  let t: TestServer | null = null;
  const settings = (secret: string, previous?: string) => ({
    REMESSA_PORT: String(port),
    REMESSA_BASE_URL: `http://127.0.0.1:${port}/v1`,
    REMESSA_SECRET: secret,
    ...(previous ? { REMESSA_PREVIOUS_SECRET: previous } : {}),
  });
  const start = async (secret: string, previous?: string) => {
    await t?.close();
    t = await startTestServer({ dataDir, startWorkers: false, env: settings(secret, previous) });
    return t;
  };
  const list = (s: TestServer, authorization: string) =>
    call(`${s.base}/download/list?page=1`, { headers: { Authorization: authorization } });
  const linkOf = (body: Record<string, unknown>) => (body['files'] as { linkURL: string }[])[0]!.linkURL;

  before(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'remessa-rotation-'));
    port = await freePort();
  });
  after(async () => {
    await t?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  test('old tokens and stored values work during the rotation; reseal makes the old secret unneeded', async () => {
    let s = await start(OLD);
    await s.createUser('alice', 'alice-password');
    const login = await call(`${s.base}/auth/login`, {
      method: 'POST',
      headers: { Authorization: basic('alice', 'alice-password') },
    });
    const oldBearer = `Bearer ${String(login.body['bearer'])}`;
    // A file announced to a recipient: an owner link, a recipient link and a queued message, all
    // sealed with the old secret (the workers are off, so the message stays queued).
    const up = await call(`${s.base}/upload?file=a.txt&m=erin@example.com`, {
      method: 'POST',
      headers: { Authorization: oldBearer, 'Content-Type': 'application/octet-stream' },
      body: 'contents',
    });
    assert.equal(up.status, 200, JSON.stringify(up.body));
    const link = linkOf(up.body);

    // During the rotation: the old bearer token and the stored link copies still work.
    s = await start(NEW, OLD);
    const during = await list(s, oldBearer);
    assert.equal(during.status, 200, JSON.stringify(during.body));
    assert.equal(linkOf(during.body), link);
    const download = await fetch(link);
    assert.equal(download.status, 200);
    assert.equal(await download.text(), 'contents');

    const env = { REMESSA_DATA_DIR: dataDir, ...settings(NEW, OLD) };
    const resealed = await remessa(env, ['secret', 'reseal', '--json']);
    assert.equal(resealed.code, 0, resealed.stderr);
    const reports = JSON.parse(resealed.stdout) as { name: string; resealed: number; unreadable: number }[];
    const count = (name: string) => reports.find((r) => r.name === name)!;
    assert.equal(count('link tokens').resealed, 2);
    assert.equal(count('messages').resealed, 1);
    const again = JSON.parse((await remessa(env, ['secret', 'reseal', '--json'])).stdout) as typeof reports;
    assert.deepEqual(
      again.map((r) => [r.resealed, r.unreadable]),
      again.map(() => [0, 0]),
      'everything is current now',
    );

    // After it: the old secret is gone. Its tokens no longer verify; stored values were resealed.
    s = await start(NEW);
    assert.equal((await list(s, oldBearer)).status, 401);
    const after = await list(s, basic('alice', 'alice-password'));
    assert.equal(after.status, 200);
    assert.equal(linkOf(after.body), link);
    const message = await s.server.services.db
      .selectFrom('outbox')
      .select('payload')
      .executeTakeFirstOrThrow();
    assert.match(s.server.services.keys.unseal(message.payload), /a\.txt/);

    // A secret replaced without the previous one: the listing still answers, without the links it
    // can no longer show (the link itself keeps working: only its hash is needed for that).
    s = await start(OTHER);
    const lost = await list(s, basic('alice', 'alice-password'));
    assert.equal(lost.status, 200);
    assert.equal(linkOf(lost.body), '');
    assert.equal((await fetch(link)).status, 200);
  });
});

describe('reseal on PostgreSQL', () => {
  test('reseals what the previous secret sealed, leaves current values, reports unreadable ones', {
    skip: pgAvailable ? false : PG_SKIP,
  }, async () => {
    const temp = await createTempDatabase();
    try {
      const { db, close } = await openDatabase({ dataDir: '/nonexistent', databaseUrl: temp.url });
      try {
        const rotating = new Keys(NEW, OLD);
        const message = (payload: string) => ({
          channel: 'email',
          recipient: 'erin@example.com',
          kind: 'file-link',
          payload,
          status: 'pending',
          attempts: 0,
          next_attempt_at: 0,
          claimed_until: 0,
          created_at: 0,
        });
        await db
          .insertInto('outbox')
          .values([
            message(new Keys(OLD).seal('old')),
            message(rotating.seal('current')),
            message(new Keys(OTHER).seal('lost')),
          ])
          .execute();
        const reports = await new Resealer({ db, keys: rotating }).resealAll();
        assert.deepEqual(
          reports.find((r) => r.name === 'messages'),
          { name: 'messages', resealed: 1, current: 1, unreadable: 1 },
        );
        const fresh = new Keys(NEW);
        const rows = await db.selectFrom('outbox').select('payload').orderBy('id').execute();
        assert.equal(fresh.unseal(rows[0]!.payload), 'old');
        assert.equal(fresh.unseal(rows[1]!.payload), 'current');
      } finally {
        await close();
      }
    } finally {
      await temp.drop();
    }
  });
});
