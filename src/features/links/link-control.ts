// Taking back what was sent (docs/links.md): the owner of a file (its owner link's token is the
// credential, as for delivery status) deletes it now, revokes one recipient's link while the others
// keep working, or changes a link's expiry and its limit of complete downloads. A deleted, revoked,
// expired or exhausted link answers exactly as an expired one, on every instance at once: each
// download reads its link's row.
import type { Clock } from '../../platform/clock.js';
import { conflict, invalid, notFound } from '../../platform/errors.js';
import type { FileRow, LinkRow } from '../../platform/sql/schema.js';
import type { AuditLog } from '../audit/audit-log.js';
import type { FileService } from '../files/file-service.js';
import type { FileWithLink } from '../files/file-store.js';
import type { UserService } from '../users/user-service.js';
import type { LinkStore } from './link-store.js';
import { recipientNamed } from './recipients.js';
import { addressOf } from './tracking.js';

/** The largest download limit a link takes (a number a person means, not an overflow). */
export const MAX_DOWNLOAD_LIMIT = 1_000_000;

export interface LinkChange {
  /** ms since the epoch; null: back to the file's own validity (a recipient link) */
  expiresAt?: number | null;
  /** complete downloads after which a recipient link retires; null: no limit */
  maxDownloads?: number | null;
}

/** Who asks: the audit row names them (the file's owner through its link, or an admin). */
export interface Requester {
  remote: string | null;
  /** An admin acting on someone's file. */
  actor?: string;
  /** How: through the owner's link (the default), the operator's command line, the admin API. */
  via?: 'link' | 'cli' | 'admin';
}

export interface LinkControlDeps {
  links: LinkStore;
  files: FileService;
  users: UserService;
  audit: AuditLog;
  clock: Clock;
}

export class LinkControl {
  constructor(private readonly d: LinkControlDeps) {}

  /** Deletes the file now: contents and every link gone (FileService.removeNow). */
  async deleteFile({ file }: Pick<FileWithLink, 'file'>, by: Requester): Promise<void> {
    const owner = await this.d.users.byId(file.owner_id);
    const removed = await this.d.files.removeNow(file, {
      user: owner?.name ?? null,
      remote: by.remote,
      actor: by.actor,
      via: by.via ?? 'link',
    });
    if (!removed) throw notFound('the file is already gone');
  }

  /** Deletes file `id` now (an admin's request); not found when unknown or already being deleted. */
  async deleteById(id: number, by: Requester): Promise<FileRow> {
    const file = await this.d.files.store.byId(id);
    if (!file || file.state === 'purging') throw notFound('no such file');
    await this.deleteFile({ file }, by);
    return file;
  }

  /** Revokes the link of recipient `to` (id, e-mail or mobile); the other links keep working. */
  async revoke({ file }: FileWithLink, to: string | undefined, by: Requester): Promise<LinkRow> {
    const link = await this.recipient(file.id, to);
    if (await this.d.links.revoke(link.id)) await this.record('link.revoked', file, link, by, {});
    return { ...link, revoked: 1 };
  }

  /**
   * Changes expiry and download limit: of recipient `to`'s link, or without `to` the file's
   * validity (every link's) and the limit of every recipient link. The owner's link is never
   * limited by downloads.
   */
  async change(
    { file }: FileWithLink,
    to: string | undefined,
    change: LinkChange,
    by: Requester,
  ): Promise<void> {
    const now = this.d.clock.now();
    if (change.expiresAt === undefined && change.maxDownloads === undefined)
      throw invalid('nothing to change: give expires, maxDownloads or both');
    if (change.expiresAt !== undefined && change.expiresAt !== null && change.expiresAt <= now)
      throw invalid('expires must be in the future');
    const m = change.maxDownloads;
    if (m !== undefined && m !== null && (!Number.isInteger(m) || m < 1 || m > MAX_DOWNLOAD_LIMIT))
      throw invalid(`maxDownloads must be a whole number from 1 to ${MAX_DOWNLOAD_LIMIT}, or null`);
    if (file.state !== 'area') throw conflict('the file is no longer in the area');
    const detail = { expires: change.expiresAt, maxDownloads: change.maxDownloads };
    if (to !== undefined) {
      const link = await this.recipient(file.id, to);
      await this.d.links.setLimits([link.id], change);
      return this.record('link.changed', file, link, by, detail);
    }
    if (change.expiresAt === null) throw invalid('expires: the file always has an end; give a time');
    if (change.expiresAt !== undefined && !(await this.d.files.store.setExpiry(file.id, change.expiresAt)))
      throw conflict('the file is no longer in the area');
    const recipients = await this.d.links.recipientLinks([file.id]);
    await this.d.links.setLimits(
      recipients.map((l) => l.id),
      { maxDownloads: change.maxDownloads },
    );
    await this.record('link.changed', file, null, by, detail);
  }

  private async recipient(fileId: number, to: string | undefined): Promise<LinkRow> {
    if (!to?.trim()) throw invalid('to: recipient required');
    const link = recipientNamed(await this.d.links.recipientLinks([fileId]), to);
    if (!link) throw notFound('to: not a recipient of this file');
    return link;
  }

  private async record(
    event: 'link.revoked' | 'link.changed',
    file: { id: number; owner_id: number },
    link: LinkRow | null,
    by: Requester,
    detail: Record<string, unknown>,
  ): Promise<void> {
    const owner = await this.d.users.byId(file.owner_id);
    const to = link ? { link: link.id, to: addressOf(link).address } : { link: 'all' };
    await this.d.audit.record({
      event,
      user: owner?.name ?? null,
      actor: by.actor ?? null,
      remote: by.remote,
      fileId: file.id,
      detail: { ...to, ...detail, via: by.via ?? 'link' },
    });
  }
}
