// Delivery tracking: for each recipient of a file, whether the announcement went out
// and whether they downloaded. Nothing new is written for it: the recipient links, the outbox rows
// of their 'file-link' messages and the download audit rows already hold the story; this reads
// them per page of files (three indexed queries however many files the page holds).

import { forbidden, unauthorized } from '../../platform/errors.js';
import { sha256 } from '../../platform/security/keys.js';
import type { Db } from '../../platform/sql/database.js';
import type { LinkRow, OutboxRow } from '../../platform/sql/schema.js';
import type { FileStore, FileWithLink } from '../files/file-store.js';
import { loggedReason } from '../notify/delivery-reasons.js';
import type { OutboxStore } from '../notify/outbox-store.js';
import { maskAddress } from '../users/validation.js';
import type { LinkStore } from './link-store.js';

export type DeliveryStatus = 'pending' | 'sent' | 'failed';

export interface RecipientStatus {
  /** the recipient's link id: what `to` of /download/resend also accepts */
  id: number;
  address: string;
  channel: 'email' | 'sms';
  status: DeliveryStatus;
  /** why it failed, or why the last attempt of a pending one did */
  reason: string | null;
  attempts: number;
  /** when the last attempt ended (ms since the epoch), null before the first */
  lastAttempt: number | null;
  downloads: {
    /** download responses through this recipient's link, complete or not */
    count: number;
    /** at least one of them delivered the whole file */
    complete: boolean;
    first: number | null;
    last: number | null;
  };
  /** (link control) the link was revoked by the sender */
  revoked: boolean;
  /** the link's own end (ms since the epoch), or null: the file's */
  expires: number | null;
  /** complete downloads after which the link retires, or null: no limit */
  maxDownloads: number | null;
  /** complete downloads through the link so far: what maxDownloads counts */
  completeDownloads: number;
}

/** The recipient's own address (e-mail or mobile) of a recipient link. */
export function addressOf(link: LinkRow): { channel: 'email' | 'sms'; address: string } {
  return link.recipient_email
    ? { channel: 'email', address: link.recipient_email }
    : { channel: 'sms', address: link.recipient_mobile ?? '' };
}

export class DeliveryTracker {
  constructor(
    private readonly db: Db,
    private readonly store: FileStore,
    private readonly links: LinkStore,
    private readonly outbox: OutboxStore,
  ) {}

  /** The recipients of each file (files without recipients are absent from the map). */
  async recipientsOf(fileIds: number[]): Promise<Map<number, RecipientStatus[]>> {
    const out = new Map<number, RecipientStatus[]>();
    if (fileIds.length === 0) return out;
    const links = await this.links.recipientLinks(fileIds);
    if (links.length === 0) return out;
    const withLinks = [...new Set(links.map((l) => l.file_id))];
    const messages = await this.outbox.aboutFiles(withLinks, 'file-link');
    const latest = new Map<string, OutboxRow>();
    for (const m of messages) latest.set(`${m.file_id}|${m.recipient}`, m); // the last one wins
    const downloads = await this.db
      .selectFrom('audit')
      .select(['at', 'detail'])
      .where('file_id', 'in', withLinks)
      .where('event', '=', 'download')
      .orderBy('id')
      .execute();
    const byLink = new Map<number, RecipientStatus['downloads']>();
    for (const d of downloads) {
      const detail = parseDetail(d.detail);
      const linkId = Number(detail['link']);
      const s = byLink.get(linkId) ?? { count: 0, complete: false, first: null, last: null };
      s.count++;
      s.complete ||= detail['complete'] === true;
      s.first ??= d.at;
      s.last = d.at;
      byLink.set(linkId, s);
    }
    for (const link of links) {
      const { channel, address } = addressOf(link);
      const message = latest.get(`${link.file_id}|${address}`);
      const list = out.get(link.file_id) ?? [];
      list.push({
        id: link.id,
        address: maskAddress(address),
        channel,
        ...statusOf(message, address),
        downloads: byLink.get(link.id) ?? { count: 0, complete: false, first: null, last: null },
        revoked: link.revoked === 1,
        expires: link.expires_at === null ? null : Number(link.expires_at),
        maxDownloads: link.max_downloads,
        completeDownloads: Number(link.downloads),
      });
      out.set(link.file_id, list);
    }
    return out;
  }

  /**
   * The file an owner token opens (in the area or the backup area). Missing, unknown or revoked
   * → 401 (as downloads answer); a recipient's token → 403: only the owner's link shows who else
   * got the file.
   */
  async byOwnerToken(token: string | undefined): Promise<FileWithLink> {
    if (!token || token.length > 200) throw unauthorized('invalid or expired download link');
    const found = await this.store.byTokenHash(sha256(token));
    if (!found || found.link.revoked || found.file.state === 'purging')
      throw unauthorized('invalid or expired download link');
    if (found.link.kind !== 'owner') throw forbidden("only the owner's link shows delivery status");
    return found;
  }
}

function statusOf(
  message: OutboxRow | undefined,
  address: string,
): Pick<RecipientStatus, 'status' | 'reason' | 'attempts' | 'lastAttempt'> {
  if (!message) return { status: 'pending', reason: null, attempts: 0, lastAttempt: null };
  // An SMTP answer may quote the address: it is masked there too.
  const reason = message.last_error?.replaceAll(address, maskAddress(address)) ?? null;
  const base = { attempts: message.attempts, lastAttempt: message.last_attempt_at ?? message.sent_at };
  switch (message.status) {
    case 'sent':
      return { ...base, status: 'sent', reason: null };
    case 'failed':
      return { ...base, status: 'failed', reason };
    case 'logged':
      // It never left the machine: to the sender that is a failure, with the reason why.
      return {
        ...base,
        status: 'failed',
        reason: loggedReason(message.channel),
      };
    default:
      return { ...base, status: 'pending', reason };
  }
}

function parseDetail(detail: string | null): Record<string, unknown> {
  try {
    const v = detail ? (JSON.parse(detail) as unknown) : null;
    return v && typeof v === 'object' ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
