// Upload requests, the outsider's side (docs/requests.md): the page's facts (GET {base}/requests/open),
// the PIN of an invited link (POST {base}/requests/pin, the PIN life cycle of secure links) and the
// gate of resumable uploads made with `request <token>` (uploads/request-gate.ts): admission,
// the reservation of the request's limits, and the bookkeeping when a file is stored or released.
// A closed or expired request is read as such on every request, on every instance: 410.

import type { Config, Lang } from '../../app/config.js';
import type { Clock } from '../../platform/clock.js';
import {
  conflict,
  forbidden,
  gone,
  invalid,
  tooLarge,
  tooMany,
  unauthorized,
} from '../../platform/errors.js';
import type { Keys } from '../../platform/security/keys.js';
import { PinLifecycle, PinPolicy } from '../../platform/security/pins.js';
import type { RateCounter } from '../../platform/security/rate-counter.js';
import type { Db } from '../../platform/sql/database.js';
import type { RequestLinkRow, UploadRequestRow, UserRow } from '../../platform/sql/schema.js';
import type { AuditLog } from '../audit/audit-log.js';
import type { NotificationService } from '../notify/notification-service.js';
import { formatDuration } from '../notify/templates.js';
import type { Admission, RequestGate } from '../uploads/request-gate.js';
import type { UserService } from '../users/user-service.js';
import { isLang } from '../users/validation.js';
import { leftOf, type RequestService } from './request-service.js';
import type { RequestStore } from './request-store.js';

/** Per request and per address, a minute's worth (docs/requests.md, "Abuse"). */
export const REQUEST_RATES = {
  openPerRequest: 300,
  uploadsPerRequest: 120,
  uploadsPerAddress: 60,
};
const MINUTE = 60_000;
const PIN_FAILURES = 5;
const LOCK_SECONDS = 15 * 60;
const RESEND_SECONDS = 60;

export const requestClosed = () => gone('request closed');

/** What the outsider's page shows. */
export interface RequestPage {
  title: string;
  message: string;
  requester: string;
  expires: string;
  limits: { maxFiles: number; maxFileBytes: number; maxTotalBytes: number };
  left: { files: number; bytes: number };
  pin: boolean;
  lang: Lang;
}

export interface IntakeDeps {
  store: RequestStore;
  requests: RequestService;
  users: Pick<UserService, 'byId'>;
  notify: NotificationService;
  audit: AuditLog;
  rates: RateCounter;
  keys: Keys;
  clock: Clock;
  db: Db;
  config: Pick<Config, 'lang' | 'pinSeconds'>;
}

export class RequestIntake implements RequestGate {
  private readonly pins: PinLifecycle;

  constructor(private readonly d: IntakeDeps) {
    const { store } = d;
    this.pins = new PinLifecycle({
      db: d.db,
      policy: new PinPolicy(d.keys, d.config.pinSeconds, RESEND_SECONDS),
      maxFailures: PIN_FAILURES,
      rows: {
        ...store.pinWrites,
        clearFailures: (id) => store.clearPinFailures(id),
        lock: (id, now, max) => store.lockAfterPinFailures(id, now + LOCK_SECONDS * 1000, max),
      },
    });
  }

  /** GET {base}/requests/open?t=: what the page shows; no side effect but a rate count. */
  async page(token: string | undefined): Promise<RequestPage> {
    const { request, link } = await this.resolveOpen(token);
    await this.limit(`request-open:${request.id}`, REQUEST_RATES.openPerRequest);
    const requester = await this.d.users.byId(request.user_id);
    return {
      title: request.title,
      message: request.message,
      requester: requester?.name ?? '',
      expires: new Date(request.expires_at).toISOString(),
      limits: {
        maxFiles: request.max_files,
        maxFileBytes: request.max_file_bytes,
        maxTotalBytes: request.max_total_bytes,
      },
      left: leftOf(request),
      pin: invited(link),
      lang: this.langOf(requester),
    };
  }

  /** POST {base}/requests/pin?t=: a fresh PIN to the invited address, at most one a minute. */
  async sendPin(token: string | undefined, lang: string | undefined, remote: string | null): Promise<void> {
    const { request, link } = await this.resolveOpen(token);
    if (!invited(link)) throw invalid('this link needs no PIN');
    const now = this.d.clock.now();
    if (link.locked_until > now) throw forbidden('link locked after wrong PINs: try again later');
    this.pins.checkSlot(link, now);
    const requester = await this.d.users.byId(request.user_id);
    const language = lang && isLang(lang) ? lang : this.langOf(requester);
    const channel = link.recipient_email ? 'email' : 'sms';
    const to = (link.recipient_email ?? link.recipient_mobile)!;
    await this.pins.send(link, now, async (trx, pin) => {
      await this.d.notify.enqueue(trx, {
        channel,
        recipient: to,
        lang: language,
        kind: 'request-pin',
        userName: requester?.name ?? null,
        vars: { title: request.title, pin, pinValidity: formatDuration(this.d.config.pinSeconds, language) },
      });
      const detail = { request: request.id, requestLink: link.id, channel, to };
      await this.d.audit.record({ event: 'pin.sent', user: to, remote, detail }, trx);
    });
    this.d.notify.kick();
  }

  async admit(
    token: string,
    pin: string | undefined,
    length: number,
    remote: string | null,
  ): Promise<Admission> {
    const { request, link } = await this.resolveOpen(token);
    await this.limit(`request-upload:${request.id}`, REQUEST_RATES.uploadsPerRequest);
    if (remote) await this.limit(`request-upload-ip:${remote}`, REQUEST_RATES.uploadsPerAddress);
    if (length > request.max_file_bytes)
      throw tooLarge(`file larger than ${request.max_file_bytes} bytes (this request's limit)`);
    if (invited(link)) await this.checkPin(request, link, pin, remote);
    return { requestId: request.id, linkId: link.id, uploaderId: request.user_id, ownerId: request.owner_id };
  }

  async reserve(trx: Db, a: Admission, uploadId: string, length: number): Promise<void> {
    const { store, clock } = this.d;
    const now = clock.now();
    if (!(await store.reserve(trx, a.requestId, length, now))) {
      const r = (await store.byId(a.requestId, trx))!;
      if (r.closed_at !== null || r.expires_at <= now) throw requestClosed();
      if (r.reserved_files >= r.max_files)
        throw conflict(`request full: it takes at most ${r.max_files} files`);
      throw tooLarge(`request limit: ${leftOf(r).bytes} of ${r.max_total_bytes} bytes left`);
    }
    const batchId = await store.joinBatch(trx, a.requestId, a.linkId, now);
    await store.insertUpload(trx, {
      upload_id: uploadId,
      request_id: a.requestId,
      link_id: a.linkId,
      batch_id: batchId,
      length,
    });
  }

  async check(uploadId: string): Promise<boolean> {
    const u = await this.d.store.uploadOf(uploadId);
    if (!u) return false;
    if (u.state !== 'open') return true;
    const r = await this.d.store.byId(u.request_id);
    if (!r || !isOpen(r, this.d.clock.now())) throw requestClosed();
    return true;
  }

  async stored(trx: Db, uploadId: string, fileId: number): Promise<void> {
    const { store, clock } = this.d;
    const u = await store.uploadOf(uploadId, trx);
    if (!u || !(await store.endUpload(trx, uploadId, 'done'))) return;
    const now = clock.now();
    // A batch sealed meanwhile (an upload stalled past the longest wait) has had its message: the
    // file starts the link's next batch.
    let batchId = u.batch_id;
    if (await store.batchSealed(trx, u.batch_id)) {
      await store.leaveBatch(trx, u.batch_id, false, now);
      batchId = await store.joinBatch(trx, u.request_id, u.link_id, now);
      await store.moveUpload(trx, uploadId, batchId);
    }
    await store.leaveBatch(trx, batchId, true, now);
    const request = await store.received(trx, u.request_id, u.length);
    const link = await store.linkById(u.link_id, trx);
    const from = link?.recipient_email ?? link?.recipient_mobile ?? null;
    await store.markOrigin(trx, fileId, u.request_id, from);
    const requester = await store.account(trx, request.user_id);
    await this.d.audit.record(
      {
        event: 'request.file_received',
        user: requester?.name ?? null,
        fileId,
        detail: { request: request.id, title: request.title, from, bytes: u.length },
      },
      trx,
    );
    const full =
      request.received_files >= request.max_files || request.received_bytes >= request.max_total_bytes;
    if (full) await this.d.requests.closeWith(trx, request, 'full', { actor: null, remote: null });
  }

  async released(trx: Db, uploadId: string): Promise<void> {
    const { store, clock } = this.d;
    const u = await store.uploadOf(uploadId, trx);
    if (!u || !(await store.endUpload(trx, uploadId, 'released'))) return;
    await store.unreserve(trx, u.request_id, u.length);
    await store.leaveBatch(trx, u.batch_id, false, clock.now());
  }

  /** The link and its request, open: unknown → 401, closed or expired → 410. */
  private async resolveOpen(
    token: string | undefined,
  ): Promise<{ request: UploadRequestRow; link: RequestLinkRow }> {
    if (token === undefined || token === '') throw invalid('t: the request link is missing');
    const link =
      token.length <= 128 ? await this.d.store.linkByTokenHash(this.d.keys.hmac(token)) : undefined;
    const request = link ? await this.d.store.byId(link.request_id) : undefined;
    if (!link || !request) throw unauthorized('invalid request link');
    if (!isOpen(request, this.d.clock.now())) throw requestClosed();
    return { request, link };
  }

  private async checkPin(
    request: UploadRequestRow,
    link: RequestLinkRow,
    pin: string | undefined,
    remote: string | null,
  ): Promise<void> {
    const now = this.d.clock.now();
    if (link.locked_until > now) throw forbidden('link locked after wrong PINs: try again later');
    if (pin === undefined || pin === '') throw forbidden('PIN required: ask for one with POST /requests/pin');
    const who = link.recipient_email ?? link.recipient_mobile;
    const verdict = await this.pins.verify(link, pin, now);
    if (verdict.result === 'match') return;
    const base = { user: who, remote };
    const detail = { request: request.id, requestLink: link.id };
    if (verdict.result !== 'wrong') {
      const reason = verdict.result === 'expired' ? 'PIN expired' : 'no PIN sent';
      await this.d.audit.record({ ...base, event: 'pin.failed', detail: { ...detail, reason } });
      throw forbidden('PIN expired: ask for a new one');
    }
    // One row per wrong PIN; the one that locked the link says so.
    const { failures, locked } = verdict;
    await this.d.audit.record({
      ...base,
      event: 'pin.failed',
      detail: { ...detail, reason: 'wrong PIN', failures, ...(locked ? { locked: LOCK_SECONDS } : {}) },
    });
    throw forbidden('wrong PIN');
  }

  private async limit(key: string, max: number): Promise<void> {
    const { count, ttl } = await this.d.rates.hit(key, MINUTE);
    if (count > max) {
      const wait = Math.max(1, Math.ceil(ttl / 1000));
      throw tooMany(`rate limit: retry in ${wait}s`, wait);
    }
  }

  private langOf(user: UserRow | undefined): Lang {
    return user && isLang(user.lang) ? user.lang : this.d.config.lang;
  }
}

const invited = (link: RequestLinkRow) => link.recipient_email !== null || link.recipient_mobile !== null;
const isOpen = (r: UploadRequestRow, now: number) => r.closed_at === null && r.expires_at > now;
