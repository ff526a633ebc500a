// API keys for tests: made over the API, and each way a script presents one.
import assert from 'node:assert/strict';
import { basic, call, type TestServer } from './server.js';

export interface MadeKey {
  id: string;
  key: string;
  scopes: string[] | null;
}

/** POST {base}/keys as `auth`, with `fields` (name defaults to "script"). */
export async function makeKey(
  t: TestServer,
  auth: string,
  fields: Record<string, unknown> = {},
): Promise<MadeKey> {
  const r = await call(`${t.base}/keys`, {
    method: 'POST',
    headers: { Authorization: auth, 'Content-Type': 'application/json' },
    body: JSON.stringify({ name: 'script', ...fields }),
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body['apiKey'] as MadeKey;
}

/** The password grant with `password` (a key or a password): the status and the token if any. */
export async function passwordGrant(t: TestServer, name: string, password: string) {
  const r = await call(`${t.base}/oauth2/token`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'password', username: name, password }).toString(),
  });
  return { status: r.status, token: r.status === 200 ? `Bearer ${String(r.body['access_token'])}` : null };
}

/** The status of a 4 KiB upload with `auth`. */
export async function uploadStatus(t: TestServer, auth: string, name = 'k.bin'): Promise<number> {
  const r = await call(`${t.base}/upload?file=${name}`, {
    method: 'POST',
    headers: { Authorization: auth, 'Content-Type': 'application/octet-stream' },
    body: new Uint8Array(4096).fill(1),
  });
  return r.status;
}

/** Every way a script authenticates with `key` of account `name`: Basic, Bearer, and a token. */
export async function keyAuths(t: TestServer, name: string, key: string) {
  const grant = await passwordGrant(t, name, key);
  return { basic: basic(name, key), bearer: `Bearer ${key}`, token: grant.token };
}
