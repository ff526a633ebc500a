// REMESSA_QUOTA_DEFAULT: the bytes an account may hold in its area and backup unless it has a quota
// of its own (docs/quotas.md). Unset: no limit.
import { parseSize, type Reader } from './config-reader.js';

export interface QuotaConfig {
  /** Bytes per account when its own quota is unset; null: unlimited. */
  quotaDefault: number | null;
}

export function quotaSettings(r: Reader): QuotaConfig {
  const raw = r.optional('REMESSA_QUOTA_DEFAULT');
  return { quotaDefault: raw === null ? null : parseSize('REMESSA_QUOTA_DEFAULT', raw, 0) };
}
