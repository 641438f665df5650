import { cp, readFile, rm, utimes } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { built, needs } from '@seglift/testkit';
import { describe, expect, it } from 'vitest';
import { mixedSegment, tmpDir, v2Batch, writeSegment } from '../test-support/fixtures.js';
import { independentRecords, repoRoot } from '../test-support/independent.js';
import { type MigrateProgress, migrate } from './migrate.js';

/** The worker_threads pool runs dist/conversion-thread.js (`pnpm build` first). */
const needsPool = needs(built(path.join(repoRoot, 'packages/segment/dist/conversion-thread.js')));

const OLD = new Date('2017-05-06T07:08:09.000Z');

async function cluster() {
  const root = await tmpDir();
  const expected = new Map<string, Awaited<ReturnType<typeof independentRecords>>>();
  for (const [partition, bases] of [
    ['orders-0', [0n, 1000n, 5000n]],
    ['orders-1', [0n, 2000n]],
    ['audit-0', [0n]],
  ] as const) {
    for (const base of bases) {
      const seg = mixedSegment(base, Number(base) + partition.length);
      const log = await writeSegment(path.join(root, 'logdir'), seg.bytes, base, partition);
      await utimes(log, OLD, OLD);
      expected.set(log, await independentRecords(seg.bytes));
    }
  }
  // One segment already converted: skipped.
  const done = await writeSegment(
    path.join(root, 'logdir'),
    v2Batch(0n, [Buffer.from('z')], 4),
    0n,
    'done-0',
  );
  await writeSegment(path.join(root, 'logdir'), v2Batch(9n, [Buffer.from('z')], 0), 9n, 'done-0');
  return { root, expected, done };
}

async function check(mode: 'threads' | 'inline') {
  const { root, expected, done } = await cluster();
  const progress: MigrateProgress[] = [];
  const res = await migrate([path.join(root, 'logdir')], {
    codec: 'zstd',
    mode,
    concurrency: 3,
    onProgress: (p) => progress.push(p),
  });
  expect(res.mode).toBe(mode);
  expect(res.partitions).toBe(4);
  expect(res.summary).toMatchObject({ segments: 8, converted: 3, skipped: 5, failed: 0 });
  const byPath = new Map(res.reports.map((r) => [r.path, r]));
  expect(byPath.get(done)?.reason).toBe('already-target-codec');
  for (const [log, records] of expected) {
    const r = byPath.get(log)!;
    const active = r.reason === 'active-segment';
    expect(r.result).toBe(active ? 'skipped' : 'converted');
    if (!active) expect(await independentRecords(await readFile(log))).toEqual(records);
  }
  const last = progress.at(-1)!;
  expect(last.segmentsDone).toBe(4);
  expect(last.bytesDone).toBe(last.bytesTotal);
}

describe('migrate', () => {
  it('in process: converts every non-active segment, skips active and already-converted ones', async () => {
    await check('inline');
  });
  needsPool.it('worker_threads pool from dist (run `pnpm build` first)', async () => {
    await check('threads');
  });
});

describe('migrate thread pool', () => {
  needsPool.it('a dead thread fails its segment with the reason; the run goes on (dist)', async () => {
    const { root } = await cluster();
    const victim = path.join(root, 'logdir', 'orders-0', '00000000000000001000.log');
    const before = await readFile(victim);
    process.env.SEGLIFT_TEST_THREAD_CRASH = 'orders-0/00000000000000001000.log';
    try {
      const res = await migrate([path.join(root, 'logdir')], {
        codec: 'zstd',
        mode: 'threads',
        concurrency: 2,
      });
      expect(res.summary).toMatchObject({ segments: 8, converted: 2, skipped: 5, failed: 1 });
      const failed = res.reports.find((r) => r.result === 'failed')!;
      expect(failed.path).toBe(victim);
      expect(failed.reason).toMatch(/conversion thread died: exit code 70/);
      expect(failed.error).toMatchObject({ code: 'IO', file: victim });
      expect(await readFile(victim)).toEqual(before);
    } finally {
      delete process.env.SEGLIFT_TEST_THREAD_CRASH;
    }
  });
});

describe('migrate without the conversion thread', () => {
  needsPool.it(
    'a build without dist/conversion-thread.js is refused before anything is converted, as the pool refuses it (never converted in process one at a time)',
    async () => {
      // The package's dist/ as built, less the thread's bundle, where it still resolves its
      // dependencies (under the package's node_modules).
      const copy = path.join(repoRoot, 'packages/segment/node_modules', `.seglift-no-thread-${process.pid}`);
      await cp(path.join(repoRoot, 'packages/segment/dist'), path.join(copy, 'dist'), { recursive: true });
      try {
        await rm(path.join(copy, 'dist/conversion-thread.js'));
        const withoutThread = (await import(pathToFileURL(path.join(copy, 'dist/index.js')).href)) as {
          migrate: typeof migrate;
        };
        const { root, expected } = await cluster();
        const before = new Map<string, Buffer>();
        for (const log of expected.keys()) before.set(log, await readFile(log));
        await expect(withoutThread.migrate([path.join(root, 'logdir')], { codec: 'zstd' })).rejects.toThrow(
          'dist/conversion-thread.js is missing: run `pnpm build`',
        );
        for (const [log, bytes] of before) expect(await readFile(log), log).toEqual(bytes);
        // Asked for in process, it still converts.
        const inline = await withoutThread.migrate([path.join(root, 'logdir')], {
          codec: 'zstd',
          mode: 'inline',
        });
        expect(inline).toMatchObject({ mode: 'inline', summary: { converted: 3, failed: 0 } });
      } finally {
        await rm(copy, { recursive: true, force: true });
      }
    },
  );
});

describe('migrate scheduling', () => {
  needsPool.it('threads take the largest segments first; reports stay in discovery order', async () => {
    const root = await tmpDir();
    const sizes = [3, 40, 12, 25];
    const logs: string[] = [];
    for (const [i, n] of sizes.entries()) {
      const p = `t-${i}`;
      const records = Array.from({ length: n }, (_, k) => Buffer.from(`value ${k} `.repeat(20)));
      logs.push(await writeSegment(path.join(root, 'logdir'), v2Batch(0n, records, 1), 0n, p));
      // The active segment of each partition: skipped.
      await writeSegment(path.join(root, 'logdir'), v2Batch(BigInt(n), [Buffer.from('a')], 1), BigInt(n), p);
    }
    const started: string[] = [];
    const res = await migrate([path.join(root, 'logdir')], {
      codec: 'zstd',
      mode: 'threads',
      concurrency: 1,
      onSegment: (r) => {
        if (r.result === 'converted') started.push(r.path);
      },
    });
    expect(res.summary).toMatchObject({ converted: 4, failed: 0 });
    expect(started).toEqual([logs[1], logs[3], logs[2], logs[0]]);
    expect(res.reports.filter((r) => r.result === 'converted').map((r) => r.path)).toEqual(logs);
  });
});
