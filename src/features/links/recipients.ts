// Recipients of an upload (docs/notifications.md): query `m` (e-mails) and `c` (mobiles) announce
// every uploaded file; each recipient gets a link of their own (own token, kind 'recipient') and a
// 'file-link' message in the uploader's language. Everything happens inside the upload
// transaction (hook registered with FileService.onUpload): the file rows, the links and the
// outbox rows commit or roll back together. The caller kicks the outbox after the commit.
// Also sends the optional confirmation to the uploader when a recipient downloads
// (REMESSA_NOTIFY_SENDER, hook registered with FileService.onDownload), and sends a recipient's
// message again on the sender's request (rate-limited).

import type { Config, Lang } from '../../app/config.js';
import type { Clock } from '../../platform/clock.js';
import { conflict, notFound, tooMany } from '../../platform/errors.js';
import type { Keys } from '../../platform/security/keys.js';
import type { Db } from '../../platform/sql/database.js';
import type { FileRow, LinkRow, UserRow } from '../../platform/sql/schema.js';
import { inTransaction } from '../../platform/sql/transaction.js';
import type { AuditLog } from '../audit/audit-log.js';
import type { FileWithToken } from '../files/file-links.js';
import type { FileService } from '../files/file-service.js';
import type { FileStore, FileWithLink } from '../files/file-store.js';
import type { Recipients, UploadRequest } from '../files/upload-commit.js';
import type { NotificationService } from '../notify/notification-service.js';
import type { OutboxStore } from '../notify/outbox-store.js';
import { formatDateTime, formatSize } from '../notify/templates.js';
import type { UserService } from '../users/user-service.js';
import { isLang, normalizeMobile, parseEmailList, parseMobileList } from '../users/validation.js';
import type { LinkStore } from './link-store.js';
import { addressOf } from './tracking.js';

/** After a message went out, the next resend waits this long (a failed one can be resent at once). */
export const RESEND_SECONDS = 60;

/**
 * Validates the recipient query parameters of an upload. Called before a byte of the body is read:
 * any invalid address rejects the request (400). Undefined when nobody is to be told.
 */
export function parseRecipients(m: string | undefined, c: string | undefined): Recipients | undefined {
  const emails = m !== undefined && m.trim() !== '' ? parseEmailList(m) : [];
  const mobiles = c !== undefined && c.trim() !== '' ? parseMobileList(c) : [];
  return emails.length + mobiles.length > 0 ? { emails, mobiles } : undefined;
}

/** `{base}/download/file?lang=<lang>&k=<token>`: the address every link is shown with. */
export function downloadUrl(baseUrl: string, lang: string, token: string): string {
  return `${baseUrl}/download/file?lang=${lang}&k=${token}`;
}

export interface RecipientDeps {
  db: Db;
  files: FileService;
  /** FileStore: area locks. */
  store: FileStore;
  links: LinkStore;
  outbox: OutboxStore;
  notify: NotificationService;
  users: UserService;
  audit: AuditLog;
  clock: Clock;
  keys: Keys;
  config: Pick<Config, 'baseUrl' | 'lang' | 'recipientPin' | 'notifySender'>;
}

export class RecipientNotifier {
  private readonly db: Db;
  private readonly files: FileService;
  private readonly store: FileStore;
  private readonly links: LinkStore;
  private readonly outbox: OutboxStore;
  private readonly notify: NotificationService;
  private readonly users: UserService;
  private readonly audit: AuditLog;
  private readonly clock: Clock;
  private readonly keys: Keys;
  private readonly config: RecipientDeps['config'];

  constructor(deps: RecipientDeps) {
    ({
      db: this.db,
      files: this.files,
      store: this.store,
      links: this.links,
      outbox: this.outbox,
      notify: this.notify,
      users: this.users,
      audit: this.audit,
      clock: this.clock,
      keys: this.keys,
      config: this.config,
    } = deps);
  }

  /** Hooks this notifier into the file service. */
  register(): void {
    this.files.onUpload((trx, stored, req) => this.announce(trx, stored, req));
    this.files.onDownload((found, _remote, first) => this.confirmDownload(found, first));
  }

  langOf(user: UserRow | undefined): Lang {
    return user && isLang(user.lang) ? user.lang : this.config.lang;
  }

  /** Upload hook: one recipient link and one 'file-link' message per recipient per file. */
  async announce(trx: Db, stored: FileWithToken[], req: UploadRequest): Promise<void> {
    const r = req.recipients;
    if (!r) return;
    const targets = [
      ...r.emails.map((email) => ({ channel: 'email' as const, to: email, recipient: { email } })),
      ...r.mobiles.map((mobile) => ({ channel: 'sms' as const, to: mobile, recipient: { mobile } })),
    ];
    for (const s of stored) {
      for (const target of targets) {
        const { link, token } = await this.files.createLink(trx, s.file.id, 'recipient', target.recipient);
        await this.audit.record(
          {
            event: 'link.created',
            user: req.uploader.name,
            remote: req.remote,
            fileId: s.file.id,
            detail: { link: link.id, kind: 'recipient', channel: target.channel, to: target.to },
          },
          trx,
        );
        await this.sendLink(trx, s.file, req.uploader, target.channel, target.to, token);
      }
    }
  }

  /** Queues the 'file-link' message of one recipient link (in the caller's transaction). */
  private sendLink(
    trx: Db,
    file: FileRow,
    uploader: UserRow,
    channel: 'email' | 'sms',
    to: string,
    token: string,
  ): Promise<number> {
    const lang = this.langOf(uploader);
    return this.notify.enqueue(trx, {
      channel,
      recipient: to,
      lang,
      kind: 'file-link',
      fileId: file.id,
      userName: uploader.name,
      vars: {
        uploader: uploader.name,
        fileName: file.name,
        size: formatSize(file.length, lang),
        message: file.message ?? '',
        expires: formatDateTime(file.expires_at, lang),
        link: downloadUrl(this.config.baseUrl, lang, token),
        pinRequired: this.config.recipientPin ? 'yes' : '',
      },
    });
  }

  /**
   * The sender asks for a recipient's message again (a failed one, or one that never arrived).
   * `to` is the recipient's address or their id in `recipients`. Unknown → 404; the file no longer
   * in the area, or its message still being sent → 409; within RESEND_SECONDS of the last message
   * unless that one failed → 429.
   */
  async resend(owned: FileWithLink, to: string, remote: string | null): Promise<LinkRow> {
    const { file } = owned;
    if (file.state !== 'area') throw conflict('the file is no longer in the area');
    const link = recipientNamed(await this.links.recipientLinks([file.id]), to);
    if (!link || link.revoked) throw notFound('to: not a recipient of this file');
    const uploader = await this.users.byId(file.uploader_id);
    if (!uploader) throw conflict("the file's sender no longer exists");
    const { channel, address } = addressOf(link);
    await inTransaction(this.db, async (trx) => {
      // One resend at a time per area, on every instance: the check below cannot race itself.
      await this.store.lockArea(trx, file.owner_id);
      const last = await this.outbox.latest(trx, file.id, 'file-link', address);
      if (last?.status === 'pending') throw conflict('the message is still being sent');
      // A failed message may be sent again at once; one that went out, once a minute at most.
      const wait =
        last && last.status !== 'failed'
          ? Math.ceil((last.created_at + RESEND_SECONDS * 1000 - this.clock.now()) / 1000)
          : 0;
      if (wait > 0) {
        throw tooMany(`sent less than ${RESEND_SECONDS}s ago; retry in ${wait}s`, wait);
      }
      await this.sendLink(trx, file, uploader, channel, address, this.keys.unseal(link.token_sealed));
      await this.audit.record(
        {
          event: 'link.resent',
          user: uploader.name,
          remote,
          fileId: file.id,
          detail: { link: link.id, channel, to: address },
        },
        trx,
      );
    });
    this.notify.kick();
    return link;
  }

  /**
   * Download hook: with REMESSA_NOTIFY_SENDER=true, the uploader hears (by e-mail, if they have an
   * address) of the first complete download through each recipient link.
   */
  async confirmDownload(found: FileWithLink, first: boolean): Promise<void> {
    const { file, link } = found;
    if (!this.config.notifySender || link.kind !== 'recipient' || !first) return;
    const uploader = await this.users.byId(file.uploader_id);
    const email = uploader?.email;
    if (!uploader || !email) return;
    const lang = this.langOf(uploader);
    // The message and its audit row in one transaction: tried again after a failure (the database
    // out of reach), a half-written pair would have sent the e-mail twice. Delivery starts at once.
    await inTransaction(this.db, (trx) =>
      this.notify.enqueue(trx, {
        channel: 'email',
        recipient: email,
        lang,
        kind: 'download-confirmation',
        fileId: file.id,
        userName: uploader.name,
        vars: {
          uploader: uploader.name,
          recipient: link.recipient_email ?? link.recipient_mobile ?? '',
          fileName: file.name,
          downloadedAt: formatDateTime(this.clock.now(), lang),
        },
      }),
    );
    this.notify.kick();
  }
}

/** The recipient link `to` names: its id, its e-mail address (any case) or its mobile number. */
export function recipientNamed(links: LinkRow[], to: string): LinkRow | undefined {
  const wanted = to.trim();
  const mobile = normalizeMobile(wanted);
  return links.find(
    (l) =>
      String(l.id) === wanted ||
      (l.recipient_email !== null && l.recipient_email === wanted.toLowerCase()) ||
      (l.recipient_mobile !== null && l.recipient_mobile === mobile),
  );
}
