// The optional native module (native/*.c, built by `npm ci` through scripts/build-native.js):
// sendfile(2) downloads, upload hashing and writing off the JS thread, and malloc tuning. Where it
// was not built (no C compiler, not Linux), everything works without it, only slower and with more
// memory.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { getSystemErrorName } from 'node:util';

export interface NativeModule {
  /** Sends `length` bytes of `fileFd` from `offset` into `socketFd`; `done` runs once. */
  start(
    socketFd: number,
    fileFd: number,
    offset: number,
    length: number,
    done: (errno: number, sent: number) => void,
  ): object;
  cancel(handle: object): void;
  /** Bytes of a running transfer handed to the socket so far. */
  sent(handle: object): number;
  /** glibc mallopt(M_TRIM_THRESHOLD): free() returns memory above this much to the system. */
  mallocTrimThreshold(bytes: number): boolean;
  /** sync_file_range(SYNC_FILE_RANGE_WRITE) in the thread pool: start writing a range to disk. */
  startWriteback(fd: number, offset: number, length: number, done: (errno: number) => void): void;
  /**
   * An upload writer on a dup of `fd` (an empty file): SHA-256 and writes of each batch in the
   * thread pool; with `direct`, O_DIRECT writes when the filesystem takes them.
   */
  hashWriter(fd: number, direct: boolean): object;
  /** Whether the writer bypasses the page cache. */
  directHashed(writer: object): boolean;
  /**
   * Hashes and appends `buffers` at the writer's position; calls on one writer must not overlap.
   * `last` marks the final batch: a direct writer holds back up to 1 MiB until then.
   */
  writeHashed(writer: object, buffers: Buffer[], done: (errno: number) => void, last?: boolean): void;
  /** Hex SHA-256 of everything written; the writer takes no more batches. */
  digestHashed(writer: object): string;
  /** Releases the writer's descriptor (once the batch in flight, if any, has ended). */
  closeHashed(writer: object): void;
  /** Descriptors of up to `max` connections waiting on the listening socket `listenFd` (accept4). */
  acceptPending(listenFd: number, max: number): number[];
  /** Raises the soft RLIMIT_NOFILE to the hard limit; answers the soft limit in force (-1: unknown). */
  raiseFileLimit(): number;
}

let loaded: NativeModule | null | undefined;
let loadError = '';

export function nativeModule(): NativeModule | null {
  if (loaded === undefined) {
    try {
      loaded = createRequire(import.meta.url)(
        '../../../../native/build/Release/remessa_native.node',
      ) as NativeModule;
    } catch (err) {
      loaded = null;
      loadError = (err as Error).message.split('\n')[0] ?? '';
    }
  }
  return loaded;
}

/** For the start-up log line: how downloads leave the server. */
export function downloadPath(setting: 'auto' | 'off'): string {
  if (setting === 'off') return 'streamed (REMESSA_SENDFILE=off)';
  return nativeModule() ? 'sendfile' : `streamed (native module not built: ${loadError})`;
}

/** For the start-up log line: how uploads reach the disk. */
export function uploadPath(directIo: 'auto' | 'off'): string {
  if (!nativeModule()) return `streamed through Node (native module not built: ${loadError})`;
  return directIo === 'auto'
    ? 'hashed and written in the thread pool, O_DIRECT where the filesystem takes it'
    : 'hashed and written in the thread pool, through the page cache (REMESSA_DIRECT_IO=off)';
}

/** The error for an errno the native module reported, shaped like Node's own system errors. */
export function nativeError(errno: number, syscall: string): NodeJS.ErrnoException {
  const code = getSystemErrorName(-errno);
  return Object.assign(new Error(`${code}: ${syscall} failed`), { errno: -errno, code, syscall });
}

let fileLimit: number | null | undefined;

/**
 * The most descriptors this process may open, the soft limit raised first to the hard one (with
 * the native module; without it, the limit as it was set). Read once; null where it cannot be read.
 */
export function openFileLimit(): number | null {
  if (fileLimit !== undefined) return fileLimit;
  const raised = nativeModule()?.raiseFileLimit?.() ?? -1;
  fileLimit = raised > 0 ? raised : softLimitFromProc();
  return fileLimit;
}

function softLimitFromProc(): number | null {
  try {
    const m = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    return m && m[1] !== 'unlimited' ? Number(m[1]) : null;
  } catch {
    return null; // not Linux
  }
}
