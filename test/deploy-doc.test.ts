// docs/deploy.md's steps, run as written: the SQL that creates the database, the curl that creates
// the bucket, the nginx configuration in front of a real instance over TLS, and the systemd unit
// (checked by systemd-analyze, its ExecStart run with its environment file). Only addresses, ports,
// names of temporary things and certificate paths are replaced.
import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { promisify } from 'node:util';
import { DeleteBucketCommand, DeleteObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import pg from 'pg';
import { cleanEnv, ROOT } from './helpers/cli.js';
import { eventually } from './helpers/peers.js';
import { ADMIN_URL, PG_SKIP, postgresAvailable } from './helpers/postgres.js';
import { clientFor, S3_SKIP, s3Available, s3Env } from './helpers/s3.js';
import { basic, closeAll, freePort, startTestServer } from './helpers/server.js';

const run = promisify(execFile);
const doc = await readFile(path.join(ROOT, 'docs/deploy.md'), 'utf8');

/** The fenced block marked `<!-- deploy-test: name -->` in docs/deploy.md. */
function block(name: string): string {
  const m = new RegExp(`<!-- deploy-test: ${name} -->\\n\`\`\`\\w+\\n([\\s\\S]*?)\`\`\``).exec(doc);
  assert.ok(m, `docs/deploy.md has no block marked deploy-test: ${name}`);
  return m[1]!;
}

const NGINX = ['/usr/sbin/nginx', '/usr/bin/nginx'].find((p) => existsSync(p));
const NGINX_SKIP = 'nginx not found: the load-balancer example is not tried (apt-get install -y nginx)';
if (!NGINX && process.env['REMESSA_TEST_REQUIRE_NGINX'] === '1')
  test('nginx is required here (REMESSA_TEST_REQUIRE_NGINX=1)', () => assert.fail(NGINX_SKIP));
const PG_UP = await postgresAvailable();
const S3_UP = await s3Available();
const SYSTEMD_ANALYZE = ['/usr/bin/systemd-analyze', '/bin/systemd-analyze'].find((p) => existsSync(p));

describe('docs/deploy.md: database and bucket', () => {
  test('the SQL creates a database and role an instance runs on', {
    skip: PG_UP ? false : PG_SKIP,
  }, async (t) => {
    const admin = new pg.Client({ connectionString: ADMIN_URL });
    await admin.connect();
    const reset = async () => {
      await admin.query('DROP DATABASE IF EXISTS remessa WITH (FORCE)');
      await admin.query('DROP ROLE IF EXISTS remessa');
    };
    t.after(async () => {
      await reset();
      await admin.end();
    });
    await reset();
    for (const statement of block('database')
      .split(';')
      .map((s) => s.trim())
      .filter(Boolean))
      await admin.query(statement);
    const url = new URL(ADMIN_URL);
    const s = await startTestServer({
      env: { REMESSA_DATABASE_URL: `postgres://remessa:change-me@${url.host}/remessa` },
    });
    await s.close();
  });

  test('the curl creates a bucket an instance stores in', { skip: S3_UP ? false : S3_SKIP }, async (t) => {
    const e = s3Env()!;
    const bucket = `remessa-deploy-${Date.now().toString(36)}`;
    const env = {
      REMESSA_STORAGE: 's3',
      REMESSA_S3_BUCKET: bucket,
      REMESSA_S3_ENDPOINT: e.endpoint,
      REMESSA_S3_REGION: e.region,
      REMESSA_S3_ACCESS_KEY_ID: e.accessKey,
      REMESSA_S3_SECRET_ACCESS_KEY: e.secretKey,
    };
    await assert.rejects(
      startTestServer({ env }),
      /S3 bucket "remessa-deploy-\w+" .* does not exist: create it first/,
    );
    const shell = {
      ...(cleanEnv() as Record<string, string>),
      S3_REGION: e.region,
      S3_ACCESS_KEY: e.accessKey,
    };
    await run('bash', ['-euc', block('bucket')], {
      env: { ...shell, S3_SECRET_KEY: e.secretKey, S3_ENDPOINT: e.endpoint, REMESSA_S3_BUCKET: bucket },
    });
    const client = clientFor(e);
    t.after(async () => {
      const listed = await client.send(new ListObjectsV2Command({ Bucket: bucket }));
      for (const o of listed.Contents ?? [])
        await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: o.Key }));
      await client.send(new DeleteBucketCommand({ Bucket: bucket }));
      client.destroy();
    });
    const s = await startTestServer({ env });
    await s.close();
  });
});

describe('docs/deploy.md: nginx in front, over TLS', { skip: NGINX ? false : NGINX_SKIP }, () => {
  test('uploads and downloads pass through; a forged X-Forwarded-For is not believed; HSTS', async (t) => {
    const dir = await mkdtemp(path.join(tmpdir(), 'remessa-nginx-'));
    const [httpPort, httpsPort] = [await freePort(), await freePort()];
    const s = await startTestServer({
      env: { REMESSA_TRUST_PROXY: '1', REMESSA_BASE_URL: `https://127.0.0.1:${httpsPort}/v1` },
    });
    let nginx: ChildProcess | undefined;
    t.after(() =>
      closeAll(
        s,
        async () => {
          if (nginx && nginx.exitCode === null) {
            const exited = new Promise((r) => nginx!.once('exit', r));
            nginx.kill('SIGTERM');
            await exited;
          }
        },
        () => rm(dir, { recursive: true, force: true }),
      ),
    );
    await run('openssl', [
      ...['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=files.example.com'],
      ...['-keyout', path.join(dir, 'privkey.pem'), '-out', path.join(dir, 'fullchain.pem')],
    ]);
    const upstream = new URL(s.origin).host;
    const site = block('nginx')
      .replace(/server 10\.0\.0\.\d+:8080;/g, `server ${upstream};`)
      .replace('listen 80;', `listen 127.0.0.1:${httpPort};`)
      .replace('listen 443 ssl', `listen 127.0.0.1:${httpsPort} ssl`)
      .replace('/etc/ssl/remessa/fullchain.pem', path.join(dir, 'fullchain.pem'))
      .replace('/etc/ssl/remessa/privkey.pem', path.join(dir, 'privkey.pem'));
    await writeFile(path.join(dir, 'remessa.conf'), site);
    const temps = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'];
    for (const d of temps) await mkdir(path.join(dir, d));
    await writeFile(
      path.join(dir, 'nginx.conf'),
      [
        `pid ${dir}/nginx.pid;`,
        `error_log ${dir}/error.log;`,
        'daemon off;',
        'worker_processes 1;',
        'events { worker_connections 128; }',
        'http {',
        '  access_log off;',
        ...temps.map((d) => `  ${d}_temp_path ${dir}/${d};`),
        `  include ${dir}/remessa.conf;`,
        '}',
      ].join('\n'),
    );
    nginx = spawn(NGINX!, ['-p', dir, '-c', path.join(dir, 'nginx.conf')], { stdio: 'ignore' });
    const https = `https://127.0.0.1:${httpsPort}`;
    const curl = (...args: string[]) => run('curl', ['-k', '-sS', ...args], { maxBuffer: 1 << 20 });
    await eventually(
      async () =>
        (await curl('-o', '/dev/null', '-w', '%{http_code}', `${https}/v1/healthz`).catch(() => null))
          ?.stdout === '200',
      20_000,
    );

    await s.createUser('ana', 'ana-password');
    const file = path.join(dir, 'big.bin');
    const data = Buffer.alloc(20 * 1024 * 1024, 'remessa');
    await writeFile(file, data);
    const up = await curl(
      ...['-H', `Authorization: ${basic('ana', 'ana-password')}`, '-H', 'X-Forwarded-For: 203.0.113.66'],
      ...['-F', `file=@${file}`, `${https}/v1/upload?file=big.bin`],
    );
    const body = JSON.parse(up.stdout) as { files: { linkURL: string }[] };
    const link = body.files[0]!.linkURL;
    assert.ok(link.startsWith(`${https}/v1/download/file?`), link);
    const got = path.join(dir, 'got.bin');
    const down = await curl('-D', '-', '-o', got, link);
    assert.match(down.stdout, /^HTTP\/2 200/);
    assert.match(down.stdout, /strict-transport-security: max-age=31536000; includeSubDomains/i);
    assert.equal(
      createHash('sha256')
        .update(await readFile(got))
        .digest('hex'),
      createHash('sha256').update(data).digest('hex'),
    );

    const [row] = await s.server.services.db
      .selectFrom('audit')
      .select('remote')
      .where('event', '=', 'upload')
      .execute();
    assert.equal(row?.remote, '127.0.0.1', 'the address nginx saw, not the one the client wrote');
    const plain = await run('curl', [
      '-sS',
      '-o',
      '/dev/null',
      '-w',
      '%{http_code} %{redirect_url}',
      `http://127.0.0.1:${httpPort}/v1/healthz`,
    ]);
    assert.match(plain.stdout, /^301 https:\/\//);
  });
});

describe('docs/deploy.md: the systemd unit', () => {
  test('systemd-analyze accepts it; its ExecStart serves with its environment file', async (t) => {
    const dir = await mkdtemp(path.join(tmpdir(), 'remessa-unit-'));
    t.after(() => rm(dir, { recursive: true, force: true }));
    const unit = block('systemd');
    if (SYSTEMD_ANALYZE) {
      const file = path.join(dir, 'remessa.service');
      await writeFile(file, unit);
      const verified = await run(SYSTEMD_ANALYZE, ['verify', file]).catch((err: { stderr: string }) => err);
      assert.doesNotMatch(
        verified.stderr,
        /remessa\.service:\d+:|Unknown (key|section)|Invalid/,
        verified.stderr,
      );
    } else t.diagnostic('systemd-analyze not found: the unit is only run, not verified');
    const setting = (key: string) => new RegExp(`^${key}=(.*)$`, 'm').exec(unit)?.[1] ?? '';
    const port = await freePort();
    const envFile = path.join(dir, 'remessa.env');
    await writeFile(
      envFile,
      [
        `REMESSA_DATA_DIR=${path.join(dir, 'data')}`,
        `REMESSA_PORT=${port}`,
        'REMESSA_HOST=127.0.0.1',
        'REMESSA_LOG_LEVEL=warn',
      ].join('\n'),
      { mode: 0o600 },
    );
    assert.equal(setting('EnvironmentFile'), '/etc/remessa/remessa.env');
    const env: Record<string, string> = { ...(cleanEnv() as Record<string, string>) };
    for (const line of (await readFile(envFile, 'utf8')).split('\n')) {
      const [k, ...v] = line.split('=');
      if (k) env[k] = v.join('=');
    }
    const [cmd, ...args] = setting('ExecStart').replaceAll('/opt/remessa', ROOT).split(/\s+/);
    const child = spawn(cmd === '/usr/bin/node' ? process.execPath : cmd!, args, {
      cwd: setting('WorkingDirectory').replace('/opt/remessa', ROOT),
      env,
      stdio: 'ignore',
    });
    const exited = new Promise<number | null>((r) => child.once('exit', r));
    t.after(() => child.kill('SIGKILL'));
    await eventually(
      async () => (await fetch(`http://127.0.0.1:${port}/v1/readyz`).catch(() => null))?.status === 200,
      60_000,
    );
    child.kill('SIGTERM'); // systemctl stop
    assert.equal(await exited, 0, 'stops cleanly on SIGTERM');
  });
});
