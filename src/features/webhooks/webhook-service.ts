// Webhooks (docs/webhooks.md): subscriptions, and the making of events. Events are made from the audit
// rows the domain already writes (an AuditLog tap), with the same database handle, so an event
// commits or rolls back with the rows it reports (the upload's files and links, an outbox status…)
// and nothing in the domain calls this module. Each event becomes one outbox row per
// subscriber (channel 'webhook'); the outbox delivers them with leases (once per instance set),
// retries with backoff and keeps them in order per subscriber and file (outbox-delivery.ts).
// A user's subscriptions get the events about files they own or uploaded and about themselves;
// REMESSA_WEBHOOK_URL gets every event.

import { type Config, ConfigError } from '../../app/config.js';
import type { Clock } from '../../platform/clock.js';
import { conflict, DomainError, invalid, notFound } from '../../platform/errors.js';
import { type Keys, randomToken } from '../../platform/security/keys.js';
import type { Db } from '../../platform/sql/database.js';
import type { FileRow, UserRow, WebhookRow } from '../../platform/sql/schema.js';
import type { AuditEntry } from '../audit/audit-log.js';
import type { LinkStore } from '../links/link-store.js';
import type { NotificationService } from '../notify/notification-service.js';
import { maskAddress } from '../users/validation.js';
import {
  EVENT_OF_AUDIT,
  EVENT_TYPES,
  EVENT_VERSION,
  type EventType,
  fileOf,
  isEventType,
  linkOf,
  type WebhookEvent,
} from './events.js';
import { checkWebhookUrl } from './url-safety.js';
import type { WebhookStore } from './webhook-store.js';
import { GLOBAL_TARGET } from './webhook-transport.js';

/** Bounds the fan-out one user can cause. */
export const MAX_WEBHOOKS_PER_USER = 20;

/** A subscription as the API and the CLI show it (never its secret). */
export interface WebhookView {
  id: number;
  userId: number;
  url: string;
  events: string[];
  enabled: boolean;
  disabledReason: string | null;
  created: string;
}

export interface WebhookDeps {
  store: WebhookStore;
  notify: NotificationService;
  keys: Keys;
  clock: Clock;
  config: Pick<Config, 'webhookUrl' | 'webhookAllowPrivate'>;
  links: LinkStore;
}

export class WebhookService {
  private readonly store: WebhookStore;
  private readonly notify: NotificationService;
  private readonly keys: Keys;
  private readonly clock: Clock;
  private readonly config: WebhookDeps['config'];
  private readonly links: LinkStore;
  /** subscribedTo()'s answers, per transaction (gone with it). */
  private readonly answers = new WeakMap<Db, Map<string, Promise<unknown>>>();

  constructor(deps: WebhookDeps) {
    ({
      store: this.store,
      notify: this.notify,
      keys: this.keys,
      clock: this.clock,
      config: this.config,
      links: this.links,
    } = deps);
    const { config } = deps;
    if (config.webhookUrl) {
      try {
        checkWebhookUrl(config.webhookUrl, config.webhookAllowPrivate);
      } catch (err) {
        throw new ConfigError(
          `REMESSA_WEBHOOK_URL: ${err instanceof DomainError ? err.detail : String(err)}`,
        );
      }
    }
  }

  /** A new subscription for `user`; the signing secret is returned this once. */
  async add(
    user: UserRow,
    url: string,
    events: string | string[] | undefined,
  ): Promise<{ webhook: WebhookView; secret: string }> {
    const checked = checkWebhookUrl(url, this.config.webhookAllowPrivate);
    const list = parseEvents(events);
    if ((await this.store.countOf(user.id)) >= MAX_WEBHOOKS_PER_USER) {
      throw conflict(`at most ${MAX_WEBHOOKS_PER_USER} webhooks per user`);
    }
    const secret = `whsec_${randomToken()}`;
    const row = await this.store.insert({
      userId: user.id,
      url: checked,
      secretSealed: this.keys.seal(secret),
      events: list.length === EVENT_TYPES.length ? '*' : list.join(','),
      createdAt: this.clock.now(),
    });
    return { webhook: viewOf(row), secret };
  }

  async list(user?: UserRow): Promise<WebhookView[]> {
    return (await this.store.list(user?.id)).map(viewOf);
  }

  /** Removes one subscription (of `user` only, when given); 404 when there is none. */
  async remove(id: number, user?: UserRow): Promise<void> {
    if (!(await this.store.remove(id, user?.id))) throw notFound(`no webhook ${id}`);
  }

  /** AuditLog tap: turns the audit rows that are events into outbox rows, in the same transaction. */
  async onAudit(db: Db, entry: AuditEntry, at: number): Promise<void> {
    const type = EVENT_OF_AUDIT[entry.event];
    if (!type) return;
    const detail = (typeof entry.detail === 'object' && entry.detail) || {};
    // A webhook delivery's own outcome is not an event (it would feed itself).
    if (entry.event.startsWith('notify.') && detail['channel'] === 'webhook') return;
    // Who hears of it first (one query), the rest only when someone does.
    const subscribed = await this.subscribedTo(db, entry);
    const targets = [
      ...(this.config.webhookUrl ? [GLOBAL_TARGET] : []),
      ...subscribed
        .filter((w) => w.events === '*' || w.events.split(',').includes(type))
        .map((w) => `webhook:${w.id}`),
    ];
    if (targets.length === 0) return;
    const file = entry.fileId
      ? await db.selectFrom('files').selectAll().where('id', '=', entry.fileId).executeTakeFirst()
      : undefined;
    const user =
      !file && entry.user
        ? await db
            .selectFrom('users')
            .select(['id', 'name'])
            .where('name_key', '=', entry.user.toLowerCase())
            .executeTakeFirst()
        : undefined;
    const event: WebhookEvent = {
      id: `evt_${randomToken().slice(0, 24)}`,
      type,
      version: EVENT_VERSION,
      created: new Date(at).toISOString(),
      data: await this.dataOf(db, type, detail, file, user?.name ?? entry.user ?? null),
    };
    const text = JSON.stringify(event);
    for (const recipient of targets) {
      await this.notify.enqueueRaw(db, {
        channel: 'webhook',
        recipient,
        kind: type,
        text,
        fileId: file?.id ?? null,
        userName: user?.name ?? null,
      });
    }
  }

  /**
   * The enabled subscriptions that hear of `entry`. Within one transaction (a group commit's batch
   * holds hundreds of download outcomes) each question is asked once: whether any subscription
   * exists at all (mostly not), then per file or user.
   */
  private async subscribedTo(db: Db, entry: AuditEntry): Promise<WebhookRow[]> {
    if (!entry.fileId && !entry.user) return [];
    const ask = this.askOnce(db);
    if (!(await ask('any', () => this.store.anyEnabled(db)))) return [];
    return entry.fileId
      ? ask(`file:${entry.fileId}`, () => this.store.enabledForFile(db, entry.fileId!))
      : ask(`user:${entry.user!.toLowerCase()}`, () => this.store.enabledForUser(db, entry.user!));
  }

  /** Asks each question once per transaction (outside one, every time). */
  private askOnce(db: Db): <T>(question: string, answer: () => Promise<T>) => Promise<T> {
    if (!db.isTransaction) return (_question, answer) => answer();
    let answers = this.answers.get(db);
    if (!answers) {
      answers = new Map<string, Promise<unknown>>();
      this.answers.set(db, answers);
    }
    const known = answers;
    return <T>(question: string, answer: () => Promise<T>) => {
      let answered = known.get(question);
      if (!answered) {
        answered = answer();
        known.set(question, answered);
      }
      return answered as Promise<T>;
    };
  }

  private async dataOf(
    db: Db,
    type: EventType,
    detail: Record<string, unknown>,
    file: FileRow | undefined,
    userName: string | null,
  ): Promise<Record<string, unknown>> {
    const fileData = file ? { file: fileOf(file) } : {};
    const link = async () => {
      const id = Number(detail['link']);
      const row = await this.links.byId(id, db);
      return row ? linkOf(row) : { id };
    };
    switch (type) {
      case 'file.uploaded': {
        const f = file!;
        const names = new Map(
          (
            await db
              .selectFrom('users')
              .select(['id', 'name'])
              .where('id', 'in', [f.owner_id, f.uploader_id])
              .execute()
          ).map((u) => [u.id, u.name]),
        );
        const links = await this.links.recipientLinks([f.id], db);
        return {
          ...fileData,
          uploader: names.get(f.uploader_id) ?? null,
          area: names.get(f.owner_id) ?? null,
          recipients: links.map((l) => {
            const { channel, address } = linkOf(l);
            return { channel, address };
          }),
        };
      }
      case 'file.downloaded': {
        const l = await link();
        return {
          ...fileData,
          link: l,
          by: l['kind'] === 'recipient' ? 'recipient' : 'owner',
          complete: detail['complete'] === true,
          bytes: Number(detail['bytes'] ?? 0),
          ...(typeof detail['range'] === 'string' ? { range: detail['range'] } : {}),
        };
      }
      case 'notification.sent':
      case 'notification.failed': {
        const to = String(detail['to'] ?? '');
        const raw = typeof detail['error'] === 'string' ? detail['error'] : null;
        // An SMTP answer may quote the address: it is masked there too.
        const error = raw && to ? raw.replaceAll(to, maskAddress(to)) : raw;
        return {
          notification: {
            id: detail['outbox'],
            kind: detail['kind'],
            channel: detail['channel'],
            address: maskAddress(to),
            attempts: detail['attempts'],
            ...(type === 'notification.failed' ? { reason: error } : {}),
          },
          ...fileData,
          ...(file ? {} : { user: userName }),
        };
      }
      case 'file.retired':
        return { ...fileData, reason: detail['reason'] ?? null };
      case 'file.purged':
        return fileData;
      case 'link.locked':
        return { ...fileData, link: await link(), seconds: detail['seconds'] ?? null };
      case 'user.locked':
        return { user: userName };
      case 'quota.warning':
        return { user: userName, percent: detail['percent'], usage: detail['usage'], quota: detail['quota'] };
      case 'request.file_received':
      case 'request.completed':
        return requestEventData(type, detail, fileData, userName);
    }
  }
}

/** An upload request's event: the request, and the file that arrived or how it ended. */
function requestEventData(
  type: 'request.file_received' | 'request.completed',
  detail: Record<string, unknown>,
  fileData: Record<string, unknown>,
  userName: string | null,
): Record<string, unknown> {
  const request = { id: detail['request'] ?? null, title: detail['title'] ?? null };
  if (type === 'request.file_received') {
    const from = typeof detail['from'] === 'string' ? maskAddress(detail['from']) : null;
    return { ...fileData, request, from, user: userName };
  }
  const received = { files: detail['files'] ?? 0, bytes: detail['bytes'] ?? 0 };
  return { request: { ...request, received }, reason: detail['reason'] ?? null, user: userName };
}

function parseEvents(events: string | string[] | undefined): EventType[] {
  const items = (Array.isArray(events) ? events : (events ?? '').split(','))
    .map((e) => e.trim())
    .filter(Boolean);
  if (items.length === 0 || items.includes('*')) return [...EVENT_TYPES];
  for (const e of items) {
    if (!isEventType(e)) throw invalid(`events: unknown event "${e}" (known: ${EVENT_TYPES.join(', ')})`);
  }
  return EVENT_TYPES.filter((t) => items.includes(t));
}

function viewOf(row: WebhookRow): WebhookView {
  return {
    id: row.id,
    userId: row.user_id,
    url: row.url,
    events: row.events === '*' ? [...EVENT_TYPES] : row.events.split(','),
    enabled: row.enabled === 1,
    disabledReason: row.disabled_reason,
    created: new Date(row.created_at).toISOString(),
  };
}
