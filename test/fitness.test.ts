// The shape of the code, checked on every run (docs/architecture.md says why each rule exists).
// - HTTP is a front door: only src/platform/http/ and each slice's routes files speak it (the
//   framework, statuses, header names), so another front door (the CLI, an SFTP server) reuses
//   every service as it is. The domain raises the kinds of src/platform/errors.ts.
// - The native module is a mechanism of the adapter and plugins that use it, nowhere else.
// - A slice owns its store: another slice may read through it only where listed here, one way.
// - Files stay readable: no source over 400 lines but translation tables and migrations (the
//   80-line limit on functions is biome's noExcessiveLinesPerFunction, in biome.json).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { ROOT } from './helpers/cli.js';

interface Source {
  /** Relative to the checkout, forward slashes: src/features/files/file-service.ts */
  file: string;
  text: string;
  /** Every relative import, resolved to a file of the checkout (.js named as .ts). */
  imports: string[];
}

function sources(): Source[] {
  const out: Source[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name.endsWith('.ts')) {
        const file = path.relative(ROOT, full).split(path.sep).join('/');
        const text = readFileSync(full, 'utf8');
        out.push({ file, text, imports: importsOf(file, text) });
      }
    }
  };
  walk(path.join(ROOT, 'src'));
  return out;
}

function importsOf(file: string, text: string): string[] {
  const found: string[] = [];
  for (const m of text.matchAll(/(?:from|import)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g)) {
    found.push(
      path.posix.normalize(path.posix.join(path.posix.dirname(file), m[1]!)).replace(/\.js$/, '.ts'),
    );
  }
  return found;
}

/**
 * The HTTP layer: the platform's HTTP assembly and plugins, and each slice's routes files and the
 * response schemas it keeps beside them (schemas-*.ts).
 */
const isHttp = (file: string) =>
  file.startsWith('src/platform/http/') ||
  /^src\/features\/[^/]+\/(routes(-[\w-]+)?|schemas-[\w-]+)\.ts$/.test(file);

/** The entry point builds the HTTP server (and may name the framework's types). */
const ENTRY = 'src/app/server.ts';

/**
 * HTTP clients of Remessa's own API: they send and read its headers as any client does.
 * src/app/client/: the CLI's `send`/`get` (tus requests, Retry-After of a busy server).
 * src/features/portal/client/: the browser portal.
 */
const HTTP_CLIENTS = ['src/app/client/', 'src/features/portal/client/'];
const isClient = (file: string) => HTTP_CLIENTS.some((dir) => file.startsWith(dir));

/** Who may import from src/platform/http/ although they are not the HTTP layer. */
const HTTP_IMPORTERS: Record<string, string> = {
  [ENTRY]: 'builds and starts the HTTP server',
  // The audit log names a failed upload by its HTTP answer ("413 file larger …"), as it always has.
  'src/app/services.ts': 'wires the audit wording of failed uploads (error-mapping.ts)',
  'src/features/portal/client/api.ts': "the browser portal's types of the API's bodies",
};

/** Who may import the native module (src/platform/native/). */
const NATIVE_IMPORTERS: Record<string, string> = {
  'src/platform/memory.ts': "glibc's malloc trim threshold",
  'src/platform/blobs/local/': 'sendfile downloads, hashed O_DIRECT upload writes',
  'src/platform/http/accept-backlog.ts': 'accept4 of connections waiting in the kernel',
  'src/platform/http/plugins/connection-guards.ts': 'the descriptor limit the guards divide',
  [ENTRY]: 'its start-up line names the download and upload paths in use',
};

/**
 * Reads of one slice's store by another (importer slice → store's slice), each with its reason.
 * A new one fails the test: pass through the owning slice's service, or list it here, one way.
 */
const STORE_READS: Record<string, string> = {
  'admin → files': "an account's usage (admin API) counts the files of its area and backup",
  'admin → notify': "the admin's outbox report lists messages and turns a failed one back to pending",
  'auth → users': 'password checks and token generations read the account row',
  'recovery → users': 'recovery and first access read and lock the account row',
  'keys → users': "a key's owner is read with the key, so a disabled or removed account stops it",
  'links → files': "a link names its file's row",
  'links → notify': "delivery tracking reads the outbox rows of a link's messages",
  'uploads → files': 'the last byte of a tus upload commits the file like any upload',
  'webhooks → links': "an event's payload names the file's links",
};

const HEADER_NAMES = /['"`](retry-after|upload-offset|upload-length|www-authenticate|tus-resumable)['"`]/i;
const HTTP_STATUS_ERROR = /new AppError\(|new \w*Error\(\s*[45]\d\d\b/g;
const FRAMEWORK = /from\s+['"](fastify|@fastify\/[^'"]+)['"]|import\(['"](fastify|@fastify\/)/;
/** Translation tables and migrations are long lists, read entry by entry. */
const LONG_BY_NATURE = ['src/features/portal/client/i18n.ts', 'src/platform/sql/migrations.ts'];

const sliceOf = (file: string) => /^src\/features\/([^/]+)\//.exec(file)?.[1];
const isStore = (file: string) => /-store\.ts$|\/store\//.test(file);
const listed = (table: Record<string, string>, file: string) =>
  Object.keys(table).some((key) => file === key || (key.endsWith('/') && file.startsWith(key)));

describe('fitness: the shape of the code', () => {
  const all = sources();
  const outsideHttp = all.filter(({ file }) => !isHttp(file));

  test('the sources were found', () => {
    assert.ok(all.some((s) => s.file === 'src/platform/errors.ts'));
    assert.ok(outsideHttp.length > 50, `only ${outsideHttp.length} files`);
  });

  test('only the HTTP layer (and the entry point) imports fastify or @fastify/*', () => {
    const offenders = outsideHttp.filter(({ file, text }) => file !== ENTRY && FRAMEWORK.test(text));
    assert.deepEqual(
      offenders.map((s) => s.file),
      [],
    );
  });

  test('nothing outside the HTTP layer imports src/platform/http/, but the listed ones', () => {
    const offenders = outsideHttp
      .filter(({ file }) => !(file in HTTP_IMPORTERS))
      .filter(({ imports }) => imports.some((i) => i.startsWith('src/platform/http/')))
      .map(({ file }) => file);
    assert.deepEqual(offenders, []);
  });

  test('no file outside the HTTP layer builds an error with an HTTP status', () => {
    const offenders = outsideHttp.flatMap(({ file, text }) =>
      [...text.matchAll(HTTP_STATUS_ERROR)].map((m) => `${file}: ${m[0]}`),
    );
    assert.deepEqual(offenders, []);
  });

  test('no file outside the HTTP layer (but the HTTP clients) writes an HTTP header name', () => {
    const offenders = outsideHttp
      .filter(({ file }) => !isClient(file))
      .flatMap(({ file, text }) => {
        const m = HEADER_NAMES.exec(text);
        return m ? [`${file}: ${m[1]}`] : [];
      });
    assert.deepEqual(offenders, []);
  });

  test('the native module is imported only by the adapter and plugins that use it', () => {
    const offenders = all
      .filter(({ file }) => !file.startsWith('src/platform/native/') && !listed(NATIVE_IMPORTERS, file))
      .filter(({ imports }) => imports.some((i) => i.startsWith('src/platform/native/')))
      .map(({ file }) => file);
    assert.deepEqual(offenders, []);
  });

  test("a slice reads another slice's store only where listed, and never both ways", () => {
    const reads = new Set<string>();
    for (const { file, imports } of all) {
      const from = sliceOf(file);
      if (!from) continue;
      for (const target of imports) {
        const to = sliceOf(target);
        if (to && to !== from && isStore(target)) reads.add(`${from} → ${to}`);
      }
    }
    assert.deepEqual(
      [...reads].filter((pair) => !(pair in STORE_READS)),
      [],
    );
    const both = [...reads].filter((pair) => reads.has(pair.split(' → ').reverse().join(' → ')));
    assert.deepEqual(both, []);
  });

  test('no source file is over 400 lines (translation tables and migrations aside)', () => {
    const long = all
      .filter(({ file }) => !LONG_BY_NATURE.includes(file))
      .map(({ file, text }) => ({ file, lines: text.split('\n').length - 1 }))
      .filter(({ lines }) => lines > 400)
      .map(({ file, lines }) => `${file}: ${lines}`);
    assert.deepEqual(long, []);
  });

  test('the checks catch what they are for', () => {
    assert.ok(/new AppError\(/.test("throw new AppError(409, 'x')"));
    assert.ok(/new \w*Error\(\s*[45]\d\d\b/.test('new HttpError(\n  503, detail)'));
    assert.ok(HEADER_NAMES.test("{ 'Retry-After': '5' }"));
    assert.ok(FRAMEWORK.test("import Fastify from 'fastify';"));
    assert.ok(isHttp('src/features/links/routes-delivery.ts'));
    assert.ok(!isHttp('src/features/links/secure-links.ts'));
    assert.ok(isHttp('src/features/admin/schemas-users.ts'));
    assert.ok(!isHttp('src/features/admin/user-admin-service.ts'));
    assert.deepEqual(
      importsOf('src/features/auth/auth-service.ts', "import type { X } from '../users/user-store.js';"),
      ['src/features/users/user-store.ts'],
    );
    assert.ok(isStore('src/features/files/store/lookups.ts') && isStore('src/features/users/user-store.ts'));
  });
});
