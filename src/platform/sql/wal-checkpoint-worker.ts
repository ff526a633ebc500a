// The thread behind wal-checkpointer.ts: its own connection to the database, a PASSIVE
// checkpoint every `intervalMs`, closed on the message 'close'.
import { parentPort, workerData } from 'node:worker_threads';
import SQLite from 'better-sqlite3';

const { file, intervalMs } = workerData as { file: string; intervalMs: number };
const db = new SQLite(file, { fileMustExist: true });
// NORMAL in WAL mode: the checkpoint fsyncs the WAL before copying and the database after.
db.pragma('synchronous = NORMAL');
// This connection never checkpoints by itself, and waits rather than fail when the WAL is busy.
db.pragma('wal_autocheckpoint = 0');
db.pragma('busy_timeout = 1000');
// A checkpoint copies pages from the WAL to the file; it needs next to no page cache.
db.pragma('cache_size = -512');
const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');

const timer = setInterval(() => {
  try {
    checkpoint.get();
  } catch {
    // SQLITE_BUSY or the like: the next turn tries again; the writer's backstop still holds.
  }
}, intervalMs);

parentPort!.on('message', (message) => {
  if (message !== 'close') return;
  clearInterval(timer);
  db.close();
  parentPort!.close();
});
