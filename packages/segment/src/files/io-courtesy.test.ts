/**
 * Beside a live broker (io-courtesy.ts): a prepare leaves the page cache as it found it, the I/O
 * limit holds across the conversion threads, a prepare lowers its priority.
 */

import { spawnSync } from 'node:child_process';
import {
  closeSync,
  fsyncSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { mkdir, readdir, stat } from 'node:fs/promises';
import { getPriority, tmpdir } from 'node:os';
import path from 'node:path';
import { CompressionType } from '@seglift/format';
import { built, needs, program, requirement } from '@seglift/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { ConversionPool } from '../runs/pool.js';
import { prepareStage } from '../runs/two-phase.js';
import { prng, text, tmpDir, v2Batch } from '../test-support/fixtures.js';
import { recoveryIndexes } from '../test-support/independent.js';
import {
  dropFilePages,
  ioThrottle,
  PREPARE_IOPRIO_LEVEL,
  PREPARE_NICE,
  pageCacheResidency,
  ReadCourtesy,
  residentPages,
  setIoLimit,
  throttleIo,
} from './io-courtesy.js';

/** fsync then DONTNEED: `file` is on disk and out of the page cache (drop_caches, for one file). */
function makeCold(file: string): void {
  const fd = openSync(file, 'r+');
  try {
    fsyncSync(fd);
    dropFilePages(fd);
  } finally {
    closeSync(fd);
  }
}

/** Reads all of `file` (a consumer of the broker's): its pages are resident. */
function readAll(file: string): void {
  readFileSync(file);
}

/**
 * Evicting one file's pages (after an fsync) and seeing them with mincore is what the property
 * is about: the same effect as writing /proc/sys/vm/drop_caches, which needs root and a host
 * (not a container), but per file, so that the test never touches other processes' cache.
 * Not available on tmpfs (its pages cannot be dropped) or outside 64-bit Linux.
 */
const pageCache = requirement(
  'evictable page cache',
  'the page-cache test makes files cold with posix_fadvise(DONTNEED) after an fsync and reads residency with mincore (64-bit Linux, a disk filesystem for the temp dir, not tmpfs)',
  () => {
    const dir = path.join(tmpdir(), `seglift-pagecache-probe-${process.pid}`);
    const f = `${dir}.bin`;
    writeFileSync(f, Buffer.alloc(1 << 20, 7));
    try {
      makeCold(f);
      const fd = openSync(f, 'r');
      try {
        const cold = residentPages(fd, 1 << 20);
        if (cold === undefined) return 'mincore is not available here';
        if (cold.some((b) => b !== 0))
          return 'pages stay resident after fsync + POSIX_FADV_DONTNEED (tmpfs?)';
        readSync(fd, Buffer.alloc(1 << 20), 0, 1 << 20, 0);
        if (!residentPages(fd, 1 << 20)!.some((b) => b !== 0)) return 'mincore shows no page after a read';
      } finally {
        closeSync(fd);
      }
      return undefined;
    } finally {
      rmSync(f, { force: true });
    }
  },
);

const prefix = (base: bigint) => base.toString().padStart(20, '0');

/** A partition of `rolled` gzip segments of about `bytes` each, plus an active one. */
async function partition(
  dir: string,
  rolled: number,
  bytes: number,
): Promise<{ logs: string[]; active: string }> {
  await mkdir(dir, { recursive: true });
  const rand = prng(34);
  const logs: string[] = [];
  let next = 0n;
  for (let s = 0; s <= rolled; s++) {
    const parts: Uint8Array[] = [];
    const base = next;
    for (let size = 0; size < bytes; ) {
      // Random words compress about 3:1: a gzip segment about `bytes` long.
      const values = Array.from({ length: 50 }, () => text(rand, 600));
      const b = v2Batch(next, values, CompressionType.GZIP);
      parts.push(b);
      size += b.length;
      next += 50n;
    }
    const log = path.join(dir, `${prefix(base)}.log`);
    const seg = Buffer.concat(parts);
    writeFileSync(log, seg);
    const idx = recoveryIndexes(seg, base);
    writeFileSync(path.join(dir, `${prefix(base)}.index`), idx.index);
    writeFileSync(path.join(dir, `${prefix(base)}.timeindex`), idx.timeindex);
    logs.push(log);
  }
  return { logs: logs.slice(0, -1), active: logs[logs.length - 1] };
}

async function residency(files: string[]): Promise<{ resident: number; pages: number }> {
  let resident = 0;
  let pages = 0;
  for (const f of files) {
    const r = await pageCacheResidency(f);
    resident += r.resident;
    pages += r.pages;
  }
  return { resident, pages };
}

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true }))
    if (e.isFile()) out.push(path.join(e.parentPath, e.name));
  return out;
}

needs(pageCache).describe('prepare leaves the page cache as it found it', () => {
  it("cold sources and everything staged are dropped after use; the broker's hot files stay resident", async () => {
    const root = await tmpDir('seglift-pagecache-');
    const logDir = path.join(root, 'kafka-logs');
    const stageDir = path.join(root, 'stage');
    const { logs, active } = await partition(path.join(logDir, 'topic-0'), 5, 2 << 20);
    // Every file cold, as after `echo 1 > /proc/sys/vm/drop_caches`...
    for (const f of await filesUnder(logDir)) makeCold(f);
    // ...then the broker reads its hot data: the active segment, and the newest rolled one (a
    // consumer a little behind the tail), which prepare reads too.
    const hotSource = logs[logs.length - 1];
    readAll(active);
    readAll(hotSource);
    const cold = logs.slice(0, -1);
    expect((await residency(cold)).resident).toBe(0);
    const hot = await residency([active, hotSource]);
    expect(hot.resident).toBe(hot.pages);

    const r = await prepareStage(logDir, { codec: 'zstd', stageDir, nice: false });
    expect(r.counts).toMatchObject({ staged: 5, changed: 0 });

    const sources = await residency(cold);
    const stagedFiles = await filesUnder(stageDir);
    const staged = await residency(stagedFiles);
    // Each file's resident pages, should an assertion below fail.
    const detail = (
      await Promise.all(
        [...logs, active, ...stagedFiles].map(async (f) => {
          const r = await pageCacheResidency(f);
          return `${path.relative(root, f)} ${r.resident}/${r.pages}`;
        }),
      )
    ).join(', ');
    expect(staged.pages).toBeGreaterThan(100);
    // At most 10% (the partial pages at chunk edges; in practice none).
    expect(sources.resident, detail).toBeLessThanOrEqual(sources.pages / 10);
    expect(staged.resident, detail).toBeLessThanOrEqual(staged.pages / 10);
    expect(await residency([active, hotSource]), detail).toEqual(hot);
  }, 120_000);

  it('a reader drops only the pages it brought in, read-ahead past its last read included', async () => {
    const dir = await tmpDir('seglift-pagecache-');
    const f = path.join(dir, 'f');
    writeFileSync(f, Buffer.alloc(64 * 4096, 1));
    makeCold(f);
    const fd = openSync(f, 'r');
    try {
      // Pages 8..15 resident before (someone else's).
      readSync(fd, Buffer.alloc(8 * 4096), 0, 8 * 4096, 8 * 4096);
      const before = residentPages(fd, 64 * 4096)!;
      const c = ReadCourtesy.open(fd, 64 * 4096)!;
      readSync(fd, Buffer.alloc(32 * 4096), 0, 32 * 4096, 0);
      c.released(0, 32 * 4096);
      const after = residentPages(fd, 64 * 4096)!;
      for (let p = 0; p < 32; p++) expect([p, after[p]]).toEqual([p, before[p]]);
      c.close();
      expect(Array.from(residentPages(fd, 64 * 4096)!)).toEqual(Array.from(before));
    } finally {
      closeSync(fd);
    }
  });
});

describe('io.maxBytesPerSecond: one budget for the process', () => {
  afterEach(() => setIoLimit(undefined));

  it('a prepare on two threads under a limit of L takes at least (bytes read and written) / L, and stages everything', async () => {
    const root = await tmpDir('seglift-iolimit-');
    const logDir = path.join(root, 'kafka-logs');
    const stageDir = path.join(root, 'stage');
    const { logs } = await partition(path.join(logDir, 'topic-0'), 3, 1 << 20);
    let sourceBytes = 0;
    for (const l of logs) sourceBytes += (await stat(l)).size;
    const limit = 2 << 20;
    setIoLimit(limit);
    const started = performance.now();
    const r = await prepareStage(logDir, { codec: 'zstd', stageDir, nice: false, concurrency: 2 });
    const seconds = (performance.now() - started) / 1000;
    expect(r.counts).toMatchObject({ staged: 3, changed: 0 });
    expect(r.summary.failed).toBe(0);
    const t = ioThrottle()!;
    // Every source read twice (the conversion, verify) and the new files written and read back.
    expect(t.bytes).toBeGreaterThanOrEqual(2 * sourceBytes);
    expect(t.waitedMs).toBeGreaterThan(0);
    // A lower bound only (a loaded machine is slower, never faster): the two threads shared one
    // budget (one per thread would have taken half as long), less the one burst it allows.
    expect(seconds).toBeGreaterThanOrEqual(t.bytes / limit - 0.1);
    expect(seconds).toBeGreaterThanOrEqual(sourceBytes / limit);
  }, 120_000);

  it("without a limit nothing waits; with one, each caller waits its bytes' share in turn", async () => {
    expect(throttleIo(1 << 30)).toBeUndefined();
    expect(ioThrottle()).toBeUndefined();
    setIoLimit(10 << 20);
    const started = performance.now();
    // 4 callers at once, 1 MiB each, at 10 MiB/s: 0.4 s of budget, less the 0.1 s burst.
    await Promise.all([0, 1, 2, 3].map(() => throttleIo(1 << 20)));
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
    expect(ioThrottle()).toMatchObject({ maxBytesPerSecond: 10 << 20, bytes: 4 << 20 });
    expect(() => setIoLimit(0)).toThrow('io.maxBytesPerSecond must be a positive integer, not 0');
  });
});

const ionice = program(
  'ionice',
  ['-p', String(process.pid)],
  "the test reads each thread's I/O priority with ionice (util-linux)",
);
const dist = built(path.resolve(import.meta.dirname, '../../dist/index.js'));

needs(ionice, dist).describe("prepare's priority", () => {
  it("lowerPriority('process') gives every thread, and threads started after, nice 10 and best-effort 6", () => {
    // In a child: a thread's nice value cannot be raised back, and this one runs other tests.
    const script = `
      const { lowerPriority } = await import(${JSON.stringify(path.resolve(import.meta.dirname, '../../dist/index.js'))});
      const { Worker } = await import('node:worker_threads');
      const { readdirSync, readFileSync } = await import('node:fs');
      const { execFileSync } = await import('node:child_process');
      lowerPriority('process');
      const w = new Worker('setTimeout(() => {}, 2000)', { eval: true });
      await new Promise((r) => w.once('online', r));
      const out = readdirSync('/proc/self/task').map((tid) => {
        const stat = readFileSync('/proc/self/task/' + tid + '/stat', 'utf8');
        const nice = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
        return { nice, io: execFileSync('ionice', ['-p', tid], { encoding: 'utf8' }).trim() };
      });
      console.log(JSON.stringify(out));
      process.exit(0);
    `;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    const threads = JSON.parse(r.stdout) as { nice: number; io: string }[];
    expect(threads.length).toBeGreaterThan(5);
    // Never raised: under a `nice` of more than 10 the threads keep theirs.
    const nice = Math.max(PREPARE_NICE, getPriority());
    for (const t of threads) expect(t).toEqual({ nice, io: `best-effort: prio ${PREPARE_IOPRIO_LEVEL}` });
  });
});

/** The nice value of each thread of this process. */
function threadNices(): number[] {
  return readdirSync('/proc/self/task').map((tid) => {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
  });
}

needs(dist).it(
  "a pool thread converting into a stage (a worker's prepare job) lowers itself, and only itself",
  async () => {
    const dir = await tmpDir('seglift-nice-');
    const { logs } = await partition(path.join(dir, 'topic-0'), 1, 64 << 10);
    const stage = path.join(dir, 'stage', 'topic-0');
    await mkdir(stage, { recursive: true });
    const lowered = (ns: number[]) => ns.filter((n) => n === PREPARE_NICE).length;
    const before = threadNices();
    const base = Math.max(...before);
    const pool = new ConversionPool({ size: 1 });
    try {
      const r = await pool.convert(logs[0], { codec: 'zstd' }, { kind: 'stage', dir: stage });
      expect([r.result, r.stage]).toEqual(['converted', 'staged']);
      const after = threadNices();
      // The converting thread and no other (under a `nice` of 10 or more already: none raised).
      if (base < PREPARE_NICE) expect(lowered(after) - lowered(before)).toBe(1);
      else expect(after.every((n) => n === base)).toBe(true);
    } finally {
      await pool.close();
    }
  },
);
