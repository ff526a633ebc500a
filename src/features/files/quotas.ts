// Quotas (docs/quotas.md): how many bytes an account may hold in its area and backup, and its
// largest file. Room is taken before bytes are stored when an upload's length is known (a tus
// upload's row, a reservation for POST /upload's body), checked again at the commit when it was
// not (a chunked body), and usage is counted in the transaction that adds or removes a file row.
// Warnings at WARN_AT percent go out in that same transaction, once per crossing.
import { randomBytes } from 'node:crypto';
import type { Config } from '../../app/config.js';
import type { Clock } from '../../platform/clock.js';
import { invalid, tooLarge } from '../../platform/errors.js';
import type { Db } from '../../platform/sql/database.js';
import { keepRenewing } from '../../platform/sql/lease.js';
import type { UserRow } from '../../platform/sql/schema.js';
import type { FileUsage, UsageCount, UsageRow } from './store/usage.js';

export const quotaExceeded = () => tooLarge('quota exceeded');

/** Warning thresholds, highest first (percent of the quota). */
export const WARN_AT = [95, 80] as const;

/** A reservation lives this long past its last renewal: a crashed instance's is free again then. */
const LEASE_MS = 60 * 1000;
const RENEW_MS = 20 * 1000;

export interface QuotaWarning {
  account: UsageRow;
  percent: number;
  usage: number;
  quota: number;
}

/** Runs in the transaction that took the account past a threshold (e-mail, audit row, event). */
export type QuotaWarningHook = (trx: Db, warning: QuotaWarning) => Promise<void>;

/**
 * Room an upload holds while its bytes arrive: `bytes` may be stored (Infinity: no quota);
 * `checked` false when nothing was reserved and the commit must look again.
 */
export interface QuotaHold {
  bytes: number;
  checked: boolean;
  reservation: string | null;
  /** Gives back what the upload did not use (after its commit, nothing is left to give). */
  release(): Promise<void>;
}

/** What the portal shows: bytes held, the quota (null: none) and the largest file allowed. */
export interface AccountQuota {
  bytes: number;
  quota: number | null;
  maxFileSize: number;
}

const NOTHING_HELD: QuotaHold = { bytes: 0, checked: true, reservation: null, release: async () => {} };
const UNLIMITED: QuotaHold = { ...NOTHING_HELD, bytes: Number.POSITIVE_INFINITY };
/** A finished tus upload: its row held the room until the transaction that commits the file. */
export const HELD_BY_ROW: QuotaHold = NOTHING_HELD;

/** The highest threshold `usage` reaches under `quota`; 0 below all (or without a quota). */
export function warnLevel(usage: number, quota: number | null): number {
  if (quota === null || quota <= 0) return 0;
  return WARN_AT.find((p) => usage * 100 >= quota * p) ?? 0;
}

export class Quotas {
  private readonly hooks: QuotaWarningHook[] = [];

  constructor(
    private readonly d: {
      usage: FileUsage;
      clock: Clock;
      config: Pick<Config, 'quotaDefault' | 'maxFileSize'>;
    },
  ) {}

  onWarning(hook: QuotaWarningHook): void {
    this.hooks.push(hook);
  }

  quotaOf(u: Pick<UserRow, 'quota_bytes'>): number | null {
    return u.quota_bytes ?? this.d.config.quotaDefault;
  }

  /** The account's largest file: its own value, never above REMESSA_MAX_FILE_SIZE. */
  maxFileOf(u: Pick<UserRow, 'max_file_bytes'>): number {
    const global = this.d.config.maxFileSize;
    return Math.min(u.max_file_bytes ?? global, global);
  }

  account(u: UserRow): AccountQuota {
    return { bytes: Number(u.usage_bytes), quota: this.quotaOf(u), maxFileSize: this.maxFileOf(u) };
  }

  /**
   * Runs `fn` (which records an upload of `bytes`, e.g. a tus upload's row) in a transaction that
   * holds the account's row, once the room is there: quota exceeded otherwise, nothing written.
   */
  async withRoom<T>(userId: number, bytes: number, fn: (trx: Db) => Promise<T>): Promise<T> {
    const now = this.d.clock.now();
    const out = await this.d.usage.withAccount(userId, async (trx, row) => {
      const quota = this.quotaOf(row);
      if (quota !== null) {
        const reserved = await this.d.usage.reserved(trx, userId, now);
        if (Number(row.usage_bytes) + reserved + bytes > quota) throw quotaExceeded();
      }
      return { value: await fn(trx) };
    });
    if (!out) throw quotaExceeded();
    return out.value;
  }

  /**
   * Room for a POST /upload body into `owner`'s area. `exact`: the body is one file of `length`
   * bytes (refused at once past the room). Else `length` bounds the body (a multipart one): as much
   * as fits is held, and storing more than that is refused as it arrives. Unknown length (chunked):
   * nothing held, the room as it is now bounds the stream, the commit looks again.
   */
  async hold(owner: UserRow, length: number | undefined, exact: boolean): Promise<QuotaHold> {
    const { usage, clock } = this.d;
    if (this.quotaOf(owner) === null) return UNLIMITED;
    const id = randomBytes(12).toString('base64url');
    const held = await usage.withAccount(owner.id, async (trx, row) => {
      const quota = this.quotaOf(row);
      if (quota === null) return null;
      const reserved = await usage.reserved(trx, owner.id, clock.now());
      const room = Math.max(0, quota - Number(row.usage_bytes) - reserved);
      if (length === undefined) return { room, bytes: 0 };
      if (exact && length > room) throw quotaExceeded();
      const bytes = Math.min(length, room);
      if (bytes > 0)
        await usage.reserve(trx, { id, userId: owner.id, bytes, expiresAt: clock.now() + LEASE_MS });
      return { room, bytes };
    });
    if (held === undefined) throw invalid('d: no such user');
    if (held === null) return UNLIMITED;
    if (length === undefined) return { ...NOTHING_HELD, bytes: held.room, checked: false };
    if (held.bytes === 0) return NOTHING_HELD;
    const stop = keepRenewing({
      clock,
      everyMs: RENEW_MS,
      renew: (now) => usage.renew(id, now + LEASE_MS),
      onError: () => {},
    });
    return {
      bytes: held.bytes,
      checked: true,
      reservation: id,
      release: async () => {
        stop();
        await usage.release(id).catch(() => {});
      },
    };
  }

  /**
   * In the transaction that adds `bytes` of files to `ownerId`'s area (negative: removes): the
   * reservation becomes usage, an upload that held nothing is checked against the room, and a
   * threshold crossed is warned of.
   */
  async counted(trx: Db, ownerId: number, bytes: number, hold: QuotaHold): Promise<void> {
    if (hold.reservation) await this.d.usage.release(hold.reservation, trx);
    const row = await this.d.usage.add(trx, ownerId, bytes);
    if (!row) return;
    const quota = this.quotaOf(row);
    const after = Number(row.usage_bytes);
    if (!hold.checked && quota !== null) {
      const reserved = await this.d.usage.reserved(trx, ownerId, this.d.clock.now());
      if (after + reserved > quota) throw quotaExceeded();
    }
    // The level last warned stands only while usage stayed at or above it since (deletions do
    // not write it: the usage before this change says whether it fell below).
    const stood = Math.min(row.quota_warned, warnLevel(after - bytes, quota));
    const level = warnLevel(after, quota);
    if (level > stood) {
      await this.d.usage.setWarned(trx, ownerId, level);
      for (const hook of this.hooks)
        await hook(trx, { account: row, percent: level, usage: after, quota: quota! });
    } else if (stood !== row.quota_warned) await this.d.usage.setWarned(trx, ownerId, stood);
  }

  /** Reservations whose lease ran out hold nothing already; their rows go. */
  prune(): Promise<number> {
    return this.d.usage.prune(this.d.clock.now());
  }

  /** Every account's counter beside its recomputed usage; `fix`: differing counters are set right. */
  async check(fix: boolean): Promise<UsageCount[]> {
    const counts = await this.d.usage.counts();
    if (fix) for (const c of counts) if (c.counted !== c.recomputed) await this.d.usage.recount(c.user);
    return counts;
  }
}
