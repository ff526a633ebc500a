// Prometheus metrics: off by default; with REMESSA_METRICS_PORT a separate listener
// serves a text scrape that an independent parser reads, with the series docs/operations.md lists
// and label values that are route templates, never raw URLs, user names or tokens.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import parse, { type ParsedFamily } from 'parse-prometheus-text-format';
import { bytes, uploadMultipart } from './helpers/files.js';
import { basic, call, closeAll, freePort, startTestServer, type TestServer } from './helpers/server.js';

const HAS_PROMTOOL = spawnSync('promtool', ['--version']).status === 0;

describe('metrics are off by default', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer();
  });
  after(() => closeAll(t));

  test('no listener, and the start-up line says so; /metrics is not on the API', async () => {
    const line = JSON.parse(t.logs.find((l) => l.includes('Remessa is serving'))!) as Record<string, unknown>;
    assert.equal(line['metrics'], 'off');
    assert.equal((await call(`${t.base}/metrics`)).status, 404);
    assert.equal((await call(`${t.origin}/metrics`)).status, 404);
  });
});

describe('metrics on REMESSA_METRICS_PORT', () => {
  let t: TestServer;
  let metricsUrl: string;
  const password = 'metrics-password';
  before(async () => {
    const port = await freePort();
    t = await startTestServer({ env: { REMESSA_METRICS_PORT: String(port) } });
    metricsUrl = `http://127.0.0.1:${port}/metrics`;
    await t.createUser('METRICS1', password);
  });
  after(() => closeAll(t));

  async function scrape(): Promise<{ text: string; families: Map<string, ParsedFamily> }> {
    const res = await fetch(metricsUrl);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    return { text, families: new Map(parse(text).map((f) => [f.name, f])) };
  }

  const value = (families: Map<string, ParsedFamily>, name: string, labels: Record<string, string> = {}) => {
    const samples = families.get(name)?.metrics ?? [];
    const hit = samples.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
    return hit === undefined ? undefined : Number(hit.value ?? hit.count);
  };

  test('the start-up line names the listener, on loopback by default', () => {
    const line = JSON.parse(t.logs.find((l) => l.includes('Remessa is serving'))!) as Record<string, unknown>;
    assert.equal(line['metrics'], metricsUrl);
  });

  test('a scrape parses, with every documented series', async () => {
    const data = bytes(12_345);
    const up = await uploadMultipart(t, basic('METRICS1', password), [{ filename: 'm.bin', data }]);
    assert.equal(up.status, 200);
    const link = String((up.body['files'] as { linkURL: string }[])[0]!.linkURL);
    const dl = await fetch(link);
    assert.equal((await dl.arrayBuffer()).byteLength, data.length);
    await call(`${t.base}/download/file?k=not-a-token-${'x'.repeat(40)}`);
    await call(`${t.base}/oauth2/token`, { method: 'POST' });
    await t.server.workers.get('file-sweeper')!.runOnce();

    const { text, families } = await scrape();
    for (const name of [
      'remessa_http_requests_total',
      'remessa_http_request_duration_seconds',
      'remessa_upload_bytes_total',
      'remessa_download_bytes_total',
      'remessa_uploads_total',
      'remessa_downloads_total',
      'remessa_pins_sent_total',
      'remessa_pin_failures_total',
      'remessa_lockouts_total',
      'remessa_outbox_messages',
      'remessa_outbox_oldest_pending_age_seconds',
      'remessa_notification_failures_total',
      'remessa_job_runs_total',
      'remessa_sweeper_items_total',
      'remessa_db_pool_connections',
      'process_cpu_seconds_total',
      'process_resident_memory_bytes',
      'nodejs_eventloop_lag_seconds',
      'nodejs_heap_size_used_bytes',
    ]) {
      assert.ok(text.includes(`# TYPE ${name} `), `${name} is exposed`);
    }
    assert.equal(families.get('remessa_http_request_duration_seconds')!.type, 'HISTOGRAM');
    assert.equal(value(families, 'remessa_uploads_total'), 1);
    assert.equal(value(families, 'remessa_upload_bytes_total'), data.length);
    assert.equal(value(families, 'remessa_downloads_total', { complete: 'true' }), 1);
    assert.equal(value(families, 'remessa_download_bytes_total'), data.length);
    assert.equal(
      value(families, 'remessa_http_requests_total', { route: '/v1/upload', method: 'POST', status: '200' }),
      1,
    );
    assert.equal(
      value(families, 'remessa_http_requests_total', {
        route: '/v1/download/file',
        method: 'GET',
        status: '401',
      }),
      1,
    );
    // Counts kept between scrapes are added once: a second scrape keeps them and adds what came
    // since, the latency histogram counting the same requests.
    await call(`${t.base}/download/file?k=not-a-token-${'y'.repeat(40)}`);
    const second = await scrape();
    const again = second.families;
    const refused = { route: '/v1/download/file', method: 'GET', status: '401' };
    assert.equal(value(again, 'remessa_http_requests_total', refused), 2);
    assert.equal(value(again, 'remessa_downloads_total', { complete: 'true' }), 1);
    assert.equal(value(again, 'remessa_download_bytes_total'), data.length);
    const timed =
      /^remessa_http_request_duration_seconds_count\{route="\/v1\/download\/file",method="GET"\} (\d+)$/m.exec(
        second.text,
      );
    assert.equal(
      Number(timed?.[1]),
      value(again, 'remessa_http_requests_total', { ...refused, status: '200' })! + 2,
      'the latency histogram counted the same requests',
    );
    // At least the pass run above (the started worker runs its own too).
    assert.ok(value(families, 'remessa_job_runs_total', { job: 'file-sweeper', outcome: 'ok' })! >= 1);
    assert.equal(value(families, 'remessa_outbox_messages', { status: 'pending' }), 0);
    for (const channel of ['email', 'sms', 'webhook'])
      assert.equal(value(families, 'remessa_outbox_oldest_pending_age_seconds', { channel }), 0);
    // SQLite has no pool: the series is declared, with no samples.
    assert.deepEqual(families.get('remessa_db_pool_connections')?.metrics ?? [], []);

    // Bounded labels: no raw URL, query, token, file or user name anywhere in the scrape.
    const k = new URL(link).searchParams.get('k')!;
    for (const secret of [k, 'METRICS1', 'm.bin', 'not-a-token', '?']) {
      assert.ok(!text.split('\n').some((l) => !l.startsWith('#') && l.includes(secret)), `no "${secret}"`);
    }
    if (HAS_PROMTOOL) {
      const file = path.join(t.dataDir, 'scrape.txt');
      writeFileSync(file, text);
      execFileSync('sh', ['-c', `promtool check metrics < "${file}"`]);
    }
  });

  test('a lockout after wrong passwords is counted', async () => {
    for (let i = 0; i < 5; i++) {
      const r = await call(`${t.base}/auth/login`, {
        method: 'POST',
        headers: { authorization: basic('METRICS1', 'wrong-password') },
      });
      assert.equal(r.status, 401);
    }
    const { families } = await scrape();
    assert.equal(value(families, 'remessa_lockouts_total', { kind: 'user' }), 1);
  });

  test('unknown paths on the metrics port are 404, other methods 405', async () => {
    assert.equal((await fetch(metricsUrl.replace('/metrics', '/'))).status, 404);
    const post = await fetch(metricsUrl, { method: 'POST' });
    assert.equal(post.status, 405);
    assert.equal(post.headers.get('allow'), 'GET, HEAD');
  });
});
