// Webhook signatures, the scheme Stripe and others use:
//   Remessa-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>
// The timestamp is signed with the body, so a receiver that refuses timestamps older than five
// minutes cannot be fed a recorded delivery later. Each attempt is signed afresh.
import { createHmac, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_HEADER = 'Remessa-Signature';
/** What docs/webhooks.md tells receivers to allow. */
export const TOLERANCE_SECONDS = 300;

export function signatureHeader(secret: string, body: string, unixSeconds: number): string {
  const mac = createHmac('sha256', secret).update(`${unixSeconds}.${body}`).digest('hex');
  return `t=${unixSeconds},v1=${mac}`;
}

/**
 * The receiver's side, as documented: true when some v1 signature in `header` matches `body` and
 * the timestamp is within `toleranceSeconds` of `nowSeconds`.
 */
export function verifySignature(
  secret: string,
  header: string,
  body: string,
  nowSeconds: number,
  toleranceSeconds = TOLERANCE_SECONDS,
): boolean {
  const parts = header.split(',').map((p) => p.trim().split('=', 2) as [string, string | undefined]);
  const t = Number(parts.find(([k]) => k === 't')?.[1]);
  if (!Number.isInteger(t) || Math.abs(nowSeconds - t) > toleranceSeconds) return false;
  const expected = createHmac('sha256', secret).update(`${t}.${body}`).digest();
  return parts.some(([k, v]) => {
    if (k !== 'v1' || !v || !/^[0-9a-f]{64}$/.test(v)) return false;
    return timingSafeEqual(Buffer.from(v, 'hex'), expected);
  });
}
