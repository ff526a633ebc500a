// REMESSA_LINK_MAX_DOWNLOADS: the download limit each new recipient link gets (docs/links.md);
// its sender can change it per link. Unset: no limit.
import type { Reader } from './config-reader.js';

export interface LinkDefaultsConfig {
  /** Complete downloads after which a new recipient link retires; null: no limit. */
  linkMaxDownloads: number | null;
}

export function linkSettings(r: Reader): LinkDefaultsConfig {
  const set = r.optional('REMESSA_LINK_MAX_DOWNLOADS') !== null;
  return { linkMaxDownloads: set ? r.int('REMESSA_LINK_MAX_DOWNLOADS', 0, 1, 1_000_000) : null };
}
