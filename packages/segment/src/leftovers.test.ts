import { cp, readFile, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { convertSegment } from './convert.js';
import { recoverLeftovers } from './leftovers.js';
import { acquireSegmentLock } from './lock.js';
import { SimulatedCrash, type SwapStep } from './swap.js';
import { mixedSegment, tmpDir, writeSegment } from './test-support/fixtures.js';
import { ls, mtime, sha256 } from './test-support/helpers.js';
import { independentRecords, kafkaCompleteSwaps, recoveryIndexes } from './test-support/independent.js';

const OLD = new Date('2018-01-02T03:04:05.000Z');
const FILES = [
  '00000000000000000000.index',
  '00000000000000000000.log',
  '00000000000000000000.snapshot',
  '00000000000000000000.timeindex',
  '00000000000000000000.txnindex',
];

async function setup() {
  const seg = mixedSegment();
  const dir = await tmpDir();
  const log = await writeSegment(dir, seg.bytes);
  const pdir = path.dirname(log);
  await writeFile(path.join(pdir, '00000000000000000000.index'), Buffer.alloc(8, 9));
  await writeFile(path.join(pdir, '00000000000000000000.timeindex'), Buffer.alloc(12, 9));
  await writeFile(path.join(pdir, '00000000000000000000.txnindex'), Buffer.alloc(34, 1));
  await writeFile(path.join(pdir, '00000000000000000000.snapshot'), Buffer.alloc(20, 2));
  await utimes(log, OLD, OLD);
  return { seg, dir, log, pdir };
}

const STEPS: ('write' | 'verify' | SwapStep)[] = [
  'write',
  'verify',
  'marker',
  'extras',
  'log-swap',
  'index-swaps',
  'log-renamed',
  'renamed',
];

describe('crash at every step', () => {
  for (const step of STEPS) {
    it(`after ${step}: recoverLeftovers gives the original or the verified replacement; so does a broker`, async () => {
      const { seg, dir, log, pdir } = await setup();
      const original = await sha256(log);
      const expectedRecords = await independentRecords(seg.bytes);
      await expect(
        convertSegment(log, { codec: 'zstd', inPlace: true, testHooks: { crashAfter: step } }),
      ).rejects.toBeInstanceOf(SimulatedCrash);
      const copy = path.join(dir, 'broker');
      await cp(pdir, copy, { recursive: true });
      const report = await recoverLeftovers(pdir);
      expect(await ls(pdir)).toEqual(FILES);
      expect(await readFile(path.join(pdir, '00000000000000000000.txnindex'))).toEqual(Buffer.alloc(34, 1));
      expect(await readFile(path.join(pdir, '00000000000000000000.snapshot'))).toEqual(Buffer.alloc(20, 2));
      const rolledBack = ['write', 'verify', 'marker', 'extras'].includes(step);
      if (rolledBack) {
        expect(await sha256(log)).toBe(original);
        expect(await readFile(path.join(pdir, '00000000000000000000.index'))).toEqual(Buffer.alloc(8, 9));
        expect(report.completed).toEqual([]);
      } else {
        expect(report.completed).toEqual(['00000000000000000000']);
        const out = await readFile(log);
        expect(await independentRecords(out)).toEqual(expectedRecords);
        const idx = recoveryIndexes(out, 0n);
        expect(await readFile(path.join(pdir, '00000000000000000000.index'))).toEqual(idx.index);
        expect(await readFile(path.join(pdir, '00000000000000000000.timeindex'))).toEqual(idx.timeindex);
        expect(await mtime(log)).toBe(OLD.getTime());
      }
      // A second recovery has nothing to do.
      expect(await recoverLeftovers(pdir)).toMatchObject({ removed: [], completed: [], rolledBack: [] });

      // A broker starting on the crashed directory instead: consistent too, txnindex kept.
      await kafkaCompleteSwaps(copy);
      const blog = path.join(copy, '00000000000000000000.log');
      const bytes = await readFile(blog);
      expect(await independentRecords(bytes)).toEqual(expectedRecords);
      expect(await readFile(path.join(copy, '00000000000000000000.txnindex'))).toEqual(Buffer.alloc(34, 1));
      const names = await ls(copy);
      if ((await sha256(blog)) === original) {
        expect(await readFile(path.join(copy, '00000000000000000000.index'))).toEqual(Buffer.alloc(8, 9));
      } else if (names.includes('00000000000000000000.index')) {
        expect(await readFile(path.join(copy, '00000000000000000000.index'))).toEqual(
          recoveryIndexes(bytes, 0n).index,
        );
      }
      expect(names.filter((n) => n.endsWith('.swap'))).toEqual([]);
    });
  }
});

describe('recoverLeftovers', () => {
  it('leaves foreign .swap files and locked segments alone, removes stale temp files', async () => {
    const { log, pdir } = await setup();
    await writeFile(path.join(pdir, '00000000000000000000.log.seglift-tmp'), 'x');
    await writeFile(path.join(pdir, '00000000000000000100.log.swap'), 'kafka');
    const lock = await acquireSegmentLock(path.join(pdir, '00000000000000000200.log'));
    await writeFile(path.join(pdir, '00000000000000000200.index.seglift-tmp'), 'y');
    const r = await recoverLeftovers(pdir);
    expect(r).toMatchObject({
      removed: ['00000000000000000000.log.seglift-tmp'],
      foreignSwaps: ['00000000000000000100.log.swap'],
      locked: ['00000000000000000200'],
    });
    await lock.release();
    expect((await recoverLeftovers(pdir)).removed).toEqual(['00000000000000000200.index.seglift-tmp']);
    // convertSegment refuses a partition with a Kafka swap in progress.
    const c = await convertSegment(log, { codec: 'zstd', inPlace: true });
    expect(c.result).toBe('failed');
    expect(c.reason).toContain('00000000000000000100.log.swap');
  });

  it('a lock held by a live run blocks a second conversion; a stale one is taken over', async () => {
    const { log } = await setup();
    const lock = await acquireSegmentLock(log);
    const r = await convertSegment(log, { codec: 'zstd', inPlace: true });
    expect(r.error?.code).toBe('IO');
    expect(r.reason).toContain(`pid ${process.pid}`);
    await lock.release();
    await writeFile(
      `${log.slice(0, -4)}.log.seglift.lock`,
      JSON.stringify({
        pid: 2 ** 22 + 7,
        host: (await import('node:os')).hostname(),
        token: 't',
        startedAt: 'x',
      }),
    );
    expect((await convertSegment(log, { codec: 'zstd', inPlace: true })).result).toBe('converted');
  });
});
