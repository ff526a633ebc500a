// Secure links (docs/portal.md): a recipient link downloads only with a PIN sent to that recipient.
// - gate(): called by the download routes before a byte is sent. Owner links pass; recipient links
//   (with REMESSA_RECIPIENT_PIN on) need `p`. No `p` → 403 without any write (mail scanners
//   prefetch links). A PIN stays valid for its whole lifetime, so a resumed (Range) download works
//   with the same code; wrong PINs count, and the fifth locks the link.
// - sendPin(): (ext) POST {base}/download/pin — a fresh 6-digit PIN by e-mail or SMS, at most one per
//   link per minute.
// - info(): (ext) GET {base}/download/info — what the landing page shows (docs/portal.md).
// PINs are stored only as an HMAC, compared in constant time and never logged or audited.

import type { Config, Lang } from '../../app/config.js';
import type { Clock } from '../../platform/clock.js';
import { forbidden, invalid, unauthorized } from '../../platform/errors.js';
import type { Keys } from '../../platform/security/keys.js';
import { PinLifecycle, PinPolicy } from '../../platform/security/pins.js';
import type { Db } from '../../platform/sql/database.js';
import type { LinkRow, UserRow } from '../../platform/sql/schema.js';
import type { AuditLog } from '../audit/audit-log.js';
import type { FileService } from '../files/file-service.js';
import type { FileWithLink } from '../files/file-store.js';
import type { NotificationService } from '../notify/notification-service.js';
import { formatDuration } from '../notify/templates.js';
import type { UserService } from '../users/user-service.js';
import { isLang } from '../users/validation.js';
import type { LinkStore } from './link-store.js';

export interface SecureLinkOptions {
  /** Wrong PINs in a row that lock a link (five). */
  maxPinFailures: number;
  /** How long a locked link stays locked (15 minutes). */
  lockSeconds: number;
  /** Minimum gap between two PINs sent for one link (60 s). */
  resendSeconds: number;
}

export const SECURE_LINK_DEFAULTS: SecureLinkOptions = {
  maxPinFailures: 5,
  lockSeconds: 15 * 60,
  resendSeconds: 60,
};

/** What the landing page shows about a link (docs/portal.md, GET /download/info). */
export interface LinkInfo {
  uploader: string;
  file: {
    name: string;
    length: number;
    modified: number;
    sender: string;
    message: string;
    expires: number;
    secure: boolean;
    lang: Lang;
  };
}

export interface SecureLinkDeps {
  db: Db;
  links: LinkStore;
  files: FileService;
  users: UserService;
  notify: NotificationService;
  audit: AuditLog;
  keys: Keys;
  clock: Clock;
  config: Pick<Config, 'lang' | 'recipientPin' | 'pinSeconds'>;
  opts?: Partial<SecureLinkOptions>;
}

export class SecureLinks {
  private readonly opts: SecureLinkOptions;
  private readonly pins: PinLifecycle;
  private readonly files: FileService;
  private readonly users: UserService;
  private readonly notify: NotificationService;
  private readonly audit: AuditLog;
  private readonly clock: Clock;
  private readonly config: SecureLinkDeps['config'];

  constructor(deps: SecureLinkDeps) {
    ({
      files: this.files,
      users: this.users,
      notify: this.notify,
      audit: this.audit,
      clock: this.clock,
      config: this.config,
    } = deps);
    const opts = { ...SECURE_LINK_DEFAULTS, ...deps.opts };
    this.opts = opts;
    const { links } = deps;
    this.pins = new PinLifecycle({
      db: deps.db,
      policy: new PinPolicy(deps.keys, deps.config.pinSeconds, opts.resendSeconds),
      maxFailures: opts.maxPinFailures,
      rows: {
        ...links.pinWrites,
        clearFailures: (id) => links.clearPinFailures(id),
        lock: (id, now, max) => links.lockAfterPinFailures(id, now + opts.lockSeconds * 1000, max),
      },
    });
  }

  /** Does this link need a PIN to download? */
  isSecure(link: LinkRow): boolean {
    return this.config.recipientPin && link.kind === 'recipient';
  }

  private recipientOf(link: LinkRow): string | null {
    return link.recipient_email ?? link.recipient_mobile ?? null;
  }

  private locked(link: LinkRow, now: number): boolean {
    return link.locked_until > now;
  }

  /**
   * Lets a download through or throws. `area`: which download route asks; recipient links are for
   * the link's validity only, so a recipient token is refused (401) in the backup area.
   */
  async gate(
    found: FileWithLink,
    pin: string | undefined,
    area: 'area' | 'backup',
    remote: string | null,
  ): Promise<void> {
    const { link, file } = found;
    if (link.kind !== 'recipient') return;
    if (area === 'backup') throw unauthorized('invalid or expired download link');
    if (!this.config.recipientPin) return;
    const now = this.clock.now();
    if (this.locked(link, now)) throw forbidden('link locked after wrong PINs: try again later');
    // No PIN: refuse without writing anything (a scanner prefetching the link changes nothing).
    if (pin === undefined || pin === '') throw forbidden('PIN required: ask for one with POST /download/pin');
    const who = this.recipientOf(link);
    const verdict = await this.pins.verify(link, pin, now);
    if (verdict.result === 'none' || verdict.result === 'expired') {
      await this.audit.record({
        event: 'pin.failed',
        user: who,
        remote,
        fileId: file.id,
        detail: { link: link.id, reason: verdict.result === 'expired' ? 'PIN expired' : 'no PIN sent' },
      });
      throw forbidden('PIN expired: ask for a new one');
    }
    if (verdict.result === 'match') return;
    const { failures } = verdict;
    await this.audit.record({
      event: 'pin.failed',
      user: who,
      remote,
      fileId: file.id,
      detail: { link: link.id, reason: 'wrong PIN', failures },
    });
    // Of concurrent wrong guesses only the one that locked audits the lock.
    if (verdict.locked) {
      await this.audit.record({
        event: 'link.locked',
        user: who,
        remote,
        fileId: file.id,
        detail: { link: link.id, failures, seconds: this.opts.lockSeconds },
      });
    }
    throw forbidden('wrong PIN');
  }

  /**
   * Sends a fresh PIN to the recipient of a link. Missing k → 400; unknown/revoked/not in the area
   * → 401; a link that needs no PIN → 400; locked → 403; a second PIN within resendSeconds → 429.
   */
  async sendPin(
    token: string | undefined,
    lang: string | undefined,
    remote: string | null,
  ): Promise<{ uploader: string }> {
    const found = await this.files.resolve(token, 'area');
    const { file, link } = found;
    if (!this.isSecure(link)) throw invalid('this link needs no PIN');
    const now = this.clock.now();
    if (this.locked(link, now)) throw forbidden('link locked after wrong PINs: try again later');
    this.pins.checkSlot(link, now);

    const uploader = await this.users.byId(file.uploader_id);
    const language = lang && isLang(lang) ? lang : this.langOf(uploader);
    const channel = link.recipient_email ? 'email' : 'sms';
    const to = link.recipient_email ?? link.recipient_mobile;
    if (!to) throw invalid('this link has no recipient to send a PIN to');
    await this.pins.send(link, now, async (trx, pin) => {
      await this.notify.enqueue(trx, {
        channel,
        recipient: to,
        lang: language,
        kind: 'download-pin',
        fileId: file.id,
        userName: uploader?.name ?? null,
        vars: { fileName: file.name, pin, pinValidity: formatDuration(this.config.pinSeconds, language) },
      });
      await this.audit.record(
        { event: 'pin.sent', user: to, remote, fileId: file.id, detail: { link: link.id, channel, to } },
        trx,
      );
    });
    this.notify.kick();
    return { uploader: uploader?.name ?? '' };
  }

  /**
   * What the landing page shows, without side effects and without the PIN. Missing k → 400;
   * unknown/revoked/not in the area → 401; a locked link → 403.
   */
  async info(token: string | undefined): Promise<LinkInfo> {
    const { file, link } = await this.files.resolve(token, 'area');
    if (link.kind === 'recipient' && this.locked(link, this.clock.now()))
      throw forbidden('link locked after wrong PINs: try again later');
    const uploader = await this.users.byId(file.uploader_id);
    const sender = uploader?.name ?? '';
    return {
      uploader: sender,
      file: {
        name: file.name,
        length: file.length,
        modified: file.created_at,
        sender,
        message: file.message ?? '',
        expires: file.expires_at,
        secure: this.isSecure(link),
        lang: this.langOf(uploader),
      },
    };
  }

  private langOf(user: UserRow | undefined): Lang {
    return user && isLang(user.lang) ? user.lang : this.config.lang;
  }
}
