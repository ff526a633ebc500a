// Keeps the server's memory flat while large files pass through it (figures: docs/benchmarks.md).
//
// 1. Every socket read arrives in a fresh buffer that V8 counts as external memory and frees only
//    when a collection runs; on V8's own schedule 30–60 MB of already-written chunks piled up
//    during a big upload, and the same during a download streamed from S3 (a 2 GiB one peaked
//    at 197 MiB resident, the bound being 200 MB). A minor (young-generation) collection every
//    RECLAIM_EVERY bytes that pass through frees them promptly; with the young generation
//    `remessa serve` runs with (--max-semi-space-size=4 in bin/remessa.js) it takes well under a
//    millisecond.
// 2. glibc keeps memory freed by several threads mapped in per-thread arenas: each large upload
//    left ~20 MB more resident. A fixed malloc trim threshold (native module) gives it back.
// 3. V8 sizes the old generation's next limit from what survived the last full collection. For a
//    small server heap (~20 MB) its dynamic factor often left less headroom than the young
//    generation holds, and then it started incremental marking again after every second
//    scavenge: 60-70 full collections per GiB uploaded, ~3 s of CPU, upload rate halved
//    (docs/benchmarks.md, "Large transfers"). A fixed growing factor of 2 ends that; the flag is read
//    at every collection, so setting it at run time works.
import v8 from 'node:v8';
import vm from 'node:vm';
import { nativeModule } from './native/native.js';

const MALLOC_TRIM_THRESHOLD = 1024 * 1024;
const RECLAIM_EVERY = 8 * 1024 * 1024;
const HEAP_GROWING_PERCENT = 100;

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

/** Called with the size of each chunk of file contents that passes through a JS buffer. */
export function received(bytes: number): void {
  sinceLast += bytes;
  if (sinceLast < RECLAIM_EVERY) return;
  sinceLast = 0;
  collect?.({ type: 'minor' });
}

/** Once at start-up of `remessa serve`. */
export function tuneMemory(): void {
  nativeModule()?.mallocTrimThreshold(MALLOC_TRIM_THRESHOLD);
  v8.setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
}
