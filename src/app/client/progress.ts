// Progress of a transfer: a bar with rate and ETA on a terminal, plain lines every 10% otherwise
// (logs, CI, pipes), no progress with --json (stdout is for the result; progress goes to stderr
// anyway). Messages (a retry, a resume) go through note(), also with --json: on a terminal the bar's
// line is cleared, the message takes a line of its own and the bar is drawn again below it. The
// bar is drawn here, with carriage returns and no timer (cli-progress only formats it): its own
// renderer saved and restored the cursor around other output and redrew after the command ended.
// The rate counts only what this run moved, not what an earlier run or attempt left on the server.
import cliProgress from 'cli-progress';

export interface Progress {
  /** The transfer goes on from `offset` (a resume, a retry): bytes before it are not this run's. */
  resumeAt(offset: number): void;
  update(done: number): void;
  /** A line of its own, above the bar. */
  note(text: string): void;
  /** The transfer is complete: the bar at 100 % with what this run moved, on a line of its own. */
  finish(): void;
  /** Ends the bar where it is (a failure), so that what follows starts a line of its own. */
  stop(): void;
}

const MiB = 1024 * 1024;
const REDRAW_MS = 100;
const BAR_WIDTH = 30;
const barOptions = {
  barsize: BAR_WIDTH,
  barCompleteString: '█'.repeat(BAR_WIDTH),
  barIncompleteString: '░'.repeat(BAR_WIDTH),
  barGlue: '',
  autopaddingChar: '',
};
export const mib = (n: number) => (n / MiB).toFixed(1);

/** The bytes this run moved, and since when. */
class Meter {
  at = 0;
  moved = 0;
  private readonly started = Date.now();

  resumeAt(offset: number): void {
    this.at = offset;
  }

  update(done: number): void {
    if (done > this.at) this.moved += done - this.at;
    this.at = done;
  }

  seconds(): number {
    return Math.max(0.001, (Date.now() - this.started) / 1000);
  }

  /** bytes per second */
  rate(): number {
    return this.moved / this.seconds();
  }
}

function barLine(label: string, total: number, verb: string, m: Meter, final: boolean): string {
  const frac = total === 0 ? 1 : Math.min(1, m.at / total);
  const bar = cliProgress.Format.BarFormat(frac, barOptions);
  const head = `${label} [${bar}] ${Math.floor(frac * 100)}% ${mib(m.at)}/${mib(total)} MiB`;
  const rate = `${(m.rate() / MiB).toFixed(1)} MiB/s`;
  if (final) return `${head}, ${mib(m.moved)} MiB ${verb} in ${m.seconds().toFixed(1)} s (${rate})`;
  const eta = m.rate() > 0 ? cliProgress.Format.TimeFormat((total - m.at) / m.rate(), barOptions, 1) : '--';
  return `${head} ${rate} ETA ${eta}`;
}

function onTerminal(label: string, total: number, verb: string): Progress {
  const out = process.stderr;
  const m = new Meter();
  let drawnAt = 0;
  let ended = false;
  // \r and erase-to-end-of-line: each draw replaces the line whatever was on it; cut to the width
  // so that it never wraps (a wrapped line is not replaced by \r).
  const draw = (final = false) => {
    drawnAt = Date.now();
    const width = Math.max(20, (out.columns || 80) - 1);
    out.write(`\r${barLine(label, total, verb, m, final).slice(0, width)}\x1b[K`);
  };
  const end = (final: boolean) => {
    if (ended) return;
    ended = true;
    draw(final);
    out.write('\n');
  };
  draw();
  return {
    resumeAt(offset) {
      m.resumeAt(offset);
      if (!ended) draw();
    },
    update(done) {
      m.update(done);
      if (!ended && Date.now() - drawnAt >= REDRAW_MS) draw();
    },
    note(text) {
      out.write(ended ? `${label}: ${text}\n` : `\r\x1b[K${label}: ${text}\n`);
      if (!ended) draw();
    },
    finish() {
      m.update(total);
      end(true);
    },
    stop: () => end(false),
  };
}

export function progress(label: string, total: number, quiet: boolean, verb = 'sent'): Progress {
  const note = (text: string) => process.stderr.write(`${label}: ${text}\n`);
  if (quiet) return { resumeAt() {}, update() {}, note, finish() {}, stop() {} };
  if (process.stderr.isTTY) return onTerminal(label, total, verb);
  let next = 0;
  const update = (done: number) => {
    const pct = total === 0 ? 100 : Math.floor((done / total) * 100);
    if (pct < next) return;
    next = Math.floor(pct / 10) * 10 + 10;
    process.stderr.write(`${label}: ${pct}% (${done} of ${total} bytes)\n`);
  };
  return { resumeAt: update, update, note, finish: () => update(total), stop() {} };
}
