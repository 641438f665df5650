import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { CompressionType } from '@seglift/format';
import { describe, expect, it } from 'vitest';
import { lines, run } from '../test-support/run.js';
import {
  encodeCompressedWrapper,
  encodeLegacyEntry,
  tmpDir,
  utf8,
  v2Batch,
  writeSegment,
} from '../test-support/segments.js';

function mixedSegment(dir: string): string {
  const entries: Uint8Array[] = [];
  for (let i = 0; i < 20; i++)
    entries.push(
      encodeLegacyEntry(BigInt(i), { magic: 0, key: utf8(`k${i}`), value: utf8(`value ${i}`.repeat(20)) }),
    );
  entries.push(
    encodeCompressedWrapper({
      magic: 1,
      codec: CompressionType.GZIP,
      messages: Array.from({ length: 5 }, (_, i) => ({
        offset: BigInt(20 + i),
        timestamp: 1_600_000_000_000n + BigInt(i),
        key: null,
        value: utf8(`wrapped ${i}`.repeat(10)),
      })),
    }),
  );
  entries.push(v2Batch(25n, 10, CompressionType.SNAPPY));
  return writeSegment(dir, 0n, entries);
}

async function recordsOf(file: string): Promise<string[]> {
  const r = await run(['inspect', file, '--print-data-log']);
  expect(r.code).toBe(0);
  // Record lines without the per-format metadata tail: offset, timestamp, sizes, key, payload.
  return lines(r.stdout)
    .filter((l) => l.startsWith('| '))
    .map((l) => {
      const m =
        /^\| offset: (\d+) \w+: (-?\d+) keySize: (-?\d+) valueSize: (-?\d+).*?(?: key: (.*?))?(?: payload: (.*))?$/.exec(
          l,
        );
      return m ? `${m[1]} ${m[2]} ${m[3]} ${m[4]} ${m[5] ?? ''} ${m[6] ?? ''}` : l;
    });
}

describe('seglift convert', () => {
  it('--out writes a zstd v2 segment that verify accepts, with the same records', async () => {
    const dir = tmpDir();
    const src = mixedSegment(dir);
    const before = readFileSync(src);
    const out = path.join(dir, 'out');
    const r = await run(['convert', src, '--codec', 'zstd', '--out', out, '--json']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const [seg, summary] = lines(r.stdout).map((l) => JSON.parse(l));
    expect(seg).toMatchObject({
      type: 'segment',
      result: 'converted',
      bytesIn: before.length,
      recordsIn: 35,
      recordsOut: 35,
    });
    expect(summary).toMatchObject({ type: 'summary', segments: 1, converted: 1, failed: 0 });
    const converted = path.join(out, path.basename(src));
    expect(existsSync(converted)).toBe(true);
    expect(readFileSync(src).equals(before)).toBe(true);
    const v = await run(['verify', converted]);
    expect(v.stderr).toBe('');
    expect(v.code).toBe(0);
    expect(v.stdout).toMatch(/^OK .*: \d+ batches, 35 records, /);
    const dump = await run(['inspect', converted]);
    expect(
      lines(dump.stdout)
        .filter((l) => l.startsWith('baseOffset'))
        .every((l) => l.includes('compresscodec: zstd')),
    ).toBe(true);
    const a = await recordsOf(src);
    const b = await recordsOf(converted);
    expect(b).toEqual(a);
    expect(b).toHaveLength(35);
  });

  it('--out holds every segment given: one already in the codec is copied (indexes rebuilt), reported so', async () => {
    const dir = tmpDir();
    const legacy = mixedSegment(dir);
    const zstd = writeSegment(dir, 35n, [v2Batch(35n, 4, CompressionType.ZSTD)]);
    const out = path.join(dir, 'out');
    const r = await run(['convert', legacy, zstd, '--out', out, '--json']);
    expect(r.code, r.stderr).toBe(0);
    const [a, b, summary] = lines(r.stdout).map((l) => JSON.parse(l));
    expect(a.result).toBe('converted');
    expect(b).toMatchObject({ result: 'copied', reason: 'already-target-codec', recordsOut: 4 });
    expect(summary).toMatchObject({ segments: 2, converted: 1, copied: 1, skipped: 0, failed: 0 });
    expect(readFileSync(path.join(out, path.basename(zstd))).equals(readFileSync(zstd))).toBe(true);
    for (const f of [legacy, zstd]) {
      const v = await run(['verify', path.join(out, path.basename(f))]);
      expect(v.stdout).toMatch(/^OK .*, \.index \d+ entr(y|ies), \.timeindex \d+ entr(y|ies)$/m);
    }
    const table = await run(['convert', zstd, '--out', path.join(dir, 'out2')]);
    expect(table.stdout).toMatch(/ copied .* already-target-codec/);
    expect(table.stdout).toMatch(/0 conv\/1 copy\/0 skip\/0 fail/);
  });

  it('in place: a segment left as it is keeps its records (recordsOut), an empty one is skipped as empty', async () => {
    const dir = tmpDir();
    const part = path.join(dir, 't-0');
    const zstd = writeSegment(part, 0n, [
      v2Batch(0n, 4, CompressionType.ZSTD),
      v2Batch(4n, 3, CompressionType.ZSTD),
    ]);
    const empty = writeSegment(part, 7n, []);
    const legacy = writeSegment(part, 8n, [encodeLegacyEntry(8n, { magic: 1, key: null, value: utf8('v') })]);
    const r = await run(['convert', zstd, empty, legacy, '--codec', 'zstd', '--in-place', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const [a, b, c, summary] = lines(r.stdout).map((l) => JSON.parse(l));
    expect([a.result, a.reason, a.recordsIn, a.recordsOut]).toEqual([
      'skipped',
      'already-target-codec',
      7,
      7,
    ]);
    expect([b.result, b.reason, b.recordsIn, b.recordsOut]).toEqual(['skipped', 'empty', 0, 0]);
    expect([c.result, c.recordsIn, c.recordsOut]).toEqual(['converted', 1, 1]);
    expect(summary).toMatchObject({ converted: 1, skipped: 2, recordsIn: 8, recordsOut: 8 });
  });

  it('a failed --out conversion leaves no empty output directory', async () => {
    const dir = tmpDir();
    const bytes = readFileSync(mixedSegment(dir));
    bytes[bytes.length - 1] ^= 1; // the last batch's CRC: found while writing
    const bad = writeSegment(tmpDir(), 0n, [bytes]);
    const out = path.join(dir, 'out');
    const r = await run(['convert', bad, '--out', out]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error\[CRC_MISMATCH\]/m);
    expect(existsSync(out)).toBe(false);
  });

  it('--in-place with --backup-dir replaces the segment and keeps the original', async () => {
    const dir = tmpDir();
    const part = path.join(dir, 'topic-0');
    const src = mixedSegment(part);
    const before = readFileSync(src);
    const backup = path.join(tmpDir(), 'backup');
    const r = await run(['convert', src, '--codec', 'lz4', '--in-place', '--backup-dir', backup]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('converted');
    expect(readFileSync(path.join(backup, 'topic-0', path.basename(src))).equals(before)).toBe(true);
    expect((await run(['verify', src])).code).toBe(0);
    expect(statSync(src).size).not.toBe(before.length);
  });

  // The position is the stored CRC field's (batch position + 17).
  it('a corrupt segment fails with exit 1 and a message naming file, position and offset', async () => {
    const dir = tmpDir();
    const good = v2Batch(0n, 2);
    const bad = Buffer.from(v2Batch(2n, 2));
    bad[bad.length - 3] ^= 0x55;
    const src = writeSegment(dir, 0n, [good, bad]);
    const r = await run(['convert', src, '--codec', 'gzip', '--out', path.join(dir, 'out')]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      new RegExp(
        `^error\\[CRC_MISMATCH\\]: .*\\(file .*${path.basename(src)}, position ${good.length + 17}, offset 2\\)\\n$`,
      ),
    );
    const v = await run(['verify', src]);
    expect(v.code).toBe(1);
    expect(v.stdout).toMatch(/^FAILED /);
  });

  it('usage errors exit 2', async () => {
    const dir = tmpDir();
    const src = writeSegment(dir, 0n, [v2Batch(0n, 1)]);
    expect((await run(['convert', src, '--codec', 'zstd'])).code).toBe(2); // no destination
    expect((await run(['convert', src, '--codec', 'zstd', '--out', dir, '--in-place'])).code).toBe(2);
    expect((await run(['convert', src, '--codec', 'zstd', '--out', dir, '--backup-dir', dir])).code).toBe(2);
    expect((await run(['convert', src, '--codec', 'brotli', '--out', dir])).code).toBe(2);
    expect((await run(['convert', src, '--level', 'high', '--out', dir])).code).toBe(2);
    expect((await run(['convert', src, '--index-interval-bytes', '0', '--out', dir])).code).toBe(2);
    writeFileSync(path.join(dir, 'notes.txt'), 'x');
    expect((await run(['convert', path.join(dir, 'notes.txt'), '--codec', 'zstd', '--out', dir])).code).toBe(
      2,
    );
  });

  it("--out is refused (exit 2, naming the flag) as the segment's own dir or over an earlier result", async () => {
    const dir = tmpDir();
    const src = writeSegment(path.join(dir, 't-0'), 0n, [v2Batch(0n, 1, CompressionType.GZIP)]);
    const before = readFileSync(src);
    const own = await run(['convert', src, '--out', path.join(dir, 't-0', '.')]);
    expect([own.code, own.stdout]).toEqual([2, '']);
    expect(lines(own.stderr)).toEqual([
      `error: --out ${path.join(dir, 't-0')} is the directory of ${src}: give another directory, or --in-place to rewrite it where it is`,
      "Run 'seglift convert --help' for usage.",
    ]);
    const out = path.join(dir, 'out');
    expect((await run(['convert', src, '--out', out])).code).toBe(0);
    const first = readFileSync(path.join(out, path.basename(src)));
    const again = await run(['convert', src, '--out', out, '--codec', 'lz4']);
    expect([again.code, again.stdout]).toEqual([2, '']);
    expect(lines(again.stderr)[0]).toBe(
      `error: --out ${out} already holds 00000000000000000000.log (an earlier result?): remove it, or give another directory`,
    );
    expect(readFileSync(path.join(out, path.basename(src))).equals(first)).toBe(true);
    expect(readFileSync(src).equals(before)).toBe(true);
  });
});
