// Upload requests, the requester's side (docs/requests.md): create one (its links, and each invited
// address's invitation through the outbox, in one transaction), list, show with what arrived, close.
// The admin API lists all and closes any through the same methods. The outsider's side is
// request-intake.ts; the requester's message per batch request-batches.ts.

import { randomBytes } from 'node:crypto';
import type { Config, Lang } from '../../app/config.js';
import type { Clock } from '../../platform/clock.js';
import { notFound } from '../../platform/errors.js';
import { type Keys, randomToken } from '../../platform/security/keys.js';
import type { Db } from '../../platform/sql/database.js';
import type { RequestLinkRow, UploadRequestRow, UserRow } from '../../platform/sql/schema.js';
import { inTransaction } from '../../platform/sql/transaction.js';
import { isoOrNull as iso } from '../../platform/time.js';
import type { AuditLog } from '../audit/audit-log.js';
import type { FileService } from '../files/file-service.js';
import type { NotificationService } from '../notify/notification-service.js';
import { formatDateTime } from '../notify/templates.js';
import type { UserService } from '../users/user-service.js';
import { isLang } from '../users/validation.js';
import { type RequestInput, requestSpec } from './request-spec.js';
import type { ArrivedFile, RequestStore } from './request-store.js';

/** How many requests a list shows (newest first). */
export const REQUEST_LIST_MAX = 200;

export interface RequestDeps {
  db: Db;
  store: RequestStore;
  files: Pick<FileService, 'destination'>;
  users: Pick<UserService, 'byId'>;
  notify: NotificationService;
  audit: AuditLog;
  keys: Keys;
  clock: Clock;
  config: Pick<Config, 'baseUrl' | 'portalPath' | 'lang' | 'maxFileSize' | 'linkDays'>;
}

/** A request as the API shows it. */
export interface RequestView {
  id: string;
  title: string;
  message: string;
  user: string;
  area: string;
  created: string;
  expires: string;
  reusable: boolean;
  state: 'open' | 'closed' | 'expired';
  closed: string | null;
  closedReason: string | null;
  limits: { maxFiles: number; maxFileBytes: number; maxTotalBytes: number };
  received: { files: number; bytes: number };
  left: { files: number; bytes: number };
  links: { to: string | null; url: string }[];
}

export interface RequestDetail extends RequestView {
  files: { id: number; name: string; length: number; from: string | null; time: string }[];
}

/** Who acts on a request: its requester, or an admin (named in the audit row). */
export interface RequestActor {
  user: UserRow;
  admin: boolean;
  remote: string | null;
}

/** The page an outsider opens: the portal's, beside the API (docs/requests.md). */
export function requestPageUrl(config: Pick<Config, 'baseUrl' | 'portalPath'>, token: string): string {
  return `${new URL(config.baseUrl).origin}${config.portalPath}request?t=${token}`;
}

export class RequestService {
  constructor(private readonly d: RequestDeps) {}

  /** A new request: its links (and the invitations) in one transaction; nothing when refused. */
  async create(user: UserRow, input: RequestInput, remote: string | null): Promise<RequestView> {
    const { clock, store, config } = this.d;
    const now = clock.now();
    const spec = requestSpec(input, now, config);
    const owner = await this.d.files.destination(user, spec.d);
    const id = randomBytes(8).toString('hex');
    const lang = this.langOf(user);
    const row = await inTransaction(this.d.db, async (trx) => {
      const made = await store.insert(trx, {
        id,
        user_id: user.id,
        owner_id: owner.id,
        title: spec.title,
        message: spec.message,
        max_files: spec.maxFiles,
        max_file_bytes: spec.maxFileBytes,
        max_total_bytes: spec.maxTotalBytes,
        reusable: spec.reusable ? 1 : 0,
        created_at: now,
        expires_at: spec.expiresAt,
      });
      const invited = [
        ...spec.emails.map((e) => ({ email: e, mobile: null })),
        ...spec.mobiles.map((m) => ({ email: null, mobile: m })),
      ];
      for (const who of invited.length > 0 ? invited : [{ email: null, mobile: null }]) {
        const token = randomToken();
        const link = await store.insertLink(trx, {
          requestId: id,
          tokenHash: this.d.keys.hmac(token),
          tokenSealed: this.d.keys.seal(token),
          ...who,
          createdAt: now,
        });
        if (who.email || who.mobile) await this.invite(trx, made, link, token, user, lang);
      }
      const detail = { request: id, title: spec.title, area: owner.name, invited: invited.length };
      await this.d.audit.record({ event: 'request.created', user: user.name, remote, detail }, trx);
      return made;
    });
    this.d.notify.kick();
    return this.view(row);
  }

  /** The caller's requests (all of them for `null`: the admin API), newest first. */
  async list(user: UserRow | null): Promise<RequestView[]> {
    const rows = await this.d.store.list(user?.id ?? null, REQUEST_LIST_MAX);
    const links = await this.d.store.linksOf(rows.map((r) => r.id));
    return Promise.all(
      rows.map((r) =>
        this.view(
          r,
          links.filter((l) => l.request_id === r.id),
        ),
      ),
    );
  }

  /** One request with what arrived; another user's is as unknown as a missing one (404). */
  async show(user: UserRow, id: string): Promise<RequestDetail> {
    const row = await this.mine(user, id);
    const arrived = await this.d.store.arrived(row.id);
    return { ...(await this.view(row)), files: arrived.map(fileView) };
  }

  /**
   * Closes a request (its requester's, or any for an admin): afterwards its page and every upload
   * answer 410. Closing a closed one changes nothing and answers it as it is.
   */
  async close(actor: RequestActor, id: string): Promise<RequestView> {
    const row = actor.admin ? await this.d.store.byId(id) : await this.mine(actor.user, id);
    if (!row) throw notFound('no such request');
    await inTransaction(this.d.db, (trx) =>
      this.closeWith(trx, row, actor.admin ? 'admin' : 'closed', {
        actor: actor.admin ? actor.user.name : null,
        remote: actor.remote,
      }),
    );
    return this.view((await this.d.store.byId(id))!);
  }

  /**
   * Closes `row` in `trx` once (racing closers: the first); records `request.closed` and
   * `request.completed` with the reason. Used by close(), by a full request and by a one-use
   * request's first batch.
   */
  async closeWith(
    trx: Db,
    row: UploadRequestRow,
    reason: string,
    who: { actor: string | null; remote: string | null },
  ): Promise<boolean> {
    const now = this.d.clock.now();
    if (!(await this.d.store.close(trx, row.id, now, reason))) return false;
    const requester = await this.d.store.account(trx, row.user_id);
    const user = requester?.name ?? null;
    const after = (await this.d.store.byId(row.id, trx))!;
    const detail = {
      request: row.id,
      title: row.title,
      reason,
      files: after.received_files,
      bytes: after.received_bytes,
    };
    await this.d.audit.record(
      { event: 'request.closed', user, actor: who.actor, remote: who.remote, detail },
      trx,
    );
    await this.d.audit.record({ event: 'request.completed', user, detail }, trx);
    return true;
  }

  private async mine(user: UserRow, id: string): Promise<UploadRequestRow> {
    const row = id.length <= 64 ? await this.d.store.byId(id) : undefined;
    if (!row || row.user_id !== user.id) throw notFound('no such request');
    return row;
  }

  private async invite(
    trx: Db,
    request: UploadRequestRow,
    link: RequestLinkRow,
    token: string,
    requester: UserRow,
    lang: Lang,
  ): Promise<void> {
    const to = (link.recipient_email ?? link.recipient_mobile)!;
    await this.d.notify.enqueue(trx, {
      channel: link.recipient_email ? 'email' : 'sms',
      recipient: to,
      lang,
      kind: 'request-invite',
      userName: requester.name,
      vars: {
        requester: requester.name,
        title: request.title,
        message: request.message,
        expires: formatDateTime(request.expires_at, lang),
        link: requestPageUrl(this.d.config, token),
      },
    });
  }

  private langOf(user: UserRow | undefined): Lang {
    return user && isLang(user.lang) ? user.lang : this.d.config.lang;
  }

  /** The API's view of a request, its links' addresses included (the requester may pass them on). */
  async view(row: UploadRequestRow, links?: RequestLinkRow[]): Promise<RequestView> {
    const now = this.d.clock.now();
    const [requester, area] = await Promise.all([
      this.d.users.byId(row.user_id),
      row.owner_id === row.user_id ? undefined : this.d.users.byId(row.owner_id),
    ]);
    const own = links ?? (await this.d.store.linksOf([row.id]));
    const state = row.closed_at !== null ? 'closed' : row.expires_at <= now ? 'expired' : 'open';
    return {
      id: row.id,
      title: row.title,
      message: row.message,
      user: requester?.name ?? '',
      area: (row.owner_id === row.user_id ? requester : area)?.name ?? '',
      created: iso(row.created_at)!,
      expires: iso(row.expires_at)!,
      reusable: row.reusable === 1,
      state,
      closed: iso(row.closed_at),
      closedReason: row.closed_reason,
      limits: {
        maxFiles: row.max_files,
        maxFileBytes: row.max_file_bytes,
        maxTotalBytes: row.max_total_bytes,
      },
      received: { files: row.received_files, bytes: row.received_bytes },
      left: leftOf(row),
      links: own.map((l) => ({
        to: l.recipient_email ?? l.recipient_mobile ?? null,
        url: requestPageUrl(this.d.config, this.d.keys.unseal(l.token_sealed)),
      })),
    };
  }
}

/** What a request may still take: its limits less what is reserved (in progress or stored). */
export function leftOf(row: UploadRequestRow): { files: number; bytes: number } {
  return {
    files: Math.max(0, row.max_files - row.reserved_files),
    bytes: Math.max(0, row.max_total_bytes - row.reserved_bytes),
  };
}

function fileView(f: ArrivedFile) {
  return { id: f.id, name: f.name, length: f.length, from: f.from, time: new Date(f.time).toISOString() };
}
