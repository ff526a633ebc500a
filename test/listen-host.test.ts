// REMESSA_HOST given as a name (`localhost`): every address that accepts a connection serves it
// with the app's connection guards. Given `localhost`, Fastify also bound its other addresses (::1
// beside 127.0.0.1) through servers it made itself, without them: an unparseable request there got
// Node's bare 400 instead of the envelope, and no per-address limit applied.
import assert from 'node:assert/strict';
import dns from 'node:dns';
import { isIPv6 } from 'node:net';
import { after, before, test } from 'node:test';
import { type RawAnswer, rawRequest } from './helpers/raw.js';
import { ERROR_KEYS, errorKeys, startTestServer, type TestServer } from './helpers/server.js';

// As on most machines, localhost resolves to both families (this kind's /etc/hosts names only
// 127.0.0.1, which would hide the second binding).
const LOCALHOST = [
  { address: '127.0.0.1', family: 4 },
  { address: '::1', family: 6 },
];
const realLookup = dns.lookup;
const realPromisesLookup = dns.promises.lookup;

before(() => {
  dns.lookup = ((host: string, options: unknown, callback?: unknown) => {
    const cb = (typeof options === 'function' ? options : callback) as (...args: unknown[]) => void;
    if (host !== 'localhost') return (realLookup as (...args: unknown[]) => void)(host, options, callback);
    const all = typeof options === 'object' && options !== null && (options as dns.LookupAllOptions).all;
    process.nextTick(() =>
      all ? cb(null, LOCALHOST) : cb(null, LOCALHOST[0]!.address, LOCALHOST[0]!.family),
    );
  }) as typeof dns.lookup;
  dns.promises.lookup = (async (host: string, options?: dns.LookupOptions) => {
    if (host !== 'localhost') return realPromisesLookup(host, options ?? {});
    return options?.all ? LOCALHOST : LOCALHOST[0];
  }) as typeof dns.promises.lookup;
});

after(() => {
  dns.lookup = realLookup;
  dns.promises.lookup = realPromisesLookup;
});

let t: TestServer | undefined;
after(() => t?.close());

/** The answer to an unparseable request on `address`, or null if nothing accepts connections there. */
async function answerOn(address: string, port: number): Promise<RawAnswer | null> {
  const origin = `http://${isIPv6(address) ? `[${address}]` : address}:${port}`;
  // rawRequest fails only where the connection does (readAnswer waits for what comes).
  return rawRequest(origin, 'GET /v1/x HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n').catch(() => null);
}

test('REMESSA_HOST=localhost: every address that accepts a connection answers an unparseable request with the envelope', async () => {
  t = await startTestServer({ env: { REMESSA_HOST: 'localhost' } });
  const port = Number(new URL(t.origin).port);
  let served = 0;
  for (const { address } of LOCALHOST) {
    const answer = await answerOn(address, port);
    if (!answer) continue;
    served++;
    assert.equal(answer.status, 400, `${address}: ${answer.head}`);
    assert.deepEqual(errorKeys(answer.json), ERROR_KEYS, `${address}: ${answer.body}`);
  }
  assert.ok(served >= 1, 'served on no address of localhost');
});
