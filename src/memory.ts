// Keeps the server's memory flat while it receives large uploads (figures: docs/benchmarks.md).
//
// 1. Every socket read arrives in a fresh buffer that V8 counts as external memory and frees only
//    when a collection runs; on V8's own schedule 30–60 MB of already-written chunks piled up
//    during a big upload. A minor (young-generation) collection every RECLAIM_EVERY received bytes
//    frees them promptly; with the young generation `remessa serve` runs with
//    (--max-semi-space-size=4 in bin/remessa.js) it takes well under a millisecond.
// 2. glibc keeps memory freed by several threads mapped in per-thread arenas: each large upload
//    left ~20 MB more resident. A fixed malloc trim threshold (native module) gives it back.
import v8 from 'node:v8';
import vm from 'node:vm';
import { nativeModule } from './native.js';

const MALLOC_TRIM_THRESHOLD = 1024 * 1024;
const RECLAIM_EVERY = 8 * 1024 * 1024;

type Collect = (options: { type: 'minor' }) => void;

function exposeGc(): Collect | null {
  try {
    v8.setFlagsFromString('--expose-gc');
    return vm.runInNewContext('gc') as Collect;
  } catch {
    return null;
  }
}

const collect = exposeGc();
let sinceLast = 0;

/** Called with the size of each received upload chunk. */
export function received(bytes: number): void {
  sinceLast += bytes;
  if (sinceLast < RECLAIM_EVERY) return;
  sinceLast = 0;
  collect?.({ type: 'minor' });
}

/** Once at start-up of `remessa serve`. */
export function tuneMemory(): void {
  nativeModule()?.mallocTrimThreshold(MALLOC_TRIM_THRESHOLD);
}
