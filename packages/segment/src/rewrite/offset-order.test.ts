/**
 * Issue 32 item 6: a segment whose offsets go backwards is refused by every conversion as verify
 * refuses it (its words, the file, the entry's position and offset), never converted with exit 0.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { CompressionType } from '@seglift/format';
import { encodeLegacyEntry } from '@seglift/legacy';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { convertSegment } from '../placements/convert.js';
import { commitStage, prepareStage } from '../runs/two-phase.js';
import { tmpDir, v2Batch, writeSegment } from '../test-support/fixtures.js';
import { ls, sha256 } from '../test-support/helpers.js';
import { OffsetOrder } from './entry.js';
import { verifySegment } from './verify.js';

const values = (n: number) => Array.from({ length: n }, (_, i) => Buffer.from(`value ${i} `.repeat(8)));

/** Batches at 50..67 then 24..29, then a segment after it (so that it is not the active one). */
async function backwards(codec: number): Promise<{ logDir: string; log: string; at: number }> {
  const logDir = path.join(await tmpDir(), 'kafka-logs');
  const first = v2Batch(50n, values(18), codec);
  const bytes = Buffer.concat([first, v2Batch(24n, values(6), codec)]);
  const log = await writeSegment(logDir, bytes, 0n, 't-0');
  await writeSegment(logDir, v2Batch(100n, values(1), CompressionType.ZSTD), 100n, 't-0');
  return { logDir, log, at: first.length };
}

const refusal = (log: string, at: number) => ({
  result: 'failed',
  error: {
    name: 'CorruptRecordError',
    code: 'CORRUPT_RECORD',
    message: 'offset 24 does not follow 67',
    file: log,
    position: at,
    offset: '24',
  },
});

describe('offsets that go backwards', () => {
  it('verify says so; convert --in-place, --out and an already-target-codec check refuse it in its words', async () => {
    for (const codec of [CompressionType.GZIP, CompressionType.ZSTD]) {
      const { logDir, log, at } = await backwards(codec);
      const v = await verifySegment(log);
      expect(v.problems).toEqual([
        { kind: 'offsets', message: 'offset 24 does not follow 67', file: log, position: at, offset: '24' },
      ]);
      const before = await sha256(log);
      const inPlace = await convertSegment(log, { codec: 'zstd' }, { kind: 'inPlace' });
      expect(inPlace).toMatchObject(refusal(log, at));
      const outDir = path.join(path.dirname(logDir), 'out');
      const out = await convertSegment(log, { codec: 'zstd' }, { kind: 'outDir', dir: outDir });
      expect(out).toMatchObject(refusal(log, at));
      expect(await sha256(log)).toBe(before);
      expect(await ls(path.join(logDir, 't-0'))).toEqual([
        '00000000000000000000.log',
        '00000000000000000100.log',
      ]);
    }
  });

  it('a legacy entry after a v2 batch that ends past it is refused too', async () => {
    const logDir = path.join(await tmpDir(), 'kafka-logs');
    const first = v2Batch(10n, values(5), CompressionType.NONE);
    const legacy = encodeLegacyEntry(12n, { magic: 1, key: null, value: Buffer.from('late') });
    const log = await writeSegment(logDir, Buffer.concat([first, legacy]), 0n, 't-0');
    const r = await convertSegment(
      log,
      { codec: 'zstd' },
      { kind: 'outDir', dir: path.join(path.dirname(logDir), 'out') },
    );
    expect(r.error).toMatchObject({
      code: 'CORRUPT_RECORD',
      message: 'offset 12 does not follow 14',
      file: log,
      position: first.length,
      offset: '12',
    });
  });

  it('the two-phase migration stages nothing for it, and its commit refuses it', async () => {
    const { logDir, log, at } = await backwards(CompressionType.GZIP);
    const before = await readFile(log);
    const stageDir = path.join(path.dirname(logDir), 'stage');
    const prepared = await prepareStage(logDir, { codec: 'zstd', mode: 'inline', stageDir });
    expect(prepared.counts.staged).toBe(0);
    expect(prepared.reports).toMatchObject([refusal(log, at)]);
    const committed = await commitStage(logDir, { codec: 'zstd', mode: 'inline', stageDir });
    // The active segment (skipped) is reported first, then the refusal.
    expect(committed.reports).toMatchObject([{ result: 'skipped' }, refusal(log, at)]);
    expect(committed.summary).toMatchObject({ converted: 0, failed: 1 });
    expect(await readFile(log)).toEqual(before);
  });
});

describe('OffsetOrder', () => {
  /** What it checks, in bigints only: each entry's first offset above the last one's last. */
  function reference(entries: { first: bigint; last: bigint }[]): string | undefined {
    let last: bigint | undefined;
    for (const e of entries) {
      if (last !== undefined && e.first <= last) return `offset ${e.first} does not follow ${last}`;
      last = e.last;
    }
    return undefined;
  }

  it('a legacy entry read without a BigInt (followAt) is judged as in bigints, around 0, 2^32, 2^53 and the int64 ends', () => {
    const edges = [
      0n,
      1n,
      2n ** 32n - 1n,
      2n ** 32n,
      2n ** 53n - 2n,
      2n ** 53n - 1n,
      2n ** 53n,
      2n ** 63n - 1n,
      -1n,
      -(2n ** 63n),
    ];
    const offset = fc.oneof(
      fc.constantFrom(...edges),
      fc.bigInt(-5n, 2n ** 33n),
      fc.bigInt(2n ** 53n - 6n, 2n ** 53n + 6n),
      fc.bigInt(-(2n ** 63n), 2n ** 63n - 1n),
    );
    // A legacy entry holds one offset; a v2 batch a range (first <= last, or not: a corrupt one).
    const entry = fc.oneof(
      offset.map((o) => ({ legacy: true, first: o, last: o })),
      fc.tuple(offset, fc.bigInt(0n, 40n)).map(([o, d]) => ({ legacy: false, first: o, last: o + d })),
    );
    fc.assert(
      fc.property(fc.array(entry, { minLength: 1, maxLength: 8 }), (entries) => {
        const order = new OffsetOrder('00000000000000000000.log');
        const b = Buffer.alloc(8);
        let got: string | undefined;
        try {
          for (const [i, e] of entries.entries()) {
            if (e.legacy) {
              b.writeBigInt64BE(e.first);
              order.followAt(b, 0, i);
            } else order.follow(e.first, e.last < 2n ** 63n ? e.last : e.first, i);
          }
        } catch (err) {
          got = (err as { detail: string }).detail;
        }
        const clamped = entries.map((e) => ({ first: e.first, last: e.last < 2n ** 63n ? e.last : e.first }));
        expect(got).toBe(reference(clamped));
      }),
      { numRuns: 3000, seed: 20261205 },
    );
  });
});
