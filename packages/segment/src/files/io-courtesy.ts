/**
 * What seglift owes a broker it runs beside (docs/operator-guide.md, "Beside a live broker"):
 *
 * - The page cache as it was found. The broker's page cache serves its consumers at the tail and
 *   absorbs its produce writes; a prepare reading terabytes of old segments would evict all of it.
 *   A reader takes a `mincore` snapshot of its file when it opens it and, after each read, drops
 *   (`posix_fadvise(POSIX_FADV_DONTNEED)`) the pages of that range that were not resident before:
 *   the ones seglift itself brought in, never the broker's hot ones. The snapshot is chosen over
 *   "drop what we read" because a recently rolled segment is exactly what a lagging consumer
 *   reads. Files seglift writes are new: they are dropped whole once fsynced and verified
 *   (DONTNEED leaves dirty pages alone, so only after the fsync).
 * - One I/O budget per process (io.maxBytesPerSecond, Kafka's log.cleaner.io.max.bytes.per.second):
 *   a token bucket in a SharedArrayBuffer that every conversion thread draws from, counting bytes
 *   read and written.
 * - A lower CPU and I/O priority for prepare (nice 10, ioprio best-effort 6: the level the kernel
 *   derives from nice 10 when no I/O class is set).
 *
 * Linux only, through koffi (libc.ts); elsewhere the page-cache and priority calls do nothing.
 */
import { readdirSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { getPriority, setPriority } from 'node:os';
import { koffi, libcLibrary } from './libc.js';

const POSIX_FADV_RANDOM = 1;
const POSIX_FADV_DONTNEED = 4;
const PROT_READ = 1;
const MAP_SHARED = 1;
const SC_PAGESIZE = 30;
const MAP_FAILED = 0xffffffffffffffffn;

interface CacheCalls {
  pageSize: number;
  mmap(addr: null, length: number, prot: number, flags: number, fd: number, offset: number): unknown;
  munmap(addr: unknown, length: number): number;
  mincore(addr: unknown, length: number, vec: Uint8Array): number;
  fadvise(fd: number, offset: number, len: number, advice: number): number;
  syscall(nr: number, ...typedArgs: unknown[]): number;
}

let calls: CacheCalls | null | undefined;

/** The libc calls, or null where there are none (not 64-bit Linux, or koffi failed to load). */
function cacheCalls(): CacheCalls | null {
  if (calls !== undefined) return calls;
  try {
    const lib = libcLibrary('page-cache courtesy');
    const sysconf = lib.func('sysconf', 'long', ['int']);
    calls = {
      pageSize: Number(sysconf(SC_PAGESIZE)),
      mmap: lib.func('mmap', 'void *', ['void *', 'size_t', 'int', 'int', 'int', 'int64']),
      munmap: lib.func('munmap', 'int', ['void *', 'size_t']),
      mincore: lib.func('mincore', 'int', ['void *', 'size_t', 'uint8_t *']),
      fadvise: lib.func('posix_fadvise', 'int', ['int', 'int64', 'int64', 'int']),
      syscall: lib.func('long syscall(long, ...)'),
    };
  } catch {
    calls = null;
  }
  return calls;
}

/**
 * Which pages of the open file `fd` (`size` bytes) are in the page cache now: one byte per page,
 * 1 when resident. A shared read-only mapping is never faulted in, so looking loads nothing.
 * Undefined where it cannot be told.
 */
export function residentPages(fd: number, size: number): Uint8Array | undefined {
  const c = cacheCalls();
  if (c === null) return undefined;
  const pages = Math.ceil(size / c.pageSize);
  if (pages === 0) return new Uint8Array(0);
  const map = c.mmap(null, size, PROT_READ, MAP_SHARED, fd, 0);
  if (koffi().address(map) === MAP_FAILED) return undefined;
  try {
    const vec = new Uint8Array(pages);
    if (c.mincore(map, size, vec) !== 0) return undefined;
    for (let i = 0; i < pages; i++) vec[i] &= 1;
    return vec;
  } finally {
    c.munmap(map, size);
  }
}

/** Resident pages of `file` and its pages in all (tests, the bench): fincore's two numbers. */
export async function pageCacheResidency(file: string): Promise<{ resident: number; pages: number }> {
  const fh = await open(file, 'r');
  try {
    const v = residentPages(fh.fd, (await fh.stat()).size);
    if (v === undefined) throw new Error(`cannot tell the page-cache residency of ${file} here`);
    let resident = 0;
    for (const b of v) resident += b;
    return { resident, pages: v.length };
  } finally {
    await fh.close();
  }
}

/**
 * The pages a reader of one file brings into the page cache, dropped as it goes: `released`
 * after each read, `close` when done (the kernel's read-ahead past the last read too). Pages
 * resident when it was opened are left: someone else (the broker) is using them.
 */
export class ReadCourtesy {
  private constructor(
    private readonly fd: number,
    private readonly before: Uint8Array,
    private readonly pageSize: number,
  ) {}

  /**
   * For the open file `fd` of `size` bytes; undefined where the page cache cannot be looked at.
   * The kernel's read-ahead is turned off for this descriptor (POSIX_FADV_RANDOM; the broker's
   * own descriptors keep theirs): a read-ahead still in flight when its range is dropped lands
   * in the page cache afterwards and stays (measured: half of an 8 MiB segment, now and then).
   * The reader reads ahead a whole chunk itself, so nothing is slower for it.
   */
  static open(fd: number, size: number): ReadCourtesy | undefined {
    const before = residentPages(fd, size);
    if (before === undefined) return undefined;
    const c = cacheCalls()!;
    c.fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
    return new ReadCourtesy(fd, before, c.pageSize);
  }

  /** Bytes [position, position + length) were read and are no longer needed. */
  released(position: number, length: number): void {
    // Whole pages only: the next read starts in a page this one ended in.
    const from = Math.ceil(position / this.pageSize);
    const to = Math.floor((position + length) / this.pageSize);
    this.dropNew(from, to);
  }

  /** Everything this reader brought in, read-ahead included. */
  close(): void {
    this.dropNew(0, Number.MAX_SAFE_INTEGER);
  }

  /** DONTNEED on each run of pages in [from, to) that were not resident at open. */
  private dropNew(from: number, to: number): void {
    const { before, pageSize } = this;
    const c = cacheCalls()!;
    let run = -1;
    const flush = (end: number) => {
      if (run < 0) return;
      // A page past the file's end at open: len 0 means "to the end of the file".
      const len = end === Number.MAX_SAFE_INTEGER ? 0 : (end - run) * pageSize;
      c.fadvise(this.fd, run * pageSize, len, POSIX_FADV_DONTNEED);
      run = -1;
    };
    const last = Math.min(to, before.length);
    for (let p = from; p < last; p++) {
      if (before[p] === 0) {
        if (run < 0) run = p;
      } else flush(p);
    }
    if (to > before.length) {
      // Pages past the snapshot (a file that grew) were not resident before either.
      if (run < 0) run = Math.max(from, before.length);
      flush(to);
    } else flush(last);
  }
}

/**
 * Drops `file`'s pages from the page cache: a file seglift wrote (nobody else has read it yet),
 * called once it is fsynced. A file already gone is no error.
 */
export async function dropWrittenFile(file: string): Promise<void> {
  if (cacheCalls() === null) return;
  const fh = await open(file, 'r').catch(() => undefined);
  if (fh === undefined) return;
  try {
    dropFilePages(fh.fd);
  } finally {
    await fh.close();
  }
}

/** DONTNEED on the whole open file `fd` (its clean pages: a dirty one stays until written). */
export function dropFilePages(fd: number): void {
  cacheCalls()?.fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
}

// ---------------------------------------------------------------------------------------------
// The I/O budget.

/** Int64 slots of the shared budget. */
const RATE = 0;
/** Theoretical arrival time (GCRA): when the bytes granted so far are paid for, in ns. */
const TAT = 1;
const WAITED_NS = 2;
const BYTES = 3;
const SLOTS = 4;
/**
 * How far behind the schedule a quiet thread may start (its burst): a read that took its own time
 * on a slow disk is not made to wait that time again, and an idle budget saves up no more than this.
 */
const BURST_NS = 100_000_000n;

let budget: BigInt64Array | undefined;

/**
 * Sets this process's I/O limit (undefined: none) before its conversion threads start; they share
 * it (`threadInit`). Bytes read and written by every reader and writer count against it.
 */
export function setIoLimit(maxBytesPerSecond: number | undefined): void {
  if (maxBytesPerSecond === undefined) {
    budget = undefined;
    return;
  }
  if (!Number.isSafeInteger(maxBytesPerSecond) || maxBytesPerSecond < 1)
    throw new RangeError(`io.maxBytesPerSecond must be a positive integer, not ${maxBytesPerSecond}`);
  budget = new BigInt64Array(new SharedArrayBuffer(SLOTS * 8));
  budget[RATE] = BigInt(maxBytesPerSecond);
  budget[TAT] = process.hrtime.bigint();
}

/** What a conversion thread is started with: the process's budget and priority rule. */
export interface IoThreadInit {
  ioBudget?: SharedArrayBuffer;
  /** Lower the thread's priority while it converts into a stage (prepare.nice). */
  nicePrepare?: boolean;
}

let nicePrepare = true;

/** Whether prepare lowers its priority (prepare.nice; default true). */
export function setPrepareNice(on: boolean): void {
  nicePrepare = on;
}

export function prepareNice(): boolean {
  return nicePrepare;
}

export function threadInit(): IoThreadInit {
  return { ioBudget: budget?.buffer as SharedArrayBuffer | undefined, nicePrepare };
}

/** In a conversion thread: the budget and rule its process set (threadInit). */
export function joinThreadInit(init: IoThreadInit | undefined): void {
  budget = init?.ioBudget === undefined ? undefined : new BigInt64Array(init.ioBudget);
  nicePrepare = init?.nicePrepare ?? true;
}

/**
 * Counts `bytes` just read or written against the budget and waits, when over it, until they are
 * paid for. Without a limit: nothing, at once.
 */
export function throttleIo(bytes: number): Promise<void> | undefined {
  const b = budget;
  if (b === undefined || bytes <= 0) return undefined;
  const cost = (BigInt(bytes) * 1_000_000_000n) / b[RATE];
  const now = process.hrtime.bigint();
  let next: bigint;
  for (;;) {
    const tat = Atomics.load(b, TAT);
    const floor = now - BURST_NS;
    next = (tat > floor ? tat : floor) + cost;
    if (Atomics.compareExchange(b, TAT, tat, next) === tat) break;
  }
  Atomics.add(b, BYTES, BigInt(bytes));
  const wait = next - now;
  if (wait <= 0n) return undefined;
  Atomics.add(b, WAITED_NS, wait);
  return new Promise((resolve) => setTimeout(resolve, Number((wait + 999_999n) / 1_000_000n)));
}

/** The limit and what it did so far (the progress bar and summary name it when it throttled). */
export interface IoThrottle {
  maxBytesPerSecond: number;
  /** Bytes counted. */
  bytes: number;
  /** Time the readers and writers of every thread waited for the budget, added up. */
  waitedMs: number;
}

export function ioThrottle(): IoThrottle | undefined {
  const b = budget;
  if (b === undefined) return undefined;
  return {
    maxBytesPerSecond: Number(b[RATE]),
    bytes: Number(Atomics.load(b, BYTES)),
    waitedMs: Number(Atomics.load(b, WAITED_NS) / 1_000_000n),
  };
}

// ---------------------------------------------------------------------------------------------
// Priority.

/** nice(1)'s default increment: below the broker, above idle. */
export const PREPARE_NICE = 10;
const IOPRIO_WHO_PROCESS = 1;
const IOPRIO_CLASS_BE = 2;
const IOPRIO_CLASS_SHIFT = 13;
/** The best-effort level the kernel gives nice 10 when no I/O class is set ((nice + 20) / 5). */
export const PREPARE_IOPRIO_LEVEL = 6;
const IOPRIO_CLASS_IDLE = 3;
const SYS_IOPRIO: Partial<Record<string, { set: number; get: number }>> = {
  x64: { set: 251, get: 252 },
  arm64: { set: 30, get: 31 },
};

/** Whether the I/O priority `ioprio` (ioprio_get's) is already as low as prepare's, or lower. */
function lowIoPriority(ioprio: number): boolean {
  const cls = ioprio >> IOPRIO_CLASS_SHIFT;
  return cls === IOPRIO_CLASS_IDLE || (cls === IOPRIO_CLASS_BE && (ioprio & 0xff) >= PREPARE_IOPRIO_LEVEL);
}

/**
 * Lowers the priority of this process (every thread it has now; threads started later inherit it
 * from the one starting them) or of the calling thread only: nice PREPARE_NICE, and I/O class
 * best-effort PREPARE_IOPRIO_LEVEL (which only schedulers that weigh it, BFQ, honour). Never
 * raises a priority; what cannot be done (not Linux) is left.
 */
export function lowerPriority(scope: 'process' | 'thread'): void {
  const tids =
    scope === 'thread'
      ? [0]
      : (() => {
          try {
            return readdirSync('/proc/self/task').map(Number);
          } catch {
            return [0];
          }
        })();
  const c = cacheCalls();
  const nr = SYS_IOPRIO[process.arch];
  for (const tid of tids) {
    try {
      if (getPriority(tid) < PREPARE_NICE) setPriority(tid, PREPARE_NICE);
    } catch {
      // The thread ended meanwhile, or no permission: left as it is.
    }
    if (
      c !== null &&
      nr !== undefined &&
      !lowIoPriority(c.syscall(nr.get, 'int', IOPRIO_WHO_PROCESS, 'int', tid))
    )
      c.syscall(
        nr.set,
        'int',
        IOPRIO_WHO_PROCESS,
        'int',
        tid,
        'int',
        (IOPRIO_CLASS_BE << IOPRIO_CLASS_SHIFT) | PREPARE_IOPRIO_LEVEL,
      );
  }
}
