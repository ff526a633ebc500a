// Download links of files: issuing a link's token, resolving a token to its file, and listing an
// area with the token of each file's link.

import type { Config } from '../../app/config.js';
import type { Clock } from '../../platform/clock.js';
import { invalid, unauthorized } from '../../platform/errors.js';
import { type Keys, randomToken, sha256 } from '../../platform/security/keys.js';
import type { Db } from '../../platform/sql/database.js';
import type { FileRow, LinkRow, UserRow } from '../../platform/sql/schema.js';
import type { FileStore, FileWithLink } from './file-store.js';

/**
 * Whether a link opens its file now: not revoked, and a recipient's link also not past its own
 * expiry or its limit of complete downloads (the owner's link is never limited). A link that does
 * not answers exactly as an expired one.
 */
export function linkOpens(link: LinkRow, now: number): boolean {
  if (link.revoked) return false;
  if (link.kind === 'owner') return true;
  if (link.expires_at !== null && link.expires_at <= now) return false;
  return link.max_downloads === null || link.downloads < link.max_downloads;
}

/** A file with the token of one of its links, ready to present. */
export interface FileWithToken {
  file: FileRow;
  link: LinkRow;
  /**
   * null: the stored copy of the token could not be opened (sealed with a server secret that was
   * replaced without REMESSA_PREVIOUS_SECRET, docs/operations.md); the link itself still works.
   */
  token: string | null;
}

export interface FileLinkDeps {
  store: FileStore;
  keys: Keys;
  clock: Clock;
  config: Pick<Config, 'linkMaxDownloads'>;
}

export class FileLinks {
  constructor(private readonly d: FileLinkDeps) {}

  /** A new link to a file; the token is returned once and kept only hashed and sealed. */
  async createLink(
    trx: Db,
    fileId: number,
    kind: 'owner' | 'recipient',
    recipient: { email?: string; mobile?: string } = {},
  ): Promise<{ link: LinkRow; token: string }> {
    const token = randomToken();
    const link = await this.d.store.insertLink(trx, {
      fileId,
      tokenHash: sha256(token),
      tokenSealed: this.d.keys.seal(token),
      kind,
      recipientEmail: recipient.email ?? null,
      recipientMobile: recipient.mobile ?? null,
      createdAt: this.d.clock.now(),
      // Recipient links start with the installation's default limit; the owner's is never limited.
      maxDownloads: kind === 'recipient' ? this.d.config.linkMaxDownloads : null,
    });
    return { link, token };
  }

  /**
   * The file a download token opens in the given area. Missing token → 400; unknown, revoked or
   * in the other area → 401 (the same answer, so tokens cannot be probed).
   */
  async resolve(token: string | undefined, area: 'area' | 'backup'): Promise<FileWithLink> {
    if (!token) throw invalid(area === 'area' ? 'k: download token required' : 'z: download token required');
    if (token.length > 200) throw unauthorized('invalid download link');
    const found = await this.d.store.byTokenHash(sha256(token));
    if (!found || !linkOpens(found.link, this.d.clock.now()) || found.file.state !== area)
      throw unauthorized('invalid or expired download link');
    return found;
  }

  async list(owner: UserRow, area: 'area' | 'backup', page: number): Promise<FileWithToken[]> {
    const rows = await this.d.store.listPage(owner.id, area, page);
    // One unreadable copy (an old secret) must not take the whole listing down: that entry shows
    // no link, the others do.
    return rows.map((r) => ({ ...r, token: this.openToken(r.link) }));
  }

  private openToken(link: LinkRow): string | null {
    try {
      return this.d.keys.unseal(link.token_sealed);
    } catch {
      return null;
    }
  }
}
