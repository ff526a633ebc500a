// Where a webhook may point. By default not at loopback, link-local, private or other
// special-purpose addresses: a user's subscription must not become a way to reach the server's
// own network (SSRF). The check runs twice: on the URL when a subscription is made (literal
// addresses, "localhost"), and on every address DNS gives at delivery time, through the `lookup`
// the connection itself uses, so a name that later resolves inward (DNS rebinding) is refused too.
// REMESSA_WEBHOOK_ALLOW_PRIVATE=true lifts the address rule (on-premise receivers, tests).
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { invalid } from '../../platform/errors.js';

const blocked = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15], // benchmarking
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  blocked.addSubnet(net, prefix, 'ipv4');
}
for (const [net, prefix] of [
  // IPv4-compatible (deprecated), with "::" and "::1": ::7f00:1 is 127.0.0.1 to some stacks.
  ['::', 96],
  ['::ffff:0:0:0', 96], // IPv4-translated (SIIT)
  ['100::', 64], // discard-only
  ['2001::', 32], // Teredo: the IPv4 server and client are inside the address
  ['2001:db8::', 32], // documentation
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
  ['64:ff9b::', 96], // NAT64 can reach any IPv4 address, private ones included
  ['64:ff9b:1::', 48], // local-use NAT64, likewise
  ['2002::', 16], // 6to4, likewise
] as const) {
  blocked.addSubnet(net, prefix, 'ipv6');
}

/** True for an address a webhook may not reach unless private targets are allowed. */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return blocked.check(address, 'ipv4');
  if (family === 6) {
    const words = ipv6Words(address);
    if (!words) return true;
    // IPv4-mapped (::ffff:a.b.c.d, in any spelling): the IPv4 address is the one reached.
    if (words.slice(0, 5).every((w) => w === 0) && words[5] === 0xffff) {
      const v4 = [words[6]! >> 8, words[6]! & 255, words[7]! >> 8, words[7]! & 255].join('.');
      return blocked.check(v4, 'ipv4');
    }
    return blocked.check(address, 'ipv6');
  }
  return true; // not an address at all: refuse
}

/** The eight 16-bit words of an IPv6 address (with or without a dotted IPv4 tail or a zone). */
function ipv6Words(address: string): number[] | undefined {
  let text = address.replace(/%.*$/, '').toLowerCase();
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const part = (s: string | undefined) => (s ? s.split(':').map((w) => Number.parseInt(w, 16)) : []);
  const left = part(head);
  const right = part(tail);
  const words =
    tail === undefined ? left : [...left, ...Array(8 - left.length - right.length).fill(0), ...right];
  return words.length === 8 && words.every((w) => Number.isInteger(w) && w >= 0 && w <= 0xffff)
    ? words
    : undefined;
}

export const MAX_URL_LENGTH = 2000;

/**
 * Validates a webhook URL as given by a user or the operator; returns it normalised. http or
 * https only, no user:password part (secrets belong in the signing secret, not in a URL that is
 * listed and logged), no fragment, and no private target unless allowed. Throws an invalid DomainError.
 */
export function checkWebhookUrl(raw: string, allowPrivate: boolean): string {
  if (raw.length > MAX_URL_LENGTH) throw invalid(`url: longer than ${MAX_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalid('url: not an absolute URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalid('url: must be http or https');
  if (url.username || url.password) throw invalid('url: must not carry a user name or password');
  if (url.hash) throw invalid('url: must not have a fragment');
  if (!allowPrivate) {
    const host = url.hostname
      .replace(/^\[|\]$/g, '')
      .replace(/\.$/, '')
      .toLowerCase();
    if (host === 'localhost' || host.endsWith('.localhost') || (isIP(host) && isPrivateAddress(host))) {
      throw invalid(
        'url: loopback, link-local and private addresses are refused (REMESSA_WEBHOOK_ALLOW_PRIVATE)',
      );
    }
  }
  return url.toString();
}

/** The error a refused address becomes at delivery time (never retried: the answer will not change). */
export class PrivateAddressError extends Error {
  readonly code = 'EWEBHOOKPRIVATE';
}

/** A `lookup` for http.request that refuses private addresses (used unless they are allowed). */
export const publicOnlyLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, '', 0);
    const list = addresses as LookupAddress[];
    const bad = list.find((a) => isPrivateAddress(a.address));
    if (bad || list.length === 0) {
      return callback(
        new PrivateAddressError(`${hostname} resolves to ${bad?.address ?? 'nothing'}: a refused address`),
        '',
        0,
      );
    }
    if ((options as { all?: boolean }).all) {
      return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, list);
    }
    callback(null, list[0]!.address, list[0]!.family);
  });
};
