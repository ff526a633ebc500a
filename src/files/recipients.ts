// Recipients of an upload (DESIGN §5, issue 4): query `m` (e-mails) and `c` (mobiles) announce
// every uploaded file; each recipient gets a link of their own (own token, kind 'recipient') and a
// 'file-link' message in the uploader's language. Everything happens inside the upload
// transaction (hook registered with FileService.onUpload): the file rows, the links and the
// outbox rows commit or roll back together. The caller kicks the outbox after the commit.
// Also sends the optional confirmation to the uploader when a recipient downloads
// (REMESSA_NOTIFY_SENDER, hook registered with FileService.onDownload).
import type { AuditLog } from '../audit/audit-log.js';
import type { Clock } from '../clock.js';
import type { Config, Lang } from '../config.js';
import type { Db } from '../db/database.js';
import type { UserRow } from '../db/schema.js';
import type { NotificationService } from '../notify/notification-service.js';
import { formatDateTime, formatSize } from '../notify/templates.js';
import type { UserService } from '../users/user-service.js';
import { isLang, parseEmailList, parseMobileList } from '../validation.js';
import type { FileService, FileWithToken, Recipients, UploadRequest } from './file-service.js';
import type { FileWithLink } from './file-store.js';

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

export class RecipientNotifier {
  constructor(
    private readonly db: Db,
    private readonly files: FileService,
    private readonly notify: NotificationService,
    private readonly users: UserService,
    private readonly audit: AuditLog,
    private readonly clock: Clock,
    private readonly config: Pick<Config, 'baseUrl' | 'lang' | 'recipientPin' | 'notifySender'>,
  ) {}

  /** Hooks this notifier into the file service. */
  register(): void {
    this.files.onUpload((trx, stored, req) => this.announce(trx, stored, req));
    this.files.onDownload((found) => this.confirmDownload(found));
  }

  langOf(user: UserRow | undefined): Lang {
    return user && isLang(user.lang) ? user.lang : this.config.lang;
  }

  /** Upload hook: one recipient link and one 'file-link' message per recipient per file. */
  async announce(trx: Db, stored: FileWithToken[], req: UploadRequest): Promise<void> {
    const r = req.recipients;
    if (!r) return;
    const lang = this.langOf(req.uploader);
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
        await this.notify.enqueue(trx, {
          channel: target.channel,
          recipient: target.to,
          lang,
          kind: 'file-link',
          fileId: s.file.id,
          userName: req.uploader.name,
          vars: {
            uploader: req.uploader.name,
            fileName: s.file.name,
            size: formatSize(s.file.length, lang),
            message: req.message ?? '',
            expires: formatDateTime(s.file.expires_at, lang),
            link: downloadUrl(this.config.baseUrl, lang, token),
            pinRequired: this.config.recipientPin ? 'yes' : '',
          },
        });
      }
    }
  }

  /**
   * Download hook: with REMESSA_NOTIFY_SENDER=true, the uploader hears (by e-mail, if they have an
   * address) of the first complete download through each recipient link.
   */
  async confirmDownload(found: FileWithLink): Promise<void> {
    const { file, link } = found;
    if (!this.config.notifySender || link.kind !== 'recipient' || link.downloads > 0) return;
    const uploader = await this.users.byId(file.uploader_id);
    if (!uploader?.email) return;
    const lang = this.langOf(uploader);
    // Plain handle: the message is stored and its delivery starts at once.
    await this.notify.enqueue(this.db, {
      channel: 'email',
      recipient: uploader.email,
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
    });
  }
}
