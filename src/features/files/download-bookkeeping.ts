// A download's bookkeeping: its audit row before the first byte, then its outcome and count, the
// download hooks and, in mailbox mode, the file's retirement; what fails for want of the database
// waits here for a later try.

import type { Config } from '../../app/config.js';
import type { ByteRange } from '../../platform/blobs/blob-store.js';
import type { Clock } from '../../platform/clock.js';
import { isOutOfSpace, isUnavailable } from '../../platform/errors.js';
import type { GroupCommit, MergedWork } from '../../platform/sql/group-commit.js';
import type { FileRow } from '../../platform/sql/schema.js';
import { CommitUnknownError } from '../../platform/sql/transaction.js';
import type { AuditEntry, AuditLog, DetailedEntry } from '../audit/audit-log.js';
import type { DownloadOutcome } from './download.js';
import type { FileStore, FileWithLink } from './file-store.js';

/**
 * Runs after a complete download was counted (sender confirmation). `first`: its count moved the
 * link's from 0, decided in the count's transaction (a snapshot read before the download would
 * call two overlapping downloads, or a late retry, the first).
 */
export type DownloadHook = (found: FileWithLink, remote: string | null, first: boolean) => Promise<void>;

/** A download's outcome, written by finished(). */
interface Outcome {
  /** its audit row (begun by starting) */
  row: number;
  entry: AuditEntry;
  /** the link whose download count it adds one to (a complete download), or null */
  countedLink: number | null;
}

/**
 * A finished download's bookkeeping that failed with the database out of reach: what is left of
 * it, from `step` on (0 the outcome, then each download hook, then the mailbox retirement).
 */
interface UnfinishedBookkeeping {
  found: FileWithLink;
  row: number;
  outcome: DownloadOutcome;
  remote: string | null;
  step: number;
  /** Set once the outcome committed: whether this was the link's first complete download. */
  first: boolean;
}

/** Finished downloads whose bookkeeping waits for the database; past this, the oldest are dropped. */
const MAX_UNFINISHED = 10_000;

export interface DownloadBookkeepingDeps {
  store: FileStore;
  audit: AuditLog;
  clock: Clock;
  config: Pick<Config, 'retireOnDownload'>;
  /** Download rows and counts share commits with other requests'. */
  commits: GroupCommit;
  /** area → backup, audited (FileService.retire): mailbox mode, after a complete download. */
  retire: (file: FileRow, reason: string) => Promise<boolean>;
}

export class DownloadBookkeeping {
  private readonly hooks: DownloadHook[] = [];
  private unfinished: UnfinishedBookkeeping[] = [];
  /** Bookkeeping given up since takeDropped() was last asked (past the cap, or failed for good). */
  private dropped = 0;
  /** After a pass that still failed, the next waits this long (doubling, up to 5 minutes). */
  private retryDelayMs = 0;
  private retryNotBefore = 0;
  private retrying: Promise<number> | null = null;
  /** The outcomes of one batch, written together (on PostgreSQL a few statements for them all). */
  private readonly outcomes: MergedWork<Outcome, { first: boolean }> = {
    runAll: async (trx, outcomes) => {
      await this.d.audit.finishAll(
        outcomes.map(({ row, entry }) => ({ id: row, entry })),
        trx,
      );
      const counts = new Map<number, number>();
      for (const { countedLink } of outcomes)
        if (countedLink !== null) counts.set(countedLink, (counts.get(countedLink) ?? 0) + 1);
      // Each link's count before this batch; within it, the first of its outcomes is the first.
      const running = await this.d.store.countDownloads(counts, trx);
      return outcomes.map(({ countedLink }) => {
        if (countedLink === null) return { first: false };
        const before = running.get(countedLink) ?? 1;
        running.set(countedLink, before + 1);
        return { first: before === 0 };
      });
    },
  };

  constructor(private readonly d: DownloadBookkeepingDeps) {}

  onDownload(hook: DownloadHook): void {
    this.hooks.push(hook);
  }

  /**
   * Before the first byte of a download: its audit row, committed, saying the outcome is unknown
   * (what it keeps saying if the process dies mid-response). Returns the row for finished().
   * Throws (a full disk: 503) when it cannot be written, and then no byte may be sent.
   */
  async starting(found: FileWithLink, range: ByteRange | null, remote: string | null): Promise<number> {
    return this.d.audit.begin(downloadEntry(found, remote, range ? rangeDetail(range) : {}));
  }

  /**
   * After a download response is over: its audit row gets the outcome (complete or not, bytes,
   * range) and a complete one is counted, in one transaction; then the download hooks run and, in
   * mailbox mode, the file is retired. A step that fails with the database out of reach, busy or
   * full is tried again (with those after it) by retry(); not one whose commit's outcome is
   * unknown, where a second try could count the download twice. Throws the failure either way.
   */
  async finished(
    found: FileWithLink,
    row: number,
    outcome: DownloadOutcome,
    remote: string | null,
  ): Promise<void> {
    const work: UnfinishedBookkeeping = { found, row, outcome, remote, step: 0, first: false };
    try {
      await this.bookkeep(work);
      // The database is back: what waited for it need not wait for the job's next pass.
      if (this.unfinished.length > 0) {
        this.retryNotBefore = 0;
        void this.retry().catch(() => {});
      }
    } catch (err) {
      if (mayTryAgain(err)) this.keep([work]);
      throw err;
    }
  }

  /**
   * Tries the bookkeeping of downloads that failed for want of the database again (a background
   * job, and at shutdown with `force`). After a pass that still fails, passes back off (10 s, 20 s
   * … 5 minutes): on SQLite each try against a lock held elsewhere stops the process for the 5 s
   * busy timeout. Returns how many are still waiting.
   */
  retry({ force = false } = {}): Promise<number> {
    // One pass at a time: two would take the same downloads and count them twice.
    this.retrying ??= this.retryPass(force).finally(() => {
      this.retrying = null;
    });
    return this.retrying;
  }

  private async retryPass(force: boolean): Promise<number> {
    if (this.unfinished.length === 0 || (!force && this.d.clock.now() < this.retryNotBefore))
      return this.unfinished.length;
    const waiting = this.unfinished;
    this.unfinished = [];
    for (const [i, work] of waiting.entries()) {
      try {
        await this.bookkeep(work);
      } catch (err) {
        if (!mayTryAgain(err)) {
          this.dropped++;
          continue;
        }
        // Still out of reach: this one and the rest wait for a later pass, in their order.
        const later = this.unfinished;
        this.unfinished = [];
        this.keep([...waiting.slice(i), ...later]);
        this.retryDelayMs = Math.min(Math.max(10_000, this.retryDelayMs * 2), 5 * 60_000);
        this.retryNotBefore = this.d.clock.now() + this.retryDelayMs;
        return this.unfinished.length;
      }
    }
    this.retryDelayMs = 0;
    return this.unfinished.length;
  }

  /** Keeps `works` for a later pass; past MAX_UNFINISHED the oldest are given up. */
  private keep(works: UnfinishedBookkeeping[]): void {
    this.unfinished = this.unfinished.concat(works);
    const over = this.unfinished.length - MAX_UNFINISHED;
    if (over > 0) {
      this.unfinished.splice(0, over);
      this.dropped += over;
    }
  }

  /**
   * How many downloads' bookkeeping was given up since the last call (their audit rows keep saying
   * the outcome is unknown, their count and hooks never happen): for the log.
   */
  takeDropped(): number {
    const n = this.dropped;
    this.dropped = 0;
    return n;
  }

  /** Runs the steps of a download's bookkeeping from `work.step` on, advancing it as each commits. */
  private async bookkeep(work: UnfinishedBookkeeping): Promise<void> {
    const { found, row, outcome, remote } = work;
    if (work.step === 0) {
      const entry = downloadEntry(found, remote, {
        bytes: outcome.bytes,
        complete: outcome.complete,
        ...(outcome.range ? rangeDetail(outcome.range) : {}),
      });
      // Nobody waits on this (the response is over): it commits without holding a commit slot for
      // the disk, which syncs it soon after (group-commit.ts, RunOptions.durable).
      const { first } = await this.d.commits.runMerged(
        this.outcomes,
        { row, entry, countedLink: outcome.complete ? found.link.id : null },
        { durable: false },
      );
      work.first = first;
      work.step = 1;
    }
    if (!outcome.complete) return;
    for (; work.step <= this.hooks.length; work.step++)
      await this.hooks[work.step - 1]!(found, remote, work.first);
    if (this.d.config.retireOnDownload && found.file.state === 'area')
      await this.d.retire(found.file, 'downloaded');
    work.step++;
  }
}

/** A failure that changed nothing and may pass: the database unreachable, busy or full. */
function mayTryAgain(err: unknown): boolean {
  if (err instanceof CommitUnknownError) return false;
  const code = (err as { code?: unknown } | null)?.code;
  return (
    isUnavailable(err) ||
    isOutOfSpace(err) ||
    (typeof code === 'string' && (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')))
  );
}

function rangeDetail(range: ByteRange): { range: string } {
  return { range: `${range.start}-${range.end}` };
}

/** A download's audit row: who (the link's recipient, if any), which link, and `detail`. */
function downloadEntry(
  { file, link }: FileWithLink,
  remote: string | null,
  detail: Record<string, unknown>,
): DetailedEntry {
  return {
    event: 'download',
    user: link.recipient_email ?? link.recipient_mobile ?? null,
    remote,
    fileId: file.id,
    detail: { link: link.id, kind: link.kind, ...detail },
  };
}
