import { rm } from 'node:fs/promises';
import { CompressionType } from '@seglift/format';
import { encodeLegacyEntry } from '@seglift/legacy';
import { afterAll, describe, expect, it } from 'vitest';
import { convertSegment } from '../placements/convert.js';
import { mixedSegment, tmpDir, v2Batch, writeSegment } from '../test-support/fixtures.js';
import { targetFormatOf } from './target-format.js';

const dirs: string[] = [];
async function segment(...entries: Uint8Array[]): Promise<string> {
  const d = await tmpDir('seglift-target-');
  dirs.push(d);
  return writeSegment(d, Buffer.concat(entries));
}
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

const values = (n: number) => Array.from({ length: n }, (_, i) => Buffer.from(`value ${i} `.repeat(20)));

describe('targetFormatOf', () => {
  it('names the first entry a conversion would rewrite: a legacy entry, a v2 batch in another codec', async () => {
    const zstd = v2Batch(0n, values(3), CompressionType.ZSTD);
    const legacy = await segment(
      zstd,
      encodeLegacyEntry(3n, { magic: 1, timestamp: 1n, key: null, value: null }),
    );
    expect(await targetFormatOf(legacy, { codec: 'zstd' })).toEqual({
      inTarget: false,
      position: zstd.length,
      format: 'v1/none',
      reason: 'a magic 1 entry',
    });
    const gzip = await segment(zstd, v2Batch(3n, values(3), CompressionType.GZIP));
    expect(await targetFormatOf(gzip, { codec: 'zstd' })).toMatchObject({
      inTarget: false,
      position: zstd.length,
      reason: 'a v2 batch in gzip, not zstd',
    });
    expect(await targetFormatOf(gzip, { codec: 'gzip' })).toMatchObject({ inTarget: false, position: 0 });
    expect(await targetFormatOf(await segment(), { codec: 'zstd' })).toEqual({ inTarget: true });
  });

  it('takes a batch in another codec where convert keeps one: over maxBatchBytes once recompressed, or larger with onlyIfSmaller', async () => {
    const gzip = v2Batch(0n, values(50), CompressionType.GZIP);
    const file = await segment(gzip);
    expect((await targetFormatOf(file, { codec: 'none' })).inTarget).toBe(false);
    expect(await targetFormatOf(file, { codec: 'none', maxBatchBytes: gzip.length })).toEqual({
      inTarget: true,
    });
    expect(await targetFormatOf(file, { codec: 'none', onlyIfSmaller: true })).toEqual({ inTarget: true });
  });

  it('after a conversion: in the target format', async () => {
    const file = await segment(mixedSegment().bytes);
    expect((await targetFormatOf(file, { codec: 'zstd' })).inTarget).toBe(false);
    const r = await convertSegment(file, { codec: 'zstd' }, { kind: 'inPlace' });
    expect(r.result).toBe('converted');
    expect(await targetFormatOf(file, { codec: 'zstd' })).toEqual({ inTarget: true });
  });
});
