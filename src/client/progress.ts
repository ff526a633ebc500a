// Progress of a transfer: a bar with rate and ETA on a terminal (cli-progress), plain lines every
// 10% otherwise (logs, CI, pipes), nothing with --json (stdout is for the result; progress goes to
// stderr anyway).
import cliProgress from 'cli-progress';

export interface Progress {
  update(done: number): void;
  stop(): void;
}

const MiB = 1024 * 1024;

export function progress(label: string, total: number, quiet: boolean): Progress {
  if (quiet) return { update() {}, stop() {} };
  if (process.stderr.isTTY) {
    const bar = new cliProgress.SingleBar(
      {
        stream: process.stderr,
        format: `${label} [{bar}] {percentage}% {done}/{all} MiB {rate} MiB/s ETA {eta_formatted}`,
        hideCursor: true,
        etaBuffer: 50,
      },
      cliProgress.Presets.shades_classic,
    );
    const start = Date.now();
    const payload = (done: number) => ({
      done: (done / MiB).toFixed(1),
      all: (total / MiB).toFixed(1),
      rate: (done / MiB / Math.max(0.001, (Date.now() - start) / 1000)).toFixed(1),
    });
    bar.start(total, 0, payload(0));
    return {
      update: (done) => bar.update(done, payload(done)),
      stop: () => bar.stop(),
    };
  }
  let next = 0;
  return {
    update(done) {
      const pct = total === 0 ? 100 : Math.floor((done / total) * 100);
      if (pct < next) return;
      next = Math.floor(pct / 10) * 10 + 10;
      process.stderr.write(`${label}: ${pct}% (${done} of ${total} bytes)\n`);
    },
    stop() {},
  };
}
