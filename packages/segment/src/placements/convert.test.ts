import { mkdir, readFile, stat, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { crc32c } from '@seglift/format';
import { encodeLegacyEntry } from '@seglift/legacy';
import { describe, expect, it } from 'vitest';
import { setMtimeNs } from '../files/libc.js';
import { formatReportTable } from '../rewrite/report.js';
import { targetFormatOf } from '../rewrite/target-format.js';
import { verifySegment } from '../rewrite/verify.js';
import { crashAfterOp, killLocks } from '../test-support/crash.js';
import { mixedSegment, prng, tmpDir, v2Batch, writeSegment } from '../test-support/fixtures.js';
import { ls, mtime, sha256 } from '../test-support/helpers.js';
import { independentRecords, recoveryIndexes, shallowEntries } from '../test-support/independent.js';
import type { ConvertSettings, Placement } from './conversion.js';
import { convertSegment } from './convert.js';

const OLD = new Date('2019-03-04T05:06:07.000Z');
/** OLD and a sub-millisecond part, which a rewrite must keep too. */
const OLD_NS = BigInt(OLD.getTime()) * 1_000_000n + 123_457n;

async function setup(bytes: Uint8Array = mixedSegment().bytes, base = 0n) {
  const dir = await tmpDir();
  const log = await writeSegment(dir, bytes, base);
  await utimes(log, OLD, OLD);
  setMtimeNs(log, OLD_NS);
  return { dir, log, pdir: path.dirname(log) };
}

describe('convertSegment', () => {
  it('mixed v0/v1/v2 -> zstd into outDir: records, indexes, verbatim batches, input untouched', async () => {
    const seg = mixedSegment();
    const { dir, log, pdir } = await setup(seg.bytes);
    const before = await sha256(log);
    const outDir = path.join(dir, 'out');
    const progress: number[] = [];
    // kafka grouping: one batch per legacy entry, many batches for the index checks below.
    const r = await convertSegment(
      log,
      { codec: 'zstd', grouping: 'kafka', indexIntervalBytes: 1024 },
      { kind: 'outDir', dir: outDir },
      { onProgress: (d) => progress.push(d) },
    );
    expect(r.error).toBeUndefined();
    expect(r.result).toBe('converted');
    expect(await sha256(log)).toBe(before);
    expect(await mtime(log)).toBe(OLD_NS);
    expect(await ls(pdir)).toEqual(['00000000000000000000.log']);
    expect(await ls(outDir)).toEqual([
      '00000000000000000000.index',
      '00000000000000000000.log',
      '00000000000000000000.timeindex',
    ]);
    const out = await readFile(path.join(outDir, '00000000000000000000.log'));
    expect(await independentRecords(out)).toEqual(await independentRecords(seg.bytes));
    expect((await independentRecords(out)).length).toBe(274);
    const idx = recoveryIndexes(out, 0n, 1024);
    expect(idx.index.length).toBeGreaterThan(8);
    expect((await readFile(path.join(outDir, '00000000000000000000.index'))).equals(idx.index)).toBe(true);
    expect((await readFile(path.join(outDir, '00000000000000000000.timeindex'))).equals(idx.timeindex)).toBe(
      true,
    );
    const outEntries = shallowEntries(out);
    for (const v of seg.verbatim) expect(outEntries.some((e) => e.bytes.equals(v))).toBe(true);
    // Every non-control, non-empty batch is zstd now.
    const codecs = outEntries.map((e) => e.bytes.readInt16BE(21) & 7);
    expect(codecs.filter((c) => c !== 4).length).toBe(2);
    expect(r.codecMixIn).toEqual({
      'v0/none': 3,
      'v0/gzip': 1,
      'v0/snappy': 1,
      'v0/lz4': 1,
      'v1/none': 50,
      'v1/gzip': 2,
      'v1/snappy': 1,
      'v1/lz4': 1,
      'v2/none': 4,
      'v2/gzip': 1,
      'v2/zstd': 1,
      'v2/snappy': 1,
    });
    expect(r.codecOut).toEqual({ 'v2/none': 2, 'v2/zstd': 65 });
    expect(r).toMatchObject({
      batchesIn: 67,
      batchesOut: 67,
      recordsIn: 274,
      recordsOut: 274,
      batchesCopied: 3,
      oversizeKept: 0,
    });
    expect(r.bytesIn).toBe(seg.bytes.length);
    expect(r.bytesOut).toBe(out.length);
    expect(progress[progress.length - 1]).toBe(seg.bytes.length);
    expect(await mtime(path.join(outDir, '00000000000000000000.log'))).toBe(OLD_NS);
    const v = await verifySegment(path.join(outDir, '00000000000000000000.log'));
    expect(v.problems).toEqual([]);
    expect(v).toMatchObject({
      ok: true,
      entries: 67,
      records: 274,
      firstOffset: '0',
      lastOffset: seg.lastOffset.toString(),
    });
  });

  it('coalesce grouping, gzip target and a non-zero base offset', async () => {
    const seg = mixedSegment(1000n, 7);
    const { dir, log } = await setup(seg.bytes, 1000n);
    const outDir = path.join(dir, 'out');
    const r = await convertSegment(
      log,
      { codec: 'gzip', level: 9, grouping: 'coalesce', coalesceBytes: 4096 },
      { kind: 'outDir', dir: outDir },
    );
    expect(r.result).toBe('converted');
    const out = await readFile(path.join(outDir, path.basename(log)));
    expect(await independentRecords(out)).toEqual(await independentRecords(seg.bytes));
    expect(r.batchesOut).toBeLessThan(30);
    const idx = recoveryIndexes(out, 1000n);
    expect((await readFile(path.join(outDir, '00000000000000001000.index'))).equals(idx.index)).toBe(true);
    expect((await readFile(path.join(outDir, '00000000000000001000.timeindex'))).equals(idx.timeindex)).toBe(
      true,
    );
  });

  it('in place: swap, mtime restored, backup copies, txnindex untouched, idempotent rerun skipped', async () => {
    const seg = mixedSegment();
    const { dir, log, pdir } = await setup(seg.bytes);
    const txn = path.join(pdir, '00000000000000000000.txnindex');
    await writeFile(txn, Buffer.alloc(34, 1));
    await writeFile(path.join(pdir, '00000000000000000000.index'), Buffer.alloc(16));
    const backupDir = path.join(dir, 'backup');
    const r = await convertSegment(log, { codec: 'zstd', grouping: 'kafka' }, { kind: 'inPlace', backupDir });
    expect(r.error).toBeUndefined();
    expect(r.result).toBe('converted');
    expect(await ls(pdir)).toEqual([
      '00000000000000000000.index',
      '00000000000000000000.log',
      '00000000000000000000.timeindex',
      '00000000000000000000.txnindex',
    ]);
    expect(await readFile(txn)).toEqual(Buffer.alloc(34, 1));
    for (const f of ['log', 'index', 'timeindex'])
      expect(await mtime(path.join(pdir, `00000000000000000000.${f}`))).toBe(OLD_NS);
    expect(await readFile(path.join(backupDir, 'topic-0', '00000000000000000000.log'))).toEqual(seg.bytes);
    expect(await mtime(path.join(backupDir, 'topic-0', '00000000000000000000.log'))).toBe(OLD_NS);
    expect(await readFile(path.join(backupDir, 'topic-0', '00000000000000000000.index'))).toEqual(
      Buffer.alloc(16),
    );
    const out = await readFile(log);
    expect(await independentRecords(out)).toEqual(await independentRecords(seg.bytes));
    expect(
      (await readFile(path.join(pdir, '00000000000000000000.index'))).equals(recoveryIndexes(out, 0n).index),
    ).toBe(true);

    const hash = await sha256(log);
    const again = await convertSegment(log, { codec: 'zstd' }, { kind: 'inPlace' });
    expect(again).toMatchObject({
      result: 'skipped',
      reason: 'already-target-codec',
      batchesIn: 67,
      recordsIn: 274,
    });
    expect(await sha256(log)).toBe(hash);
    expect(await mtime(log)).toBe(OLD_NS);
    expect(await ls(pdir)).toHaveLength(4);
    // force rewrites anyway.
    const forced = await convertSegment(log, { codec: 'zstd', force: true }, { kind: 'inPlace' });
    expect(forced.result).toBe('converted');
    expect(await independentRecords(await readFile(log))).toEqual(await independentRecords(seg.bytes));
  });

  it('truncated tail: error names the position; acceptTruncatedTail drops and reports it', async () => {
    const seg = mixedSegment();
    const cut = Buffer.concat([seg.bytes, seg.bytes.subarray(0, 30)]);
    const { dir, log, pdir } = await setup(cut);
    const r = await convertSegment(log, { codec: 'zstd' }, { kind: 'inPlace' });
    expect(r.result).toBe('failed');
    expect(r.error).toMatchObject({ code: 'TRUNCATED', position: seg.bytes.length, file: log });
    expect(await ls(pdir)).toEqual(['00000000000000000000.log']);
    const ok = await convertSegment(
      log,
      { codec: 'zstd', acceptTruncatedTail: true },
      { kind: 'outDir', dir: path.join(dir, 'o') },
    );
    expect(ok).toMatchObject({ result: 'converted', truncatedTailBytes: 30, recordsOut: 274 });
  });

  it('bad CRC: failed, original byte-identical, no leftovers', async () => {
    const seg = mixedSegment();
    const bytes = Buffer.from(seg.bytes);
    const entries = shallowEntries(bytes);
    const target = entries.find((e) => e.magic === 2)!;
    bytes[target.position + 70] ^= 0x40;
    const { log, pdir } = await setup(bytes);
    const before = await sha256(log);
    const r = await convertSegment(log, { codec: 'zstd' }, { kind: 'inPlace' });
    expect(r.result).toBe('failed');
    expect(r.error).toMatchObject({
      code: 'CRC_MISMATCH',
      file: log,
      offset: target.bytes.readBigInt64BE(0).toString(),
    });
    expect(await sha256(log)).toBe(before);
    expect(await ls(pdir)).toEqual(['00000000000000000000.log']);
    // Legacy outer CRC too.
    const legacy = Buffer.from(seg.bytes);
    legacy[entries[0].position + 30] ^= 1;
    await writeFile(log, legacy);
    const r2 = await convertSegment(log, { codec: 'zstd' }, { kind: 'inPlace' });
    expect(r2.error).toMatchObject({ code: 'CRC_MISMATCH', position: entries[0].position, offset: '0' });
  });

  it('absurd size 2^31-1: failed without allocating', async () => {
    const seg = mixedSegment();
    const bad = Buffer.alloc(40);
    bad.writeBigInt64BE(10_000n, 0);
    bad.writeInt32BE(0x7fffffff, 8);
    bad[16] = 2;
    const { log, pdir } = await setup(Buffer.concat([seg.bytes, bad]));
    const r = await convertSegment(log, { codec: 'zstd' }, { kind: 'inPlace' });
    expect(r.error).toMatchObject({ code: 'CORRUPT_RECORD', position: seg.bytes.length, offset: '10000' });
    expect(await ls(pdir)).toEqual(['00000000000000000000.log']);
  });

  it('verify catches a written file that differs (PLE is outside the CRC), an index that differs, a flipped byte', async () => {
    const seg = mixedSegment();
    const { log, pdir } = await setup(seg.bytes);
    const before = await sha256(log);
    const cases: [string, (f: { log: string; index: string; timeindex: string }) => Promise<void>, string][] =
      [
        [
          'partitionLeaderEpoch',
          async (f) => {
            const b = await readFile(f.log);
            const last = shallowEntries(b).at(-1)!;
            b.writeInt32BE(99, last.position + 12);
            await writeFile(f.log, b);
          },
          'VERIFY_MISMATCH',
        ],
        [
          '.index',
          async (f) => {
            const b = await readFile(f.index);
            b.writeInt32BE(b.readInt32BE(4) + 1, 4);
            await writeFile(f.index, b);
          },
          'VERIFY_MISMATCH',
        ],
        [
          'crc',
          async (f) => {
            const b = await readFile(f.log);
            b[b.length - 3] ^= 0xff;
            await writeFile(f.log, b);
          },
          'CRC_MISMATCH',
        ],
      ];
    for (const [field, hook, code] of cases) {
      const r = await convertSegment(log, { codec: 'zstd' }, { kind: 'inPlace' }, { beforeVerify: hook });
      expect(r.result).toBe('failed');
      expect(r.error?.code).toBe(code);
      if (code === 'VERIFY_MISMATCH') expect(r.error?.field).toBe(field);
      expect(await sha256(log)).toBe(before);
      expect(await ls(pdir)).toEqual(['00000000000000000000.log']);
    }
  });

  it('never overwrites a backup that differs; keeps an identical one (rerun after a crash)', async () => {
    const seg = mixedSegment();
    const { dir, log } = await setup(seg.bytes);
    const backupDir = path.join(dir, 'backup');
    const backupLog = path.join(backupDir, 'topic-0', '00000000000000000000.log');
    // A crash after the backup, before the swap: the rerun finds its own identical backup.
    const crash = await crashAfterOp(
      (op) => op.kind === 'rename' && op.path === backupLog,
      () => [convertSegment(log, { codec: 'zstd' }, { kind: 'inPlace', backupDir })],
    );
    expect(crash.crashed).toBe(true);
    await killLocks(path.dirname(log));
    expect(await readFile(backupLog)).toEqual(seg.bytes);
    const first = await convertSegment(log, { codec: 'zstd' }, { kind: 'inPlace', backupDir });
    expect(first.result).toBe('converted');
    expect(await readFile(backupLog)).toEqual(seg.bytes);
    // A forced second conversion would back up the zstd result over the true original: refused.
    const converted = await sha256(log);
    const second = await convertSegment(log, { codec: 'gzip', force: true }, { kind: 'inPlace', backupDir });
    expect(second.result).toBe('failed');
    expect(second.error).toMatchObject({ code: 'IO' });
    expect(second.reason).toMatch(/already exists and differs/);
    expect(await readFile(backupLog)).toEqual(seg.bytes);
    expect(await sha256(log)).toBe(converted);
  });

  it('verify checks a recompressed batch against the round-trip proof from convert (no second gunzip)', async () => {
    // Two gzip batches -> zstd. The hook swaps the second written batch for one with the same
    // header fields and a valid CRC whose records differ in one value byte: the stored CRC is
    // not the one of the batch convert proved, so verify refuses it without decompressing.
    const values = (n: number, b: number) =>
      Array.from({ length: n }, (_, i) => Buffer.from(`value-${b}-${i}`));
    const seg = Buffer.concat([v2Batch(0n, values(5, 0), 1), v2Batch(5n, values(5, 1), 1)]);
    const { log, pdir } = await setup(seg);
    const before = await sha256(log);
    const r = await convertSegment(
      log,
      { codec: 'zstd' },
      { kind: 'inPlace' },
      {
        beforeVerify: async (f) => {
          const b = await readFile(f.log);
          const second = shallowEntries(b)[1];
          const forged = Buffer.from(
            v2Batch(
              5n,
              values(5, 1).map((v, i) => (i === 2 ? Buffer.from('value-1-X') : v)),
              4,
            ),
          );
          await writeFile(f.log, Buffer.concat([b.subarray(0, second.position), forged]));
        },
      },
    );
    expect(r.result).toBe('failed');
    expect(r.error).toMatchObject({ code: 'VERIFY_MISMATCH', field: 'batch', offset: '5' });
    expect(r.reason).toContain('rewritten batch is not the one written');
    expect(await sha256(log)).toBe(before);
    expect(await ls(pdir)).toEqual(['00000000000000000000.log']);
    // Without tampering the same segment converts and verifies.
    const ok = await convertSegment(log, { codec: 'zstd' }, { kind: 'inPlace' });
    expect(ok.result).toBe('converted');
    expect((await verifySegment(log)).ok).toBe(true);
  });

  it('a v2 batch that grows past maxBatchBytes when recompressed keeps its bytes: one rule says so for convert and targetFormatOf', async () => {
    const big = v2Batch(0n, [Buffer.alloc(3000, 1)], 4);
    const seg = Buffer.concat([big, v2Batch(1n, [Buffer.from('x')], 0)]);
    const { dir, log } = await setup(seg);
    const settings = { codec: 'none', maxBatchBytes: 1000 } as const;
    const r = await convertSegment(log, settings, { kind: 'outDir', dir: path.join(dir, 'o') });
    // Every entry left as it is: a copy, as for a segment in the target codec.
    expect(r).toMatchObject({
      result: 'copied',
      reason: 'already-target-codec',
      oversizeKept: 1,
      batchesCopied: 2,
    });
    expect(await readFile(path.join(dir, 'o', path.basename(log)))).toEqual(seg);
    expect(await targetFormatOf(log, settings)).toEqual({ inTarget: true });
    // In place: nothing to swap in.
    const inPlace = await convertSegment(log, settings, { kind: 'inPlace' });
    expect([inPlace.result, inPlace.reason, inPlace.batchesIn]).toEqual([
      'skipped',
      'already-target-codec',
      2,
    ]);
    expect(await readFile(log)).toEqual(seg);
    // With room for its recompression: not in the target format, and converted.
    const roomier = { codec: 'none', maxBatchBytes: 1_000_000 } as const;
    expect(await targetFormatOf(log, roomier)).toMatchObject({
      inTarget: false,
      position: 0,
      format: 'v2/zstd',
    });
    expect((await convertSegment(log, roomier, { kind: 'inPlace' })).result).toBe('converted');
  });

  it('the default grouping coalesces legacy messages; verify checks upconverted runs by their proofs', async () => {
    const seg = mixedSegment();
    const { log, pdir } = await setup(seg.bytes);
    const before = await sha256(log);
    const ok = await convertSegment(
      log,
      { codec: 'zstd' },
      { kind: 'outDir', dir: path.join(pdir, '..', 'o') },
    );
    expect(ok.result).toBe('converted');
    // 66 legacy entries and v2 batches in; far fewer batches out, same records.
    expect(ok.batchesOut).toBeLessThan(15);
    const out = await readFile(path.join(pdir, '..', 'o', '00000000000000000000.log'));
    expect(await independentRecords(out)).toEqual(await independentRecords(seg.bytes));
    // What a proof's CRC identity catches: a batch re-encoded with another value byte (a valid
    // batch of its own), a base offset changed (outside the batch CRC), the source changed.
    const cases: [string, (f: { log: string }) => Promise<void>, string][] = [
      [
        'forged batch',
        async (f) => {
          const b = await readFile(f.log);
          const first = shallowEntries(b)[0];
          const forged = Buffer.from(b.subarray(first.position, first.position + first.bytes.length));
          const i = forged.indexOf(Buffer.from('alpha'));
          if (i < 0) throw new Error('no value byte to change');
          forged[i] ^= 0x20;
          forged.writeUInt32BE(crc32c(forged.subarray(21)), 17);
          forged.copy(b, first.position);
          await writeFile(f.log, b);
        },
        'batch',
      ],
      [
        'baseOffset',
        async (f) => {
          const b = await readFile(f.log);
          const e = shallowEntries(b)[1];
          b.writeBigInt64BE(b.readBigInt64BE(e.position) + 1n, e.position);
          await writeFile(f.log, b);
        },
        'batch',
      ],
      [
        'source',
        async () => {
          const b = await readFile(log);
          b[b.length >> 3] ^= 1;
          await writeFile(log, b);
        },
        'source',
      ],
    ];
    for (const [name, hook, field] of cases) {
      await writeFile(log, seg.bytes);
      const r = await convertSegment(log, { codec: 'none' }, { kind: 'inPlace' }, { beforeVerify: hook });
      expect([name, r.result, r.error?.code, r.error?.field]).toEqual([
        name,
        'failed',
        'VERIFY_MISMATCH',
        field,
      ]);
      expect(await ls(pdir)).toEqual(['00000000000000000000.log']);
    }
    await writeFile(log, seg.bytes);
    expect(await sha256(log)).toBe(before);
  });

  it('onlyIfSmaller keeps batches recompression would grow, and then leaves the segment alone', async () => {
    // gzip compresses these values better than lz4 does.
    const values = (b: number) =>
      Array.from({ length: 40 }, (_, i) =>
        Buffer.from(`{"id":${b * 40 + i},"text":"${'lorem ipsum '.repeat(8)}"}`),
      );
    const seg = Buffer.concat([v2Batch(0n, values(0), 1), v2Batch(40n, values(1), 1)]);
    const { dir, log } = await setup(seg);
    const grown = await convertSegment(log, { codec: 'lz4' }, { kind: 'outDir', dir: path.join(dir, 'a') });
    expect(grown.result).toBe('converted');
    expect(grown.bytesOut).toBeGreaterThan(grown.bytesIn);
    expect(grown.codecOut).toEqual({ 'v2/lz4': 2 });
    const table = formatReportTable([grown]);
    expect(table).toMatch(/GREW \+\d+\.\d%/);
    expect(table).toMatch(/warning: 1 of 1 converted segments grew/);
    const kept = await convertSegment(log, { codec: 'lz4', onlyIfSmaller: true }, { kind: 'inPlace' });
    expect(kept).toMatchObject({ result: 'skipped', reason: 'already-target-codec' });
    // A segment with one batch that shrinks: that one is recompressed, the other kept.
    const mixed = Buffer.concat([v2Batch(0n, values(0), 1), v2Batch(40n, values(1), 0)]);
    await writeFile(log, mixed);
    const r = await convertSegment(log, { codec: 'lz4', onlyIfSmaller: true }, { kind: 'inPlace' });
    expect(r).toMatchObject({ result: 'converted', keptSmaller: 1, codecOut: { 'v2/gzip': 1, 'v2/lz4': 1 } });
    expect(r.bytesOut).toBeLessThan(r.bytesIn);
    expect(await independentRecords(await readFile(log))).toEqual(await independentRecords(mixed));
    expect(
      (await convertSegment(log, { codec: 'lz4', onlyIfSmaller: true }, { kind: 'inPlace' })).result,
    ).toBe('skipped');
  });

  it('outDir: a segment already in the target codec is copied, indexes rebuilt, verified; empty too', async () => {
    const values = (b: number) => Array.from({ length: 30 }, (_, i) => Buffer.from(`v${b * 30 + i}`));
    const seg = Buffer.concat([v2Batch(100n, values(0), 4), v2Batch(130n, values(1), 4)]);
    const { dir, log } = await setup(seg, 100n);
    const outDir = path.join(dir, 'out');
    const r = await convertSegment(
      log,
      { codec: 'zstd', indexIntervalBytes: 1 },
      { kind: 'outDir', dir: outDir },
    );
    expect(r).toMatchObject({
      result: 'copied',
      reason: 'already-target-codec',
      bytesOut: seg.length,
      batchesCopied: 2,
      outPath: path.join(outDir, '00000000000000000100.log'),
    });
    const out = await readFile(path.join(outDir, '00000000000000000100.log'));
    expect(out.equals(seg)).toBe(true);
    const idx = recoveryIndexes(out, 100n, 1);
    expect((await readFile(path.join(outDir, '00000000000000000100.index'))).equals(idx.index)).toBe(true);
    expect(await mtime(path.join(outDir, '00000000000000000100.log'))).toBe(OLD_NS);
    expect((await verifySegment(r.outPath!)).ok).toBe(true);
    expect(formatReportTable([r])).toMatch(/0 conv\/1 copy\/0 skip\/0 fail/);
    // An empty segment (a rolled one that never got a record) is a segment too.
    const empty = await setup(new Uint8Array(0), 0n);
    const e = await convertSegment(
      empty.log,
      { codec: 'zstd' },
      { kind: 'outDir', dir: path.join(empty.dir, 'out') },
    );
    expect(e.result).toBe('copied');
    expect(await ls(path.join(empty.dir, 'out'))).toEqual([
      '00000000000000000000.index',
      '00000000000000000000.log',
      '00000000000000000000.timeindex',
    ]);
  });

  it('outDir: a failed conversion leaves no directory it created behind, and never removes one it did not', async () => {
    const seg = Buffer.from(mixedSegment().bytes);
    seg[seg.length - 3] ^= 0xff; // the last entry's CRC no longer matches: found while writing
    const { dir, log } = await setup(seg);
    const r = await convertSegment(
      log,
      { codec: 'zstd' },
      { kind: 'outDir', dir: path.join(dir, 'new', 'deeper') },
    );
    expect(r.result).toBe('failed');
    expect(await ls(dir)).toEqual(['topic-0']);
    const existing = path.join(dir, 'existing');
    await mkdir(existing);
    expect((await convertSegment(log, { codec: 'zstd' }, { kind: 'outDir', dir: existing })).result).toBe(
      'failed',
    );
    expect(await ls(existing)).toEqual([]);
  });

  it('rejects an unknown codec and aborted signals with a failed report', async () => {
    const { dir, log } = await setup();
    const unknown = { codec: 'brotli' } as unknown as ConvertSettings;
    const r0 = await convertSegment(log, unknown, { kind: 'outDir', dir: path.join(dir, 'o') });
    expect(r0.error?.code).toBe('INVALID_ARGUMENT');
    expect(await ls(dir)).toEqual(['topic-0']);
    const ac = new AbortController();
    ac.abort();
    const r = await convertSegment(log, { codec: 'zstd' }, { kind: 'inPlace' }, { signal: ac.signal });
    expect(r.result).toBe('failed');
    expect(r.reason).toContain('aborted');
  });

  it('refuses a placement it does not know, before anything is read', async () => {
    const { dir, log } = await setup();
    const r = await convertSegment(log, { codec: 'zstd' }, { kind: 'elsewhere' } as unknown as Placement);
    expect([r.result, r.error?.code, r.reason]).toEqual([
      'failed',
      'INVALID_ARGUMENT',
      "convertSegment: no placement 'elsewhere' (outDir, inPlace, stage or fromStage)",
    ]);
    expect(await ls(dir)).toEqual(['topic-0']);
  });

  it('segments larger than the reader chunk and the write buffers (1 MiB): batches written whole, progress every 8 MiB', async () => {
    // Incompressible values: 300 legacy messages (2.5 MB, upconverted into several batches), a
    // 1.5 MB v2 batch (written past the buffers on its own) and small batches around it.
    const rand = prng(11);
    const noise = (n: number) => Buffer.from(Array.from({ length: n }, () => Math.floor(rand() * 256)));
    const legacy = Array.from({ length: 300 }, (_, i) =>
      encodeLegacyEntry(BigInt(i), {
        magic: 1,
        timestamp: 1_500_000_000_000n + BigInt(i),
        key: null,
        value: noise(8192),
      }),
    );
    const small = (at: bigint) => v2Batch(at, [noise(50_000), noise(50_000)], 1);
    const seg = Buffer.concat([
      ...legacy,
      ...Array.from({ length: 12 }, (_, i) => small(300n + BigInt(i * 2))),
      v2Batch(324n, [noise(1_500_000)], 1),
      ...Array.from({ length: 12 }, (_, i) => small(325n + BigInt(i * 2))),
    ]);
    const { dir, log } = await setup(seg);
    const progress: [number, number][] = [];
    const outDir = path.join(dir, 'out');
    const r = await convertSegment(
      log,
      { codec: 'none', maxBatchBytes: 4 * 1024 * 1024 },
      { kind: 'outDir', dir: outDir },
      { onProgress: (d, t) => progress.push([d, t]) },
    );
    expect(r.error).toBeUndefined();
    expect(r).toMatchObject({ result: 'converted', batchesIn: 325, recordsIn: 349, recordsOut: 349 });
    const out = await readFile(path.join(outDir, path.basename(log)));
    expect(r.bytesOut).toBe(out.length);
    expect(await independentRecords(out)).toEqual(await independentRecords(seg));
    expect(r.batchesOut).toBe(shallowEntries(out).length);
    // The first chunk read (1 MiB and less than a whole entry more), then not before 8 MiB more: the end.
    expect(progress.length).toBe(2);
    expect(progress[0][0]).toBeGreaterThan(1024 * 1024 - 9000);
    expect(progress[0][0]).toBeLessThan(2 * 1024 * 1024);
    expect(progress.map(([, t]) => t)).toEqual([seg.length, seg.length]);
    expect(progress[1][0]).toBe(seg.length);
  });

  it('counts start over after the already-converted check; a skip counts what it read; outDir must not be the segment directory', async () => {
    // The first batch is already zstd: the check reads it, stops at the gzip one, and the
    // conversion counts both once.
    const zstd = v2Batch(0n, [Buffer.from('a'), Buffer.from('b'), Buffer.from('c')], 4);
    const seg = Buffer.concat([zstd, v2Batch(3n, [Buffer.from('d'), Buffer.from('e')], 1)]);
    const { dir, log, pdir } = await setup(seg);
    const r = await convertSegment(log, { codec: 'zstd' }, { kind: 'outDir', dir: path.join(dir, 'o') });
    expect(r).toMatchObject({
      result: 'converted',
      batchesIn: 2,
      recordsIn: 5,
      batchesCopied: 1,
      codecMixIn: { 'v2/zstd': 1, 'v2/gzip': 1 },
      codecOut: { 'v2/zstd': 2 },
    });
    expect((await convertSegment(log, { codec: 'zstd' }, { kind: 'inPlace' })).result).toBe('converted');
    const again = await convertSegment(log, { codec: 'zstd' }, { kind: 'inPlace' });
    expect(again).toMatchObject({
      result: 'skipped',
      reason: 'already-target-codec',
      batchesIn: 2,
      recordsIn: 5,
      codecMixIn: { 'v2/zstd': 2 },
    });
    const before = await sha256(log);
    const same = await convertSegment(log, { codec: 'gzip' }, { kind: 'outDir', dir: pdir });
    expect([same.result, same.error?.code, same.reason]).toEqual([
      'failed',
      'INVALID_ARGUMENT',
      'outDir is the segment directory',
    ]);
    expect(await sha256(log)).toBe(before);
    expect(await ls(pdir)).toEqual([
      '00000000000000000000.index',
      '00000000000000000000.log',
      '00000000000000000000.timeindex',
    ]);
  });

  it('in place: the segment lock is held through the conversion (unless lock: false); beforeSwap runs under the partition lock and can refuse the swap', async () => {
    const { dir, log, pdir } = await setup();
    const segmentLock = path.join(pdir, '00000000000000000000.log.seglift.lock');
    const partitionLock = path.join(pdir, 'seglift.partition.lock');
    const exists = (f: string) =>
      stat(f).then(
        () => true,
        () => false,
      );
    const seen: string[] = [];
    const hooks = {
      beforeVerify: async () => {
        seen.push(`verify: segment lock ${await exists(segmentLock)}`);
      },
      beforeSwap: async () => {
        seen.push(
          `swap: segment lock ${await exists(segmentLock)}, partition lock ${await exists(partitionLock)}`,
        );
      },
    };
    const before = await sha256(log);
    // beforeSwap refuses: failed with its error, the original untouched, nothing left behind.
    const refused = await convertSegment(
      log,
      { codec: 'zstd' },
      { kind: 'inPlace' },
      {
        ...hooks,
        beforeSwap: async () => {
          await hooks.beforeSwap();
          throw new Error('lease lost');
        },
      },
    );
    expect([refused.result, refused.reason, refused.aborted]).toEqual(['failed', 'lease lost', undefined]);
    expect(await sha256(log)).toBe(before);
    expect(await ls(pdir)).toEqual(['00000000000000000000.log']);
    // Aborted while waiting in beforeSwap: failed and marked aborted.
    const ac = new AbortController();
    const aborted = await convertSegment(
      log,
      { codec: 'zstd' },
      { kind: 'inPlace' },
      { signal: ac.signal, beforeSwap: async () => ac.abort(new Error('shutdown')) },
    );
    expect([aborted.result, aborted.aborted, aborted.reason]).toEqual(['failed', true, 'shutdown']);
    expect(await sha256(log)).toBe(before);
    const backupDir = path.join(dir, 'backup');
    const r = await convertSegment(log, { codec: 'zstd' }, { kind: 'inPlace', backupDir }, hooks);
    expect(r).toMatchObject({ result: 'converted', outPath: log });
    // The original had no index files: the .log is the one backup.
    expect(r.backupPaths).toEqual([path.join(backupDir, 'topic-0', '00000000000000000000.log')]);
    await writeFile(log, mixedSegment().bytes);
    const unlocked = await convertSegment(log, { codec: 'zstd' }, { kind: 'inPlace', lock: false }, hooks);
    expect(unlocked.result).toBe('converted');
    expect(seen).toEqual([
      'verify: segment lock true',
      'swap: segment lock true, partition lock true',
      'verify: segment lock true',
      'swap: segment lock true, partition lock true',
      'verify: segment lock false',
      'swap: segment lock false, partition lock true',
    ]);
    expect((await ls(pdir)).filter((n) => n.includes('lock'))).toEqual([]);
  });

  it("the active segment's rebuilt indexes must fit segment.index.bytes exactly; other segments any size", async () => {
    const { log, pdir } = await setup();
    const convert = (segmentIndexBytes: number, at = pdir) =>
      convertSegment(
        path.join(at, '00000000000000000000.log'),
        { codec: 'none', indexIntervalBytes: 1024, segmentIndexBytes },
        { kind: 'outDir', dir: path.join(at, '..', `o${segmentIndexBytes}`) },
      );
    const refused = (idx: number, tix: number, limit: number) =>
      `this is its partition's active (last) segment and its rebuilt indexes need ${idx} bytes (.index) and ${tix} bytes (.timeindex), more than segment.index.bytes (${limit}) holds: a broker would fail to load the partition. Give the topic's value with --segment-index-bytes, a larger --index-interval-bytes, or leave the active segment out`;
    // mixedSegment: 5 offset index entries (40 bytes), 3 time index entries (36 bytes).
    expect((await convert(40)).result).toBe('converted');
    expect((await readFile(path.join(pdir, '..', 'o40', '00000000000000000000.index'))).length).toBe(40);
    expect((await readFile(path.join(pdir, '..', 'o40', '00000000000000000000.timeindex'))).length).toBe(36);
    expect((await convert(47)).result).toBe('converted');
    // 39 holds 4 offset entries (32 bytes) and still the 3 time entries.
    const r = await convert(39);
    expect([r.result, r.error?.code, r.error?.file, r.reason]).toEqual([
      'failed',
      'INVALID_ARGUMENT',
      log,
      refused(40, 36, 39),
    ]);
    // Increasing timestamps: a time entry with every offset entry, so the time index is the larger.
    const seg = Buffer.concat(
      Array.from({ length: 6 }, (_, i) =>
        v2Batch(
          BigInt(i * 40),
          Array.from({ length: 40 }, (_, k) => Buffer.from(`value ${i} ${k} ${'x'.repeat(20)}`)),
          1,
          {
            baseTimestamp: 1_600_000_000_000n + BigInt(i * 1000),
          },
        ),
      ),
    );
    const other = await setup(seg);
    expect((await convert(60, other.pdir)).result).toBe('converted');
    expect((await readFile(path.join(other.pdir, '..', 'o60', '00000000000000000000.index'))).length).toBe(
      40,
    );
    expect(
      (await readFile(path.join(other.pdir, '..', 'o60', '00000000000000000000.timeindex'))).length,
    ).toBe(60);
    // 59 holds the 5 offset entries and 4 time entries only.
    expect((await convert(59, other.pdir)).reason).toBe(refused(40, 60, 59));
    // Not the last segment of its partition: not checked.
    await writeFile(path.join(pdir, '00000000000000009000.log'), '');
    expect((await convert(8)).result).toBe('converted');
  });

  it('durationMs is the time of the call, rounded to 1/100 ms; throughput follows from it', async () => {
    const { dir, log } = await setup();
    const t0 = performance.now();
    const r = await convertSegment(log, { codec: 'lz4' }, { kind: 'outDir', dir: path.join(dir, 'o') });
    const elapsed = performance.now() - t0;
    expect(r.result).toBe('converted');
    expect(r.durationMs).toBeGreaterThan(0);
    expect(r.durationMs).toBeLessThanOrEqual(elapsed + 0.005);
    expect(Math.abs(r.durationMs * 100 - Math.round(r.durationMs * 100))).toBeLessThan(1e-6);
    expect(r.throughputMBps).toBe(Math.round((r.bytesIn / 1e6 / (r.durationMs / 1000)) * 100) / 100);
  });
});
