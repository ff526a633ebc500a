// The outbox transport of channel 'webhook': POSTs one event body, signed, to the
// subscription the outbox row names ('webhook:global' or 'webhook:<id>'). Bounded: 10 s for the
// whole exchange, at most 64 KiB of answer read, no redirect followed, no private address reached
// unless allowed (url-safety.ts). A 2xx is success; 410 Gone disables the subscription and ends
// the event's delivery; anything else is retried by the outbox with backoff. The URL and the
// secret are never logged or put in an error (a URL may carry a token of the receiver's own).
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import type { Clock } from '../../platform/clock.js';
import type { Keys } from '../../platform/security/keys.js';
import { type OutgoingMessage, PermanentFailure, type Transport } from '../notify/transports.js';
import { SIGNATURE_HEADER, signatureHeader } from './signature.js';
import { isPrivateAddress, PrivateAddressError, publicOnlyLookup } from './url-safety.js';
import type { WebhookStore } from './webhook-store.js';

const TIMEOUT_MS = 10_000;
const MAX_RESPONSE_BYTES = 64 * 1024;
export const GLOBAL_TARGET = 'webhook:global';

export interface WebhookTarget {
  url: string;
  secret: string;
}

export interface WebhookTransportOptions {
  global: WebhookTarget | null;
  allowPrivate: boolean;
}

export class WebhookTransport implements Transport {
  readonly name = 'webhook';

  constructor(
    private readonly store: WebhookStore,
    private readonly keys: Keys,
    private readonly clock: Clock,
    private readonly opts: WebhookTransportOptions,
  ) {}

  async send(message: OutgoingMessage): Promise<void> {
    const target = await this.target(message.to);
    const event = JSON.parse(message.text) as { id: string; type: string };
    const status = await this.post(target, message.text, event);
    if (status >= 200 && status < 300) return;
    if (status === 410) {
      const id = subscriptionId(message.to);
      if (id !== null) await this.store.disable(id, 'receiver answered 410 Gone');
      throw new PermanentFailure(
        `receiver answered HTTP 410 Gone; ${id !== null ? 'subscription disabled' : 'REMESSA_WEBHOOK_URL should be removed'}`,
      );
    }
    if (status >= 300 && status < 400)
      throw new Error(`receiver answered HTTP ${status} (redirects are not followed)`);
    throw new Error(`receiver answered HTTP ${status}`);
  }

  private async target(to: string): Promise<WebhookTarget> {
    if (to === GLOBAL_TARGET) {
      if (!this.opts.global) throw new PermanentFailure('REMESSA_WEBHOOK_URL is no longer set');
      return this.opts.global;
    }
    const id = subscriptionId(to);
    const row = id === null ? undefined : await this.store.byId(id);
    if (!row) throw new PermanentFailure('subscription removed');
    if (!row.enabled)
      throw new PermanentFailure(`subscription disabled: ${row.disabled_reason ?? ''}`.trim());
    return { url: row.url, secret: this.keys.unseal(row.secret_sealed) };
  }

  private post(target: WebhookTarget, body: string, event: { id: string; type: string }): Promise<number> {
    const url = new URL(target.url);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (!this.opts.allowPrivate && isIP(host) && isPrivateAddress(host)) {
      // A literal address never goes through `lookup`; the setting may have changed since.
      return Promise.reject(new PermanentFailure('the URL points at a refused address'));
    }
    const t = Math.floor(this.clock.now() / 1000);
    const request = url.protocol === 'https:' ? https.request : http.request;
    return new Promise<number>((resolve, reject) => {
      const req = request(url, {
        method: 'POST',
        lookup: this.opts.allowPrivate ? undefined : publicOnlyLookup,
        headers: {
          'Content-Type': 'application/json',
          'Content-Length': Buffer.byteLength(body),
          'User-Agent': 'Remessa-Webhooks/1',
          'Remessa-Event-Id': event.id,
          'Remessa-Event-Type': event.type,
          [SIGNATURE_HEADER]: signatureHeader(target.secret, body, t),
        },
        timeout: TIMEOUT_MS,
      });
      const timer = setTimeout(
        () => req.destroy(new Error(`no answer within ${TIMEOUT_MS / 1000} s`)),
        TIMEOUT_MS,
      );
      const done = (fn: () => void) => {
        clearTimeout(timer);
        fn();
      };
      req.on('timeout', () => req.destroy(new Error(`no answer within ${TIMEOUT_MS / 1000} s`)));
      req.on('error', (err) =>
        done(() => reject(err instanceof PrivateAddressError ? new PermanentFailure(err.message) : err)),
      );
      req.on('response', (res) => {
        // The status is all that counts; read a bounded amount so the connection can close cleanly.
        let read = 0;
        res.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (read > MAX_RESPONSE_BYTES) res.destroy();
        });
        const status = res.statusCode ?? 0;
        res.on('end', () => done(() => resolve(status)));
        res.on('close', () => done(() => resolve(status)));
        res.on('error', () => done(() => resolve(status)));
      });
      req.end(body);
    });
  }

  close(): void {}
}

function subscriptionId(to: string): number | null {
  const m = /^webhook:(\d+)$/.exec(to);
  return m ? Number(m[1]) : null;
}
