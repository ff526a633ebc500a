// Pure functions with no HTTP in between: the Go-style envelope time, configuration loading and
// validation, URL redaction for logs. Time zones are set per child process (TZ is read at start).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { ConfigError, loadConfig } from '../src/app/config.js';
import { PORTAL_CSP } from '../src/features/portal/routes.js';
import { parseMetadata } from '../src/features/uploads/routes.js';
import { DOCS_CSP } from '../src/platform/http/app.js';
import { DEFAULT_CSP } from '../src/platform/http/security-headers.js';
import { redactUrl } from '../src/platform/logger.js';
import { GO_TIME } from './helpers/server.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const GO_TIME_MODULE = pathToFileURL(path.join(ROOT, 'dist/src/platform/http/go-time.js')).href;

/** Runs go-time in a child with the given TZ; returns the printed lines. */
async function inZone(tz: string, body: string): Promise<string[]> {
  const script = `import { goTimeString, nowGoTime } from ${JSON.stringify(GO_TIME_MODULE)};\n${body}`;
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
    env: { ...process.env, TZ: tz },
  });
  return stdout.trim().split('\n');
}

// 2022-06-13 22:37:52.366591 UTC (southern winter / northern summer) and a January instant.
const JUNE = 'new Date(Date.UTC(2022, 5, 13, 22, 37, 52, 366))';
const JANUARY = 'new Date(Date.UTC(2022, 0, 13, 22, 37, 52, 366))';
const PRINT = `console.log(goTimeString(${JUNE}, 366591, 25968.263316625));
console.log(goTimeString(${JANUARY}, 7, 0.5));
console.log(nowGoTime());`;

describe('goTimeString / nowGoTime (Go time.Time.String())', () => {
  test('America/Sao_Paulo: the interface sample byte for byte', async () => {
    const [june, january, now] = await inZone('America/Sao_Paulo', PRINT);
    assert.equal(june, '2022-06-13 19:37:52.366591 -0300 -03 m=+25968.263316625');
    assert.equal(january, '2022-01-13 19:37:52.000007 -0300 -03 m=+0.500000000');
    assert.match(now!, GO_TIME);
    assert.match(now!, / -0300 -03 m=\+\d+\.\d{9}$/);
  });

  test('UTC: +0000 UTC', async () => {
    const [june, , now] = await inZone('UTC', PRINT);
    assert.equal(june, '2022-06-13 22:37:52.366591 +0000 UTC m=+25968.263316625');
    assert.match(now!, GO_TIME);
    assert.match(now!, / \+0000 UTC m=/);
  });

  test('Asia/Kolkata: +0530 and an abbreviation, or +0530 again', async () => {
    const [june, , now] = await inZone('Asia/Kolkata', PRINT);
    assert.match(june!, /^2022-06-14 04:07:52\.366591 \+0530 (?:[A-Z]{2,5}|\+0530) m=\+25968\.263316625$/);
    assert.match(now!, GO_TIME);
    assert.match(now!, / \+0530 (?:[A-Z]{2,5}|\+0530) m=/);
  });

  test('America/New_York: EDT in June, EST in January', async () => {
    const [june, january, now] = await inZone('America/New_York', PRINT);
    assert.equal(june, '2022-06-13 18:37:52.366591 -0400 EDT m=+25968.263316625');
    assert.equal(january, '2022-01-13 17:37:52.000007 -0500 EST m=+0.500000000');
    assert.match(now!, GO_TIME);
    assert.match(now!, / (?:-0400 EDT|-0500 EST) m=/);
  });

  test('Europe/London in January is GMT, as Go prints it (not UTC)', async () => {
    const [, january] = await inZone('Europe/London', PRINT);
    assert.equal(january, '2022-01-13 22:37:52.000007 +0000 GMT m=+0.500000000');
  });

  test('offsets with minutes west of UTC keep their sign: America/St_Johns', async () => {
    const [january] = (await inZone('America/St_Johns', PRINT)).slice(1);
    assert.match(january!, /^2022-01-13 19:07:52\.000007 -0330 (?:[A-Z]{2,5}|-0330) m=\+0\.500000000$/);
  });

  test('nowGoTime: 6 fraction digits, m=+ grows monotonically within a process', async () => {
    const lines = await inZone('UTC', 'for (let i = 0; i < 50; i++) console.log(nowGoTime());');
    assert.equal(lines.length, 50);
    const monotonic = lines.map((l) => {
      assert.match(l, GO_TIME);
      return Number(/m=\+(\S+)$/.exec(l)![1]);
    });
    for (let i = 1; i < monotonic.length; i++) assert.ok(monotonic[i]! >= monotonic[i - 1]!);
  });
});

describe('loadConfig', () => {
  const errorOf = (env: Record<string, string>): string => {
    try {
      loadConfig(env);
    } catch (err) {
      assert.ok(err instanceof ConfigError, String(err));
      return err.message;
    }
    assert.fail(`no ConfigError for ${JSON.stringify(env)}`);
  };

  test('defaults are the documented values', () => {
    const c = loadConfig({});
    assert.equal(c.port, 8080);
    assert.equal(c.host, '0.0.0.0');
    assert.equal(c.baseUrl, 'http://localhost:8080/v1');
    assert.equal(c.apiPath, '/v1');
    assert.equal(c.portalPath, '/');
    assert.equal(c.dataDir, path.resolve('./data'));
    assert.equal(c.lang, 'pt');
    assert.equal(c.secret, null);
    assert.equal(c.databaseUrl, null);
    assert.equal(c.tokenSeconds, 3600);
    assert.equal(c.lockoutAttempts, 5);
    assert.equal(c.lockoutSeconds, 15 * 60);
    assert.equal(c.passwordMinLength, 8);
    assert.equal(c.linkDays, 7);
    assert.equal(c.backupDays, 30);
    assert.equal(c.retireOnDownload, false);
    assert.equal(c.maxFileSize, 1024 ** 3);
    assert.equal(c.recipientPin, true);
    assert.equal(c.pinSeconds, 180);
    assert.equal(c.notifyRetrySeconds, 5);
    // Not the design's 5 attempts (~75 s of outage lost every message): docs/decisions.md.
    assert.equal(c.notifyMaxAttempts, 0);
    assert.equal(c.notifyRetryHours, 24);
    assert.equal(c.smtpUrl, null);
    assert.equal(c.smsProvider, null);
    assert.equal(c.templatesDir, null);
    assert.equal(c.logLevel, 'info');
    assert.equal(c.trustProxy, false);
  });

  test('an empty value means "use the default"', () => {
    const c = loadConfig({ REMESSA_PORT: '', REMESSA_LANG: '', REMESSA_SECRET: '' });
    assert.equal(c.port, 8080);
    assert.equal(c.lang, 'pt');
    assert.equal(c.secret, null);
  });

  const invalid: [Record<string, string>, string][] = [
    [{ REMESSA_PORT: 'abc' }, 'REMESSA_PORT must be a whole number, got "abc"'],
    [{ REMESSA_PORT: '70000' }, 'REMESSA_PORT must be between 0 and 65535, got 70000'],
    [{ REMESSA_PORT: '-1' }, 'REMESSA_PORT must be a whole number, got "-1"'],
    [{ REMESSA_BASE_URL: 'notaurl' }, 'REMESSA_BASE_URL must be an absolute http(s) URL, got "notaurl"'],
    [{ REMESSA_BASE_URL: 'ftp://h/v1' }, 'REMESSA_BASE_URL must use http or https, got "ftp://h/v1"'],
    [{ REMESSA_BASE_URL: 'http://h/v1?x=1' }, 'REMESSA_BASE_URL must not have a query or fragment'],
    [{ REMESSA_LANG: 'fr' }, 'REMESSA_LANG must be one of pt, en, es, got "fr"'],
    [{ REMESSA_SECRET: 'short' }, 'REMESSA_SECRET must be at least 16 characters'],
    [
      { REMESSA_DATABASE_URL: 'mysql://db/x' },
      'REMESSA_DATABASE_URL must be a postgres:// URL (leave it unset for SQLite)',
    ],
    [{ REMESSA_SMTP_URL: 'http://mail' }, 'REMESSA_SMTP_URL must start with smtp:// or smtps://'],
    [
      { REMESSA_SMS_PROVIDER: 'carrier-pigeon' },
      'REMESSA_SMS_PROVIDER must be twilio or webhook, got "carrier-pigeon"',
    ],
    [{ REMESSA_SMS_PROVIDER: 'webhook' }, 'REMESSA_SMS_PROVIDER needs REMESSA_SMS_URL'],
    [{ REMESSA_RECIPIENT_PIN: 'maybe' }, 'REMESSA_RECIPIENT_PIN must be true or false, got "maybe"'],
    [
      { REMESSA_MAX_FILE_SIZE: '1.5GiB' },
      'REMESSA_MAX_FILE_SIZE must be a size such as 1073741824 or 1GiB, got "1.5GiB"',
    ],
    [{ REMESSA_MAX_FILE_SIZE: '0' }, 'REMESSA_MAX_FILE_SIZE must be at least 1 byte'],
    [{ REMESSA_TOKEN_SECONDS: '0' }, 'REMESSA_TOKEN_SECONDS must be between 1 and 9007199254740991, got 0'],
    [
      { REMESSA_LOG_LEVEL: 'loud' },
      'REMESSA_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "loud"',
    ],
  ];
  for (const [env, message] of invalid) {
    test(`rejects ${JSON.stringify(env)}`, () => {
      assert.equal(errorOf(env), message);
    });
  }

  test('REMESSA_MAX_FILE_SIZE takes plain bytes or binary units', () => {
    const size = (v: string) => loadConfig({ REMESSA_MAX_FILE_SIZE: v }).maxFileSize;
    assert.equal(size('1GiB'), 1073741824);
    assert.equal(size('1gib'), 1073741824);
    assert.equal(size('1G'), 1073741824);
    assert.equal(size('500MB'), 500 * 1024 ** 2);
    assert.equal(size('10k'), 10 * 1024);
    assert.equal(size('12345'), 12345);
    assert.equal(size(' 2 GiB '), 2 * 1024 ** 3);
  });

  test('booleans accept true/false, 1/0, yes/no, on/off', () => {
    for (const v of ['true', '1', 'yes', 'on', 'TRUE'])
      assert.equal(loadConfig({ REMESSA_RETIRE_ON_DOWNLOAD: v }).retireOnDownload, true, v);
    for (const v of ['false', '0', 'no', 'off'])
      assert.equal(loadConfig({ REMESSA_RECIPIENT_PIN: v }).recipientPin, false, v);
  });

  const paths: [string, string, string, string][] = [
    ['http://h/directlink/v1', 'http://h/directlink/v1', '/directlink/v1', '/directlink/'],
    ['http://h/directlink/v1/', 'http://h/directlink/v1', '/directlink/v1', '/directlink/'],
    ['https://files.example.com:8443/v1', 'https://files.example.com:8443/v1', '/v1', '/'],
    ['http://h/a/b/v1', 'http://h/a/b/v1', '/a/b/v1', '/a/b/'],
    ['http://h', 'http://h', '', '/'],
  ];
  for (const [raw, baseUrl, apiPath, portalPath] of paths) {
    test(`REMESSA_BASE_URL=${raw} → API at "${apiPath}", portal at "${portalPath}"`, () => {
      const c = loadConfig({ REMESSA_BASE_URL: raw });
      assert.deepEqual(
        { baseUrl: c.baseUrl, apiPath: c.apiPath, portalPath: c.portalPath },
        { baseUrl, apiPath, portalPath },
      );
    });
  }

  describe('REMESSA_CONFIG file', () => {
    let dir: string;
    before(async () => {
      dir = await mkdtemp(path.join(tmpdir(), 'remessa-config-'));
    });
    after(() => rm(dir, { recursive: true, force: true }));

    test('holds the same keys as the environment; the environment wins', async () => {
      const file = path.join(dir, 'remessa.json');
      await writeFile(
        file,
        JSON.stringify({
          REMESSA_PORT: 9000,
          REMESSA_LANG: 'en',
          REMESSA_RETIRE_ON_DOWNLOAD: true,
          REMESSA_BASE_URL: 'https://mft.example.com/directlink/v1',
          REMESSA_SMTP_URL: null,
        }),
      );
      const fromFile = loadConfig({ REMESSA_CONFIG: file });
      assert.equal(fromFile.port, 9000);
      assert.equal(fromFile.lang, 'en');
      assert.equal(fromFile.retireOnDownload, true);
      assert.equal(fromFile.apiPath, '/directlink/v1');
      assert.equal(fromFile.smtpUrl, null);

      const overridden = loadConfig({ REMESSA_CONFIG: file, REMESSA_LANG: 'es', REMESSA_PORT: '9001' });
      assert.equal(overridden.lang, 'es');
      assert.equal(overridden.port, 9001);
      assert.equal(
        overridden.retireOnDownload,
        true,
        'keys the environment leaves alone still come from the file',
      );
    });

    test('values from the file are validated like the environment', async () => {
      const file = path.join(dir, 'bad-port.json');
      await writeFile(file, JSON.stringify({ REMESSA_PORT: 'abc' }));
      assert.equal(errorOf({ REMESSA_CONFIG: file }), 'REMESSA_PORT must be a whole number, got "abc"');
    });

    test('a missing, malformed or non-object file is a ConfigError naming REMESSA_CONFIG', async () => {
      const missing = path.join(dir, 'nope.json');
      assert.match(errorOf({ REMESSA_CONFIG: missing }), /^REMESSA_CONFIG: cannot read .*nope\.json/);
      const broken = path.join(dir, 'broken.json');
      await writeFile(broken, '{ not json');
      assert.match(errorOf({ REMESSA_CONFIG: broken }), /^REMESSA_CONFIG: cannot read .*broken\.json/);
      const array = path.join(dir, 'array.json');
      await writeFile(array, '["REMESSA_PORT"]');
      assert.match(errorOf({ REMESSA_CONFIG: array }), /^REMESSA_CONFIG: .*must hold a JSON object/);
    });
  });

  test('the README documents every REMESSA_* name that src/app/config.ts reads', async () => {
    const source = await readFile(path.join(ROOT, 'src/app/config.ts'), 'utf8');
    const readme = await readFile(path.join(ROOT, 'README.md'), 'utf8');
    const names = [...new Set(source.match(/REMESSA_[A-Z0-9_]+/g))].sort();
    assert.ok(names.length > 30, `found only ${names.length} names`);
    const missing = names.filter((n) => !readme.includes(`\`${n}\``));
    assert.deepEqual(missing, [], 'README configuration table is missing these names');
  });
});

describe('redactUrl', () => {
  test('masks download tokens, PINs, new passwords and passwords', () => {
    assert.equal(
      redactUrl('/v1/download/file?lang=pt&k=abcDEF123_-'),
      '/v1/download/file?lang=pt&k=[REDACTED]',
    );
    assert.equal(redactUrl('/v1/download/file/backup?z=zzz'), '/v1/download/file/backup?z=[REDACTED]');
    assert.equal(
      redactUrl('/v1/auth/changeParameters?k=tok&p=123456&z=new-password'),
      '/v1/auth/changeParameters?k=[REDACTED]&p=[REDACTED]&z=[REDACTED]',
    );
    assert.equal(redactUrl('/x?user=a&password=hunter22'), '/x?user=a&password=[REDACTED]');
    assert.equal(redactUrl('http://ana:hunter22@host:8080/v1/x?a=1'), 'http://[REDACTED]@host:8080/v1/x?a=1');
    assert.equal(redactUrl('/x?PASSWORD=hunter22&K=t'), '/x?PASSWORD=[REDACTED]&K=[REDACTED]');
    assert.equal(
      redactUrl('/x?pin=1&token=t&access_token=a'),
      '/x?pin=[REDACTED]&token=[REDACTED]&access_token=[REDACTED]',
    );
  });

  test('masks token-shaped values however they are spelled', () => {
    const token = 'A'.repeat(20) + 'b_-c'.repeat(6);
    const jwt = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl';
    for (const url of [
      `/v1/download/file?k%00=${token}`,
      `/v1/download/file;k=${token}`,
      `/v1/download/file?kk=${token}&lang=pt`,
      `/v1/${jwt}`,
      `/v1/x?next=${encodeURIComponent(`/y?k=${token}`)}`,
    ]) {
      const out = redactUrl(url);
      assert.ok(!out.includes(token) && !out.includes(jwt), out);
      assert.match(out, /\[REDACTED\]/);
    }
    assert.equal(redactUrl(`/v1/download/file;k=${token}`), '/v1/download/file;k=[REDACTED]');
  });

  test('leaves other parameters and URLs without a query alone', () => {
    assert.equal(redactUrl('/v1/auth/forgetParameters?u=USER1'), '/v1/auth/forgetParameters?u=USER1');
    assert.equal(redactUrl('/v1/download/list?page=2'), '/v1/download/list?page=2');
    assert.equal(redactUrl('/v1/upload'), '/v1/upload');
    assert.equal(
      redactUrl('/v1/upload?file=a.txt&d=USER2&m=x%40example.com&i=hello&c=%2B5511987654321'),
      '/v1/upload?file=a.txt&d=USER2&m=x%40example.com&i=hello&c=%2B5511987654321',
    );
  });

  test('no secret survives in any form', () => {
    const secret = 'S3cr3t-Value';
    for (const key of ['k', 'p', 'z', 'password'])
      for (const url of [
        `/a?${key}=${secret}`,
        `/a?x=1&${key}=${secret}&y=2`,
        `/a?${key}=${secret}&${key}=${secret}`,
      ])
        assert.ok(!redactUrl(url).includes(secret), url);
  });
});

describe('the test helpers', () => {
  // CI once sat for 90 minutes on a test file whose before() failed after its peers had started.
  test('a suite whose server fails to start in before() fails and ends, with its peers closed', async () => {
    const fixture = path.join(ROOT, 'dist/test/fixtures/failed-start.js');
    // Without NODE_TEST_CONTEXT, which would make the child report to this runner instead.
    const { NODE_TEST_CONTEXT: _, ...env } = process.env;
    const run = await promisify(execFile)(process.execPath, ['--test', '--test-reporter=spec', fixture], {
      timeout: 60_000,
      env,
    }).then(
      () => assert.fail('the fixture was expected to fail'),
      (err: { code?: number; killed?: boolean; stdout: string }) => err,
    );
    assert.equal(run.killed, false, 'the test file did not end by itself');
    assert.equal(run.code, 1);
    assert.match(run.stdout, /ENOTDIR/);
  });
});

describe('tus Upload-Metadata', () => {
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  test('keys an object already has (constructor, __proto__, toString) are unknown keys, ignored', () => {
    assert.deepEqual(
      parseMetadata(`filename ${b64('a.txt')},constructor ${b64('x')},__proto__ ${b64('y')},toString`),
      { filename: 'a.txt' },
    );
    assert.throws(() => parseMetadata(`filename ${b64('a')},filename ${b64('b')}`), /given twice/);
  });
});

describe('Content-Security-Policy', () => {
  // Answers carry these byte for byte: the builder must spell each as it always was.
  test('the API, docs and portal policies are the ones served', () => {
    assert.equal(DEFAULT_CSP, "default-src 'none'; frame-ancestors 'none'");
    assert.equal(
      DOCS_CSP,
      "default-src 'none'; script-src 'self'; style-src 'self' 'sha256-RL3ie0nH+Lzz2YNqQN83mnU0J1ot4QL7b99vMdIX99w='; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    );
    assert.equal(
      PORTAL_CSP,
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    );
  });
});
