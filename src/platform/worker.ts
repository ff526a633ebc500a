// Background jobs run inside `remessa serve` (outbox delivery, expiry sweeps). Each job runs
// periodically, never overlapping itself; `kick()` runs it soon after new work arrives.
import type { Logger } from './logger.js';

export interface BackgroundJob {
  name: string;
  intervalMs: number;
  /** One pass; must be safe to run on several instances at once. */
  run(): Promise<void>;
}

export class PeriodicWorker {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = true;

  constructor(
    private readonly job: BackgroundJob,
    private readonly log: Logger,
  ) {}

  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  /** Run as soon as possible (coalesced with a pass already running). */
  kick(): void {
    if (this.stopped) return;
    if (this.running) this.again = true;
    else this.schedule(0);
  }

  /** Runs one pass now and waits for it (tests use this instead of sleeping). */
  async runOnce(): Promise<void> {
    while (this.running) await this.running;
    await this.tick(false);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.running) await this.running;
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.tick(true), ms);
    this.timer.unref();
  }

  private async tick(reschedule: boolean): Promise<void> {
    if (this.running) return;
    this.running = (async () => {
      try {
        await this.job.run();
      } catch (err) {
        this.log.error({ err, job: this.job.name }, 'background job failed');
      }
    })();
    await this.running;
    this.running = null;
    if (!reschedule) return;
    if (this.again) {
      this.again = false;
      this.schedule(0);
    } else this.schedule(this.job.intervalMs);
  }
}
