import { open, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { CorruptRecordError, TruncatedDataError, UnsupportedFormatError } from '@seglift/format';
import { encodeLegacyEntry } from '@seglift/legacy';
import { describe, expect, it, vi } from 'vitest';
import { mixedSegment, tmpDir } from '../test-support/fixtures.js';
import { shallowEntries } from '../test-support/independent.js';
import { freeBufferBytes } from './buffers.js';
import {
  DEFAULT_CHUNK_SIZE,
  entrySizeAt,
  readSegmentChunks,
  readSegmentEntries,
  type SegmentEntry,
} from './reader.js';

async function collect(file: string, opts = {}): Promise<SegmentEntry[]> {
  const out: SegmentEntry[] = [];
  for await (const e of readSegmentEntries(file, opts)) out.push(e);
  return out;
}

async function caught(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

describe('readSegmentEntries', () => {
  it('starts at startPosition, stops at maxBytes, and with reuseBuffers gives the same bytes', async () => {
    const dir = await tmpDir();
    const seg = mixedSegment();
    const file = path.join(dir, '00000000000000000000.log');
    await writeFile(file, seg.bytes);
    const expected = shallowEntries(seg.bytes);
    const from = expected[10].position;
    const to = expected[20].position + 5; // 5 bytes into entry 20: a partial tail
    const tails: { position: number; bytes: number }[] = [];
    const got = await collect(file, {
      startPosition: from,
      maxBytes: to,
      acceptTruncatedTail: true,
      onTruncatedTail: (t: { position: number; bytes: number }) => tails.push(t),
    });
    expect(got.map((e) => e.position)).toEqual(expected.slice(10, 20).map((e) => e.position));
    expect(tails).toEqual([{ position: expected[20].position, bytes: 5, offset: undefined }]);
    // Entries are used one at a time with reuseBuffers: compare each before advancing.
    let i = 0;
    for await (const e of readSegmentEntries(file, { chunkSize: 700, reuseBuffers: true })) {
      expect(Buffer.from(e.bytes).equals(expected[i].bytes)).toBe(true);
      i++;
    }
    expect(i).toBe(expected.length);
  });

  it('yields every entry of a mixed v0/v1/v2 file with positions and sizes, across small chunks', async () => {
    const dir = await tmpDir();
    const seg = mixedSegment();
    const file = path.join(dir, '00000000000000000000.log');
    await writeFile(file, seg.bytes);
    const expected = shallowEntries(seg.bytes);
    for (const chunkSize of [64, 1000, 4 << 20]) {
      const got = await collect(file, { chunkSize });
      expect(got.map((e) => [e.position, e.size, e.magic])).toEqual(
        expected.map((e) => [e.position, e.size, e.magic]),
      );
      for (let i = 0; i < got.length; i++)
        expect(Buffer.from(got[i].bytes).equals(expected[i].bytes)).toBe(true);
    }
    expect(expected.length).toBe(67);
  });

  it('read-ahead: every chunk size, start position and buffer mode gives the entries of the file exactly', async () => {
    const dir = await tmpDir();
    const seg = mixedSegment();
    const file = path.join(dir, '00000000000000000000.log');
    await writeFile(file, seg.bytes);
    const expected = shallowEntries(seg.bytes);
    const sizes = expected.map((e) => e.bytes.length);
    // Chunks smaller than, equal to, and larger than entries; starts at the first, a middle and the last entry.
    const chunkSizes = [
      17,
      Math.min(...sizes),
      Math.max(...sizes),
      Math.max(...sizes) + 1,
      4096,
      seg.bytes.length,
    ];
    let checked = 0;
    for (const chunkSize of chunkSizes) {
      for (const first of [0, 33, expected.length - 1]) {
        for (const reuseBuffers of [false, true]) {
          let i = first;
          for await (const e of readSegmentEntries(file, {
            chunkSize,
            reuseBuffers,
            startPosition: expected[first].position,
          })) {
            expect([e.position, e.size, e.magic]).toEqual([
              expected[i].position,
              expected[i].bytes.length,
              expected[i].magic,
            ]);
            expect(Buffer.from(e.bytes).equals(expected[i].bytes)).toBe(true);
            i++;
            checked++;
          }
          expect(i).toBe(expected.length);
        }
      }
    }
    expect(checked).toBe(chunkSizes.length * 2 * (expected.length + (expected.length - 33) + 1));
  });

  it('partial trailing entry: TruncatedDataError naming position and offset, or a reported tail', async () => {
    const dir = await tmpDir();
    const a = encodeLegacyEntry(5n, { magic: 1, timestamp: 1n, key: null, value: Buffer.from('hello') });
    const b = encodeLegacyEntry(6n, { magic: 1, timestamp: 2n, key: null, value: Buffer.from('world!!') });
    const file = path.join(dir, 'x.log');
    await writeFile(file, Buffer.concat([a, b.subarray(0, 20)]));
    const err = (await caught(collect(file))) as TruncatedDataError;
    expect(err).toBeInstanceOf(TruncatedDataError);
    expect(err.position).toBe(a.length);
    expect(err.offset).toBe(6n);
    expect(err.file).toBe(file);
    const tails: unknown[] = [];
    const got = await collect(file, {
      acceptTruncatedTail: true,
      onTruncatedTail: (t: unknown) => tails.push(t),
    });
    expect(got.length).toBe(1);
    expect(tails).toEqual([{ position: a.length, bytes: 20, offset: 6n }]);
    // Fewer than 17 bytes left.
    await writeFile(file, Buffer.concat([a, b.subarray(0, 10)]));
    const err2 = (await caught(collect(file))) as TruncatedDataError;
    expect(err2.position).toBe(a.length);
    expect(err2.offset).toBe(6n);
  });

  it('absurd sizes are rejected before any allocation', async () => {
    const dir = await tmpDir();
    const file = path.join(dir, 'x.log');
    const good = encodeLegacyEntry(0n, { magic: 0, key: null, value: Buffer.from('v') });
    const bad = Buffer.alloc(40);
    bad.writeBigInt64BE(9n, 0);
    bad.writeInt32BE(0x7fffffff, 8);
    bad[16] = 2;
    await writeFile(file, Buffer.concat([good, bad]));
    const before = process.memoryUsage().arrayBuffers;
    const err = (await caught(collect(file))) as CorruptRecordError;
    expect(err).toBeInstanceOf(CorruptRecordError);
    expect(err.message).toContain('2147483647');
    expect(err.position).toBe(good.length);
    expect(err.offset).toBe(9n);
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(64 << 20);
    // Allowed by maxEntryBytes but past EOF: truncated, not allocated either.
    const err2 = (await caught(collect(file, { maxEntryBytes: 0x7fffffff + 12 }))) as TruncatedDataError;
    expect(err2).toBeInstanceOf(TruncatedDataError);
    for (const [size, magic, cls] of [
      [13, 1, CorruptRecordError],
      [-5, 1, CorruptRecordError],
      [30, 2, CorruptRecordError],
      [20, 3, UnsupportedFormatError],
    ] as const) {
      const e = Buffer.alloc(40);
      e.writeBigInt64BE(1n, 0);
      e.writeInt32BE(size, 8);
      e[16] = magic;
      await writeFile(file, e);
      const x = (await caught(collect(file))) as Error;
      expect(x).toBeInstanceOf(cls);
    }
  });

  it('keeps memory bounded on a large file', async () => {
    const dir = await tmpDir();
    const file = path.join(dir, 'big.log');
    const fh = await open(file, 'w');
    const entry = encodeLegacyEntry(0n, { magic: 0, key: null, value: Buffer.alloc(100_000, 7) });
    const block = Buffer.concat(
      Array.from({ length: 100 }, (_, i) => {
        const e = Buffer.from(entry);
        e.writeBigInt64BE(BigInt(i), 0);
        return e;
      }),
    );
    for (let i = 0; i < 20; i++) await fh.write(block);
    await fh.close();
    let n = 0;
    let peak = 0;
    for await (const e of readSegmentEntries(file, { chunkSize: 1 << 20 })) {
      n++;
      expect(e.size).toBe(entry.length);
      if (n % 100 === 0) peak = Math.max(peak, process.memoryUsage().arrayBuffers);
    }
    expect(n).toBe(2000);
    expect(peak).toBeLessThan(150 << 20);
  });

  it('reuseBuffers: a read that ends or is left gives its buffers back, and the next read takes them', async () => {
    const dir = await tmpDir();
    const file = path.join(dir, 'reuse.log');
    const entry = encodeLegacyEntry(0n, { magic: 0, key: null, value: Buffer.alloc(50_000, 3) });
    await writeFile(
      file,
      Buffer.concat(
        Array.from({ length: 100 }, (_, i) => {
          const e = Buffer.from(entry);
          e.writeBigInt64BE(BigInt(i), 0);
          return e;
        }),
      ),
    );
    const read = async (stopAfter = Infinity) => {
      let n = 0;
      for await (const e of readSegmentEntries(file, { reuseBuffers: true })) {
        expect(e.bytes.readBigInt64BE(0)).toBe(BigInt(n));
        if (++n === stopAfter) break;
      }
      return n;
    };
    expect(await read()).toBe(100);
    // The two windows of a 5 MB file: each two chunks long.
    const kept = freeBufferBytes();
    expect(kept).toBeGreaterThanOrEqual(2 * 2 * DEFAULT_CHUNK_SIZE);
    const alloc = vi.spyOn(Buffer, 'allocUnsafeSlow');
    try {
      expect(await read()).toBe(100);
      expect(await read(3)).toBe(3);
      expect(alloc).not.toHaveBeenCalled();
    } finally {
      alloc.mockRestore();
    }
    expect(freeBufferBytes()).toBe(kept);
  });

  it('readSegmentChunks: whole entries back to back, and an entry that fails its checks after the ones before it', async () => {
    const dir = await tmpDir();
    const seg = mixedSegment();
    const file = path.join(dir, '00000000000000000000.log');
    const expected = shallowEntries(seg.bytes);
    // A bad size field after entry 30.
    const bad = Buffer.alloc(20);
    bad.writeBigInt64BE(777n, 0);
    bad.writeInt32BE(5, 8);
    bad[16] = 1;
    const at = expected[30].position;
    await writeFile(file, Buffer.concat([seg.bytes.subarray(0, at), bad]));
    for (const chunkSize of [100, 4096, 1 << 20]) {
      const got: { position: number; bytes: Buffer }[] = [];
      let error: unknown;
      try {
        for await (const c of readSegmentChunks(file, { chunkSize, reuseBuffers: true })) {
          expect(c.start).toBeLessThan(c.end);
          for (let p = c.start; p < c.end; ) {
            const size = entrySizeAt(c.bytes, p);
            got.push({
              position: c.position + (p - c.start),
              bytes: Buffer.from(c.bytes.subarray(p, p + size)),
            });
            p += size;
          }
        }
      } catch (err) {
        error = err;
      }
      expect(got.map((e) => e.position)).toEqual(expected.slice(0, 30).map((e) => e.position));
      for (let i = 0; i < got.length; i++) expect(got[i].bytes.equals(expected[i].bytes)).toBe(true);
      expect(error).toBeInstanceOf(CorruptRecordError);
      expect((error as CorruptRecordError).position).toBe(at);
      expect((error as CorruptRecordError).offset).toBe(777n);
    }
  });
});
