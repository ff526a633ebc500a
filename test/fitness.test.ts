// The domain speaks in domain errors (src/platform/errors.ts); only the front doors say them in a protocol.
// These checks read the sources and fail when HTTP leaks out of src/platform/http/: a framework import, an
// error built with an HTTP status, an HTTP header name. So another front door (a CLI, an SFTP
// server) can reuse every service as it is.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { ROOT } from './helpers/cli.js';

const SRC = path.join(ROOT, 'src');

/** Every TypeScript source outside src/platform/http/, relative to the checkout (src/…, forward slashes). */
function domainSources(): { file: string; text: string }[] {
  const out: { file: string; text: string }[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name.endsWith('.ts')) {
        const file = path.relative(ROOT, full).split(path.sep).join('/');
        if (!file.startsWith('src/platform/http/')) out.push({ file, text: readFileSync(full, 'utf8') });
      }
    }
  };
  walk(SRC);
  return out;
}

/** The entry point builds the HTTP server (and may name the framework's types). */
const ENTRY = 'src/app/server.ts';

/**
 * HTTP clients of Remessa's own API: they send and read its headers as any client does.
 * src/app/client/: the CLI's `send`/`get` (tus requests, Retry-After of a busy server).
 * src/features/portal/client/: the browser portal.
 */
const HTTP_CLIENTS = ['src/app/client/', 'src/features/portal/client/'];
const isClient = (file: string) => HTTP_CLIENTS.some((dir) => file.startsWith(dir));

/** Who may import from src/platform/http/ although it lives outside it. */
const HTTP_IMPORTERS: Record<string, string> = {
  [ENTRY]: 'builds and starts the HTTP server',
  // The audit log names a failed upload by its HTTP answer ("413 file larger …"), as it always has.
  'src/app/services.ts': 'wires the audit wording of failed uploads (error-mapping.ts)',
  'src/features/portal/client/api.ts': "the browser portal's types of the API's bodies",
};

const HEADER_NAMES = /['"`](retry-after|upload-offset|upload-length|www-authenticate|tus-resumable)['"`]/i;

describe('fitness: HTTP stays in src/platform/http/', () => {
  const sources = domainSources();

  test('the sources were found', () => {
    assert.ok(sources.some((s) => s.file === 'src/platform/errors.ts'));
    assert.ok(sources.length > 50, `only ${sources.length} files`);
  });

  test('no file outside src/platform/http/ (but the entry point) imports fastify or @fastify/*', () => {
    const offenders = sources
      .filter(({ file }) => file !== ENTRY)
      .filter(({ text }) =>
        /from\s+['"](fastify|@fastify\/[^'"]+)['"]|import\(['"](fastify|@fastify\/)/.test(text),
      )
      .map(({ file }) => file);
    assert.deepEqual(offenders, []);
  });

  test('no file outside src/platform/http/ imports from it, but the listed ones', () => {
    const offenders = sources
      .filter(({ file }) => !(file in HTTP_IMPORTERS))
      .filter(({ text }) => /from\s+['"](\.\.?\/)+(\.\.\/)*http\//.test(text))
      .map(({ file }) => file);
    assert.deepEqual(offenders, []);
  });

  test('no file outside src/platform/http/ builds an error with an HTTP status', () => {
    const offenders: string[] = [];
    for (const { file, text } of sources) {
      // AppError is the HTTP layer's; an error of any name given a 4xx/5xx number is one too.
      for (const m of text.matchAll(/new AppError\(|new \w*Error\(\s*[45]\d\d\b/g))
        offenders.push(`${file}: ${m[0]}`);
    }
    assert.deepEqual(offenders, []);
  });

  test('no file outside src/platform/http/ (but the HTTP clients) writes an HTTP header name', () => {
    const offenders = sources
      .filter(({ file }) => !isClient(file))
      .flatMap(({ file, text }) => {
        const m = HEADER_NAMES.exec(text);
        return m ? [`${file}: ${m[1]}`] : [];
      });
    assert.deepEqual(offenders, []);
  });

  test('the checks catch what they are for', () => {
    assert.ok(/new AppError\(|new \w*Error\(\s*[45]\d\d\b/.test("throw new AppError(409, 'x')"));
    assert.ok(/new \w*Error\(\s*[45]\d\d\b/.test('new HttpError(\n  503, detail)'));
    assert.ok(HEADER_NAMES.test("{ 'Retry-After': '5' }"));
    assert.ok(/from\s+['"](\.\.?\/)+(\.\.\/)*http\//.test("import { x } from '../http/error-mapping.js';"));
  });
});
