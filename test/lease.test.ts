// keepRenewing, the timer behind every lease (an upload's lock, a notification being sent, a blob's
// write intent): renewals are due by the clock, so moving the clock moves them. Whether one did
// not happen is read off a second renewer polling alongside, never off a sleep.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { OffsetClock } from '../src/platform/clock.js';
import { keepRenewing } from '../src/platform/sql/lease.js';

const PERIOD = 60_000;
const POLL = 5;

/** Waits (up to five seconds) until `done()` holds. */
async function until(done: () => boolean): Promise<void> {
  for (const end = Date.now() + 5000; !done(); ) {
    if (Date.now() > end) assert.fail('timed out');
    await new Promise((r) => setTimeout(r, POLL));
  }
}

/** A renewer that records the times it renewed at; `answer` says what each renewal resolves to. */
function renewer(clock: OffsetClock, answer: () => Promise<unknown> = async () => true) {
  const at: number[] = [];
  const lost: number[] = [];
  const errors: unknown[] = [];
  const stop = keepRenewing({
    clock,
    everyMs: PERIOD,
    pollMs: POLL,
    renew: (now) => {
      at.push(now);
      return answer();
    },
    onLost: () => lost.push(clock.now()),
    onError: (err) => errors.push(err),
  });
  return { at, lost, errors, stop };
}

describe('keepRenewing', () => {
  test('renews once a period has gone by on the clock, and again after the next', async () => {
    const clock = new OffsetClock();
    const start = clock.now();
    const r = renewer(clock);
    try {
      clock.advance(PERIOD);
      await until(() => r.at.length === 1);
      assert.ok(r.at[0]! >= start + PERIOD);
      clock.advance(PERIOD);
      await until(() => r.at.length === 2);
      assert.ok(r.at[1]! >= r.at[0]! + PERIOD);
    } finally {
      r.stop();
    }
  });

  test('a stopped renewer renews no more', async () => {
    const clock = new OffsetClock();
    const stopped = renewer(clock);
    const running = renewer(clock);
    try {
      stopped.stop();
      clock.advance(PERIOD);
      await until(() => running.at.length === 1);
      clock.advance(PERIOD);
      await until(() => running.at.length === 2);
      assert.deepEqual(stopped.at, []);
    } finally {
      running.stop();
    }
  });

  test('a renewal that finds the hold lost reports it once and renewing stops', async () => {
    const clock = new OffsetClock();
    const losing = renewer(clock, async () => false);
    const running = renewer(clock);
    try {
      clock.advance(PERIOD);
      await until(() => losing.lost.length === 1 && running.at.length === 1);
      clock.advance(PERIOD);
      await until(() => running.at.length === 2);
      assert.equal(losing.at.length, 1);
      assert.equal(losing.lost.length, 1);
    } finally {
      losing.stop();
      running.stop();
    }
  });

  test('a renewal that fails is reported and tried again at the next poll', async () => {
    const clock = new OffsetClock();
    let fail = true;
    const r = renewer(clock, async () => {
      if (fail) {
        fail = false;
        throw new Error('database unreachable');
      }
      return true;
    });
    try {
      clock.advance(PERIOD);
      // No further move of the clock: the failed renewal is still due.
      await until(() => r.at.length === 2);
      assert.equal(r.errors.length, 1);
      assert.deepEqual(r.lost, []);
    } finally {
      r.stop();
    }
  });

  test('a due renewal let pass by skip() makes the next due a period later', async () => {
    const clock = new OffsetClock();
    const skips: number[] = [];
    let silent = true;
    const renewed: number[] = [];
    const stop = keepRenewing({
      clock,
      everyMs: PERIOD,
      pollMs: POLL,
      skip: () => {
        skips.push(clock.now());
        return silent;
      },
      renew: async (now) => {
        renewed.push(now);
      },
    });
    try {
      clock.advance(PERIOD);
      await until(() => skips.length === 1);
      silent = false;
      clock.advance(PERIOD);
      await until(() => renewed.length === 1);
      assert.equal(skips.length, 2);
    } finally {
      stop();
    }
  });
});
