// The API in a standard form: {base}/openapi.json is OpenAPI 3.1 that an independent
// validator accepts, with every endpoint of interface.md and every extension, the named shapes,
// security schemes and an example per response; Swagger UI renders it in Chromium under the
// strict CSP, from the package's own files. (That every response the suite sees matches the
// document is checked by the test helper, test/helpers/server.ts, on every test server.)
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import type { Browser } from 'playwright-core';
import { errors, json } from '../src/platform/http/schemas.js';
import { browserSkip, launchBrowser, openPage, screenshot } from './helpers/browser.js';
import { responseProblem } from './helpers/responses.js';
import {
  basic,
  call,
  closeAll,
  ERROR_KEYS,
  errorKeys,
  startTestServer,
  type TestServer,
} from './helpers/server.js';

interface Operation {
  tags?: string[];
  security?: Record<string, string[]>[];
  parameters?: { in: string; name: string }[];
  responses: Record<string, { content?: Record<string, { example?: unknown; schema?: unknown }> }>;
}
type Doc = {
  openapi: string;
  servers: { url: string }[];
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, unknown>; securitySchemes: Record<string, { scheme: string }> };
};

describe('openapi.json', () => {
  let t: TestServer;
  let doc: Doc;
  before(async () => {
    t = await startTestServer({ apiPath: '/directlink/v1' });
    const r = await call(`${t.base}/openapi.json`);
    assert.equal(r.status, 200);
    doc = r.body as unknown as Doc;
  });
  after(() => closeAll(t));

  test('an independent validator accepts it as OpenAPI 3.1', async () => {
    assert.equal(doc.openapi, '3.1.0');
    const validator = new Validator();
    const res = await validator.validate(structuredClone(doc) as Parameters<Validator['validate']>[0]);
    assert.deepEqual(res.errors ?? [], []);
    assert.equal(res.valid, true);
  });

  test('paths are relative to {base_url}, named in servers', () => {
    assert.deepEqual(doc.servers, [{ url: t.base }]);
    for (const p of Object.keys(doc.paths)) assert.ok(!p.startsWith('/directlink'), p);
  });

  test('every endpoint of the interface and every extension, and nothing of the portal', () => {
    const ops = Object.entries(doc.paths)
      .flatMap(([p, methods]) => Object.keys(methods).map((m) => `${m.toUpperCase()} ${p}`))
      .sort();
    assert.deepEqual(ops, [
      'DELETE /admin/files/{id}',
      'DELETE /admin/keys/{id}',
      'DELETE /admin/users/{name}',
      'DELETE /download/file',
      'DELETE /keys/{id}',
      'DELETE /uploads/{id}',
      'DELETE /webhooks',
      'GET /admin/audit',
      'GET /admin/files',
      'GET /admin/files/{id}/timeline',
      'GET /admin/keys',
      'GET /admin/outbox',
      'GET /admin/requests',
      'GET /admin/stats',
      'GET /admin/users',
      'GET /admin/users/{name}',
      'GET /auth/firstaccess',
      'GET /auth/forget',
      'GET /auth/forgetParameters',
      'GET /download/file',
      'GET /download/file/backup',
      'GET /download/info',
      'GET /download/list',
      'GET /download/list/backup',
      'GET /download/status',
      'GET /healthz',
      'GET /keys',
      'GET /readyz',
      'GET /requests',
      'GET /requests/open',
      'GET /requests/{id}',
      'GET /uploads/{id}',
      'GET /webhooks',
      'HEAD /download/file',
      'HEAD /download/file/backup',
      'HEAD /uploads/{id}',
      'OPTIONS /uploads',
      'OPTIONS /uploads/{id}',
      'PATCH /admin/users/{name}',
      'PATCH /download/link',
      'PATCH /uploads/{id}',
      'POST /admin/outbox/{id}/retry',
      'POST /admin/requests/{id}/close',
      'POST /admin/users',
      'POST /admin/users/{name}/disable',
      'POST /admin/users/{name}/enable',
      'POST /admin/users/{name}/keys',
      'POST /admin/users/{name}/password-reset',
      'POST /admin/users/{name}/unlock',
      'POST /auth/changeParameters',
      'POST /auth/login',
      'POST /auth/logout',
      'POST /auth/oidc/session',
      'POST /download/pin',
      'POST /download/resend',
      'POST /download/revoke',
      'POST /keys',
      'POST /oauth2/token',
      'POST /requests',
      'POST /requests/pin',
      'POST /requests/{id}/close',
      'POST /upload',
      'POST /uploads',
      'POST /webhooks',
    ]);
  });

  test('named components: the envelope, the File entry, the token and OAuth error objects', () => {
    for (const name of [
      'ErrorEnvelope',
      'FileEntry',
      'DownloadList',
      'LoginResult',
      'LinkResult',
      'TokenResponse',
      'OAuthError',
    ]) {
      assert.ok(doc.components.schemas[name], name);
    }
    assert.equal(doc.components.securitySchemes['basic']!.scheme, 'basic');
    assert.equal(doc.components.securitySchemes['bearer']!.scheme, 'bearer');
    const token = doc.paths['/oauth2/token']!['post']!;
    assert.deepEqual(token.responses['200']!.content!['application/json']!.schema, {
      $ref: '#/components/schemas/TokenResponse',
    });
    assert.deepEqual(token.responses['401']!.content!['application/json']!.schema, {
      $ref: '#/components/schemas/OAuthError',
    });
    assert.deepEqual(doc.paths['/upload']!['post']!.security, [{ basic: [] }, { bearer: [] }]);
    assert.deepEqual(doc.paths['/auth/login']!['post']!.security, [{ basic: [] }]);
  });

  test('the Content_type header as the interface writes it', () => {
    for (const [p, m] of [
      ['/oauth2/token', 'post'],
      ['/upload', 'post'],
      ['/auth/login', 'post'],
      ['/auth/changeParameters', 'post'],
      ['/auth/forgetParameters', 'get'],
    ] as const) {
      const names = (doc.paths[p]![m]!.parameters ?? []).filter((x) => x.in === 'header').map((x) => x.name);
      assert.deepEqual(names, ['Content_type'], `${m} ${p}`);
    }
  });

  test('an example for every JSON response', () => {
    for (const [p, methods] of Object.entries(doc.paths)) {
      for (const [m, op] of Object.entries(methods)) {
        for (const [status, res] of Object.entries(op.responses)) {
          const media = res.content?.['application/json'];
          if (media) assert.ok(media.example !== undefined, `${m} ${p} ${status}`);
        }
      }
    }
  });
});

describe('every response is checked against openapi.json', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer();
    await t.createUser('DOC1', 'doc-password');
  });
  after(() => closeAll(t));

  test('the test helper sees the responses and finds them as documented', async () => {
    await call(`${t.base}/auth/login`, {
      method: 'POST',
      headers: { authorization: basic('DOC1', 'doc-password') },
    });
    await call(`${t.base}/auth/login`, { method: 'POST' });
    await call(`${t.base}/oauth2/token`, { method: 'POST' });
    await call(`${t.base}/no/such/thing`);
    await call(`${t.base}/download/list?page=1`, {
      headers: { authorization: basic('DOC1', 'doc-password') },
    });
    assert.deepEqual(t.responseProblems, []);
  });

  test('a body that differs from its schema is reported', async () => {
    // A route documented as login is: its result, or the error envelope.
    const route = '/v1/auth/login';
    const login = { response: { 200: json('LoginResult', 'ok', {}), ...errors({ 401: 'no' }) } };
    const sent = (payload: object, status = 200) => ({
      route,
      schema: login,
      method: 'POST',
      status,
      contentType: 'application/json; charset=utf-8',
      payload: JSON.stringify(payload),
    });
    const ok = {
      status: 0,
      description: 'handlerAuthLogin:succsessfully',
      apiver: 'v1 (0.1.0)',
      time: 't',
      user: 'A',
      bearer: 'b',
    };
    assert.equal(responseProblem(sent(ok), '/v1'), null);
    assert.match(responseProblem(sent({ ...ok, extra: 1 }), '/v1') ?? '', /additional properties/);
    assert.match(
      responseProblem(sent({ ...ok, description: 'handlerAuthLogin:successfully' }), '/v1') ?? '',
      /constant/,
    );
    assert.match(responseProblem(sent({ error: 401 }, 401), '/v1') ?? '', /required property/);
    t.responseProblems.length = 0;
  });
});

describe('the docs routes', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer();
  });
  after(() => closeAll(t));

  test('static/index.html leads to the page, with or without a query string (no redirect loop)', async () => {
    for (const query of ['', '?x=1', '?page=%F0%9B%87%AB']) {
      const r = await fetch(`${t.base}/docs/static/index.html${query}`, { redirect: 'manual' });
      assert.equal(r.status, 302, query);
      assert.equal(r.headers.get('location'), `${new URL(t.base).pathname}/docs/`, query);
      const followed = await fetch(`${t.base}/docs/static/index.html${query}`);
      assert.equal(followed.status, 200, query);
      assert.match(await followed.text(), /Swagger UI/);
    }
  });

  test('their errors are envelopes', async () => {
    for (const [method, path, status, headers] of [
      ['GET', '/docs/static/nope.js', 404, {}],
      ['GET', '/docs/nothing', 404, {}],
      ['POST', '/docs', 405, {}],
      ['DELETE', '/docs/json', 405, {}],
      ['GET', '/docs/static/..%5cpackage.json', 403, {}],
      ['GET', '/docs/static/%00', 400, {}],
      ['GET', '/docs/static/swagger-ui.css', 416, { Range: 'bytes=99999999-' }],
    ] as const) {
      const r = await call(`${t.base}${path}`, { method, headers });
      assert.equal(r.status, status, `${method} ${path}`);
      assert.deepEqual(errorKeys(r.body), ERROR_KEYS, `${method} ${path}`);
      assert.equal(r.body['status'], status);
    }
  });
});

describe('Swagger UI', { skip: browserSkip() }, () => {
  let t: TestServer;
  let browser: Browser;
  before(async () => {
    t = await startTestServer();
    browser = await launchBrowser();
  });
  after(() => closeAll(() => browser?.close(), t));

  test('renders every operation in Chromium, from our own files, under the strict CSP', async () => {
    const opened = await openPage(browser);
    const requests: string[] = [];
    opened.page.on('request', (r) => requests.push(r.url()));
    try {
      const res = await opened.page.goto(`${t.base}/docs`);
      assert.ok(res?.ok());
      await opened.page.waitForSelector('.opblock-summary', { timeout: 30_000 });
      const count = await opened.page.locator('.opblock-summary').count();
      const doc = (await call(`${t.base}/openapi.json`)).body as unknown as Doc;
      const operations = Object.values(doc.paths).flatMap((methods) => Object.keys(methods)).length;
      assert.equal(count, operations);
      assert.ok(count >= 30, `${count} operations`);
      assert.ok(await opened.page.getByText('/oauth2/token').first().isVisible());
      await screenshot(opened.page, 'swagger-ui');
      assert.deepEqual(opened.cspViolations, []);
      const origin = new URL(t.base).origin;
      assert.deepEqual(
        requests.filter((u) => !u.startsWith(origin) && !u.startsWith('data:')),
        [],
        'no request leaves the server (no CDN)',
      );
      const headers = (await fetch(`${t.base}/docs`)).headers;
      assert.match(
        headers.get('content-security-policy') ?? '',
        /^default-src 'none'; script-src 'self'; style-src 'self' 'sha256-[^']+'; img-src 'self' data:;/,
      );
    } finally {
      await opened.close();
    }
  });
});
