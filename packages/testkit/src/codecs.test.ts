import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import {
  flushReferenceChecks,
  GZIP,
  type KafkajsCompression,
  referenceDecompress,
  registerReferenceCodecs,
  xxh32,
} from './codecs.js';

describe('reference codec checks', () => {
  it('xxh32 matches python3-xxhash', () => {
    expect(xxh32(Buffer.from('payload'))).toBe(0x48b5301a);
    expect(xxh32(Buffer.alloc(0))).toBe(0x02cc5d05);
    expect(xxh32(Buffer.from('abcdefghijklmnopqrstuvwxyz0123456789'))).toBe(0x42ae804d);
  });

  it('a payload that our side decompressed differently fails the check after the test', async () => {
    const table: KafkajsCompression = { Codecs: {} };
    const data = Buffer.from('the same bytes '.repeat(50));
    let lie = false;
    registerReferenceCodecs(table, (_id, b) => (lie ? Buffer.from('something else') : Buffer.from(b)));
    const codec = table.Codecs[GZIP]() as { decompress(b: Buffer): Promise<Buffer> };
    expect(await referenceDecompress(GZIP, gzipSync(data))).toEqual(data);
    // inProcess stands for "ours": identity over gzip bytes is wrong, and so is a lie.
    await codec.decompress(gzipSync(data));
    await expect(flushReferenceChecks()).rejects.toThrow(/codec 1: the reference implementation/);
    lie = true;
    await codec.decompress(gzipSync(data));
    await expect(flushReferenceChecks()).rejects.toThrow(/differ from ours/);
    await flushReferenceChecks(); // nothing left queued
  });
});
