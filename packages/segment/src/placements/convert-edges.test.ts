/**
 * convertSegment at its edges, each found by a mutant of convert.ts that the broader suites let
 * live (docs/reliability.md §15): the int32 limit of a rewritten segment, the counters a report
 * owes an operator at each boundary (max.message.bytes, --only-if-smaller, oversize records), the
 * outcomes of a prepare whose source moves and of a commit whose stage says "already converted",
 * and what a commit may and may not touch when it adopts staged files.
 */
import {
  chmod,
  chown,
  mkdir,
  open,
  readdir,
  readFile,
  rename,
  stat,
  unlink,
  utimes,
  writeFile,
} from 'node:fs/promises';
import path from 'node:path';
import {
  type CompressionId,
  CompressionType,
  CorruptRecordError,
  type SegmentIndexBuilder,
} from '@seglift/format';
import { encodeLegacyEntry } from '@seglift/legacy';
import { needs, root } from '@seglift/testkit';
import { describe, expect, it } from 'vitest';
import { setMtimeNs } from '../files/libc.js';
import {
  INDEX_SUFFIX,
  LOG_SUFFIX,
  PARTITION_LOCK_NAME,
  SegmentFiles,
  TIMEINDEX_SUFFIX,
  TMP_SUFFIX,
} from '../files/names.js';
import { MAX_SEGMENT_BYTES, SegmentWriter } from '../rewrite/writer.js';
import { readStageRecord } from '../stage/stage.js';
import {
  mixedSegment,
  prng,
  text,
  tmpDir,
  v2Batch,
  writeSegmentWithIndexes,
} from '../test-support/fixtures.js';
import { ls, recordFsOps, sha256 } from '../test-support/helpers.js';
import { independentRecords } from '../test-support/independent.js';
import type { FsOp } from '../test-support/seams.js';
import { convertSegment } from './convert.js';

const BASE = '00000000000000000000';
const { GZIP, ZSTD } = CompressionType;

/** A partition with one segment of `bytes` and the indexes Kafka's recovery builds for it. */
async function segmentWithIndexes(bytes: Uint8Array): Promise<{ dir: string; pdir: string; log: string }> {
  const dir = await tmpDir();
  const log = await writeSegmentWithIndexes(dir, bytes);
  return { dir, pdir: path.dirname(log), log };
}

/** `n` batches of compressible JSON-like text, `perBatch` records each. */
function textBatches(codec: CompressionId, n: number, perBatch = 20, seed = 7): Uint8Array {
  const rand = prng(seed);
  const parts: Uint8Array[] = [];
  for (let b = 0; b < n; b++) {
    const values = Array.from({ length: perBatch }, () => text(rand, 300));
    parts.push(v2Batch(BigInt(b * perBatch), values, codec));
  }
  return Buffer.concat(parts);
}

/** `n` small magic-1 messages at offsets 0, 1, ... (values `v0`, `v1`, ...). */
function smallV1Entries(n: number): Uint8Array[] {
  return Array.from({ length: n }, (_, i) =>
    encodeLegacyEntry(BigInt(i), {
      magic: 1,
      timestamp: 1_600_000_000_000n,
      key: null,
      value: Buffer.from(`v${i}`),
    }),
  );
}

/**
 * The index builder's part, recording positions: a real SegmentIndexBuilder accepts only a file
 * written from position 0, and these cases start 2 GiB into one.
 */
function indexAt(positions: number[] = []): SegmentIndexBuilder {
  return {
    append: (position: number) => positions.push(position),
    appendBatchAt: (_view: DataView, _p: number, position: number) => positions.push(position),
  } as unknown as SegmentIndexBuilder;
}

describe('SegmentWriter: a rewritten segment keeps int32 positions', () => {
  const one = v2Batch(100n, [Buffer.from('a')], 0);
  const two = v2Batch(101n, [Buffer.from('bb')], 0);
  const cases = [
    { how: 'write', bytes: one, last: one, offset: 100n },
    { how: 'writeBatches', bytes: Buffer.concat([one, two]), last: two, offset: 101n },
  ] as const;
  for (const c of cases) {
    it(`${c.how}: a batch ending at byte 2^31-1 is written; one byte further is refused with file, position and offset`, async () => {
      const file = path.join(await tmpDir(), `${BASE}.log`);
      const fh = await open(file, 'w');
      try {
        const w = new SegmentWriter(fh, file, indexAt());
        const write = (b: Uint8Array) => (c.how === 'write' ? w.write(b) : w.writeBatches(b));
        const tooFar = MAX_SEGMENT_BYTES - c.bytes.length + 1;
        w.position = tooFar;
        const err = await write(c.bytes).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(CorruptRecordError);
        const e = err as CorruptRecordError;
        expect(e.detail).toBe('rewritten segment would exceed 2 GiB (positions are int32)');
        expect(e.file).toBe(file);
        expect(e.offset).toBe(c.offset);
        // The batch that would cross the limit: its own start.
        expect(e.position).toBe(MAX_SEGMENT_BYTES - c.last.length + 1);
        const appended: number[] = [];
        const fits = new SegmentWriter(fh, file, indexAt(appended));
        fits.position = MAX_SEGMENT_BYTES - c.bytes.length;
        await (c.how === 'write' ? fits.write(c.bytes) : fits.writeBatches(c.bytes));
        await fits.finish();
        expect(fits.position).toBe(MAX_SEGMENT_BYTES);
        expect(fits.batches).toBe(c.how === 'write' ? 1 : 2);
        expect(appended.at(-1)).toBe(MAX_SEGMENT_BYTES - c.last.length);
      } finally {
        await fh.close();
      }
      expect(Buffer.compare(await readFile(file), Buffer.from(c.bytes))).toBe(0);
    });
  }
});

describe("a report's counters at each boundary of writeConverted", () => {
  it('max.message.bytes: a recompressed batch of exactly maxBatchBytes is written; one byte less keeps the original', async () => {
    const bytes = textBatches(GZIP, 1);
    const { dir, log } = await segmentWithIndexes(bytes);
    const first = await convertSegment(log, { codec: 'zstd' }, { kind: 'outDir', dir: path.join(dir, 'a') });
    expect(first.result).toBe('converted');
    const size = first.bytesOut;
    expect(size).not.toBe(bytes.length);
    const exact = await convertSegment(
      log,
      { codec: 'zstd', maxBatchBytes: size },
      { kind: 'outDir', dir: path.join(dir, 'b') },
    );
    expect([exact.result, exact.oversizeKept, exact.batchesCopied, exact.bytesOut]).toEqual([
      'converted',
      0,
      0,
      size,
    ]);
    const less = await convertSegment(
      log,
      { codec: 'zstd', maxBatchBytes: size - 1 },
      { kind: 'outDir', dir: path.join(dir, 'c') },
    );
    // Its one batch kept as it is: nothing a rewrite would change, so a copy (target-format.ts).
    expect([less.result, less.oversizeKept, less.batchesCopied, less.bytesOut]).toEqual([
      'copied',
      1,
      1,
      bytes.length,
    ]);
  });

  it('--only-if-smaller (forced): a batch that would grow is kept and counted as copied; one of the same size is rewritten', async () => {
    const bytes = textBatches(GZIP, 3);
    const { dir, log } = await segmentWithIndexes(bytes);
    // Forced: without it a segment whose every batch would grow is only copied (alreadyConverted).
    const grown = await convertSegment(
      log,
      { codec: 'none', onlyIfSmaller: true, force: true },
      { kind: 'outDir', dir: path.join(dir, 'a') },
    );
    expect([grown.result, grown.keptSmaller, grown.batchesCopied, grown.bytesOut]).toEqual([
      'converted',
      3,
      3,
      bytes.length,
    ]);
    // zstd to zstd at the level it was written with: the same payload, the same size.
    const z = await segmentWithIndexes(textBatches(ZSTD, 2));
    const same = await convertSegment(
      z.log,
      { codec: 'zstd', force: true },
      { kind: 'outDir', dir: path.join(z.dir, 'a') },
    );
    expect(same.bytesOut).toBe((await stat(z.log)).size);
    const kept = await convertSegment(
      z.log,
      { codec: 'zstd', force: true, onlyIfSmaller: true },
      { kind: 'outDir', dir: path.join(z.dir, 'b') },
    );
    expect([kept.result, kept.keptSmaller, kept.batchesCopied]).toEqual(['converted', 0, 0]);
  });

  it('without --only-if-smaller a batch is rewritten to the target codec even when it grows (gzip to none)', async () => {
    const bytes = textBatches(GZIP, 2);
    const { log } = await segmentWithIndexes(bytes);
    const r = await convertSegment(log, { codec: 'none' }, { kind: 'inPlace' });
    expect([r.result, r.keptSmaller, r.codecOut]).toEqual(['converted', 0, { 'v2/none': 2 }]);
    expect(r.bytesOut).toBeGreaterThan(bytes.length);
  });

  it('a legacy message larger than maxBatchBytes is upconverted into a batch of its own and counted', async () => {
    const rand = prng(3);
    const entries = [0, 1, 2, 3].map((i) =>
      encodeLegacyEntry(BigInt(i), {
        magic: 1,
        timestamp: 1_600_000_000_000n + BigInt(i),
        key: null,
        value: text(rand, i === 2 ? 3000 : 100),
      }),
    );
    const bytes = Buffer.concat(entries);
    const { dir, log } = await segmentWithIndexes(bytes);
    const r = await convertSegment(
      log,
      { codec: 'none', maxBatchBytes: 1024 },
      { kind: 'outDir', dir: path.join(dir, 'o') },
    );
    expect([r.result, r.oversizeUpconverted, r.recordsOut]).toEqual(['converted', 1, 4]);
    const out = await readFile(path.join(dir, 'o', `${BASE}.log`));
    expect((await independentRecords(out)).map((x) => x.offset)).toEqual(['0', '1', '2', '3']);
  });

  it("a legacy message with a bad CRC fails the conversion naming the entry's file position and offset", async () => {
    const entries = smallV1Entries(3);
    entries[1][20] ^= 0xff; // inside the timestamp: covered by the CRC
    const bytes = Buffer.concat(entries);
    const { dir, log } = await segmentWithIndexes(bytes);
    const before = await sha256(log);
    const r = await convertSegment(log, { codec: 'zstd' }, { kind: 'outDir', dir: path.join(dir, 'o') });
    expect(r.result).toBe('failed');
    expect(r.error?.offset).toBe('1');
    // The start of the entry whose CRC fails.
    expect(r.error?.position).toBe(entries[0].length);
    expect(r.error?.file).toBe(log);
    expect(await sha256(log)).toBe(before);
  });

  it('--only-if-smaller never declines a legacy entry: a magic 0/1 segment is upconverted whatever its size', async () => {
    const entries = smallV1Entries(3);
    const { dir, log } = await segmentWithIndexes(Buffer.concat(entries));
    const r = await convertSegment(
      log,
      { codec: 'none', onlyIfSmaller: true },
      { kind: 'outDir', dir: path.join(dir, 'o') },
    );
    expect([r.result, r.keptSmaller, r.codecMixIn, r.codecOut]).toEqual([
      'converted',
      0,
      { 'v1/none': 3 },
      { 'v2/none': 1 },
    ]);
  });

  it('already in the target codec with a truncated tail: skipped in place, the tail counted', async () => {
    const bytes = Buffer.concat([textBatches(ZSTD, 2), Buffer.alloc(10, 7)]);
    const { log } = await segmentWithIndexes(bytes);
    const r = await convertSegment(log, { codec: 'zstd', acceptTruncatedTail: true }, { kind: 'inPlace' });
    expect([r.result, r.reason, r.truncatedTailBytes, r.batchesIn]).toEqual([
      'skipped',
      'already-target-codec',
      10,
      2,
    ]);
    const refused = await convertSegment(log, { codec: 'zstd' }, { kind: 'inPlace' });
    expect(refused.result).toBe('failed');
  });
});

describe('refusals leave everything as it was', () => {
  it("a backup dir inside the segment's partition is refused before anything is written", async () => {
    const { pdir, log } = await segmentWithIndexes(textBatches(GZIP, 1));
    const before = await ls(pdir);
    const r = await convertSegment(
      log,
      { codec: 'zstd' },
      { kind: 'inPlace', backupDir: path.join(pdir, 'bk') },
    );
    expect([r.result, r.error?.code]).toEqual(['failed', 'INVALID_ARGUMENT']);
    expect(await ls(pdir)).toEqual(before);
  });

  it('a source removed while it is converted into outDir is a failure (only a prepare calls that a skip)', async () => {
    const { dir, log } = await segmentWithIndexes(mixedSegment().bytes);
    const out = path.join(dir, 'out');
    const r = await convertSegment(
      log,
      { codec: 'zstd' },
      { kind: 'outDir', dir: out },
      { beforeVerify: () => unlink(log) },
    );
    expect([r.result, r.stage, r.error?.code]).toEqual(['failed', undefined, 'IO']);
    expect(await ls(out).catch(() => 'absent')).toBe('absent');
  });

  it('an outDir that existed before a failed conversion is kept, even empty', async () => {
    const bytes = Buffer.from(textBatches(GZIP, 2));
    bytes[bytes.length - 5] ^= 1; // the last batch's CRC no longer matches
    const { dir, log } = await segmentWithIndexes(bytes);
    const out = path.join(dir, 'out');
    await mkdir(out);
    const r = await convertSegment(log, { codec: 'zstd' }, { kind: 'outDir', dir: out });
    expect(r.result).toBe('failed');
    expect(await readdir(out)).toEqual([]);
  });
});

describe('prepare (stageDir) and commit (fromStage) outcomes', () => {
  it('already in the target codec: prepare records it (and drops what an earlier prepare staged); commit skips and drops the record', async () => {
    const bytes = textBatches(ZSTD, 3);
    const { dir, log } = await segmentWithIndexes(bytes);
    const sp = path.join(dir, 'stage', 'topic-0');
    const lz4 = await convertSegment(log, { codec: 'lz4' }, { kind: 'stage', dir: sp });
    expect([lz4.result, lz4.stage]).toEqual(['converted', 'staged']);
    expect((await ls(sp)).filter((f) => f.startsWith(BASE)).length).toBeGreaterThanOrEqual(3);
    const p = await convertSegment(log, { codec: 'zstd' }, { kind: 'stage', dir: sp });
    expect([p.result, p.reason, p.stage, p.outPath]).toEqual([
      'skipped',
      'already-target-codec',
      'staged',
      undefined,
    ]);
    const record = await readStageRecord(sp, 0n);
    expect(record?.files).toBeNull();
    expect(record?.counts.batchesIn).toBe(3);
    // Only the record is left of this base: the lz4 files went with it.
    expect((await ls(sp)).filter((f) => f.startsWith(BASE) && !f.includes('stage'))).toEqual([]);
    const before = await sha256(log);
    const c = await convertSegment(log, { codec: 'zstd' }, { kind: 'fromStage', dir: sp });
    expect([c.result, c.reason, c.stage, c.batchesIn, c.recordsIn]).toEqual([
      'skipped',
      'already-target-codec',
      'committed',
      3,
      60,
    ]);
    expect(await readStageRecord(sp, 0n)).toBeUndefined();
    expect(await sha256(log)).toBe(before);
  });

  const moves = [
    { how: 'removed', reason: 'source-gone', stage: 'gone' },
    { how: 'replaced by a copy of the same bytes', reason: 'source-changed', stage: 'changed' },
    { how: 'replaced by other bytes', reason: 'source-changed', stage: 'changed' },
  ] as const;
  for (const m of moves) {
    it(`a source ${m.how} while prepare reads it: skipped (${m.reason}), nothing staged, nothing left`, async () => {
      const seg = mixedSegment();
      const { dir, log } = await segmentWithIndexes(seg.bytes);
      const sp = path.join(dir, 'stage', 'topic-0');
      const r = await convertSegment(
        log,
        { codec: 'zstd' },
        { kind: 'stage', dir: sp },
        {
          beforeVerify: async () => {
            if (m.how === 'removed') return unlink(log);
            const copy = Buffer.from(seg.bytes);
            if (m.how === 'replaced by other bytes') copy[copy.length - 1] ^= 1;
            await writeFile(`${log}.new`, copy);
            await rename(`${log}.new`, log);
          },
        },
      );
      expect([r.result, r.reason, r.stage, r.error]).toEqual(['skipped', m.reason, m.stage, undefined]);
      expect(await readStageRecord(sp, 0n)).toBeUndefined();
      // The stage partition directory this prepare made is removed again.
      expect(await ls(sp).catch(() => 'absent')).toBe('absent');
    });
  }

  it('a second prepare of a staged base removes the older record before its own files take the names', async () => {
    const { dir, log } = await segmentWithIndexes(mixedSegment().bytes);
    const sp = path.join(dir, 'stage', 'topic-0');
    expect((await convertSegment(log, { codec: 'zstd', level: 3 }, { kind: 'stage', dir: sp })).stage).toBe(
      'staged',
    );
    const { result: r, ops } = await recordFsOps(() =>
      convertSegment(log, { codec: 'zstd', level: 9 }, { kind: 'stage', dir: sp }),
    );
    expect(r.stage).toBe('staged');
    const record = new SegmentFiles(sp, 0n).stageRecord;
    const removed = ops.findIndex((op) => op.kind === 'unlink' && op.path === record);
    const placed = ops.findIndex(
      (op) => op.kind === 'rename' && op.path === path.join(sp, `${BASE}.timeindex`),
    );
    expect(removed).toBeGreaterThanOrEqual(0);
    expect(removed).toBeLessThan(placed);
    expect((await readStageRecord(sp, 0n))?.options.level).toBe(9);
  });

  it('the active segment: a commit refuses staged indexes larger than segment.index.bytes, and adopts them once a segment follows', async () => {
    const { dir, pdir, log } = await segmentWithIndexes(mixedSegment().bytes);
    const sp = path.join(dir, 'stage', 'topic-0');
    const p = await convertSegment(log, { codec: 'zstd', indexIntervalBytes: 1 }, { kind: 'stage', dir: sp });
    expect(p.stage).toBe('staged');
    const before = await sha256(log);
    const refused = await convertSegment(
      log,
      { codec: 'zstd', indexIntervalBytes: 1, segmentIndexBytes: 16 },
      { kind: 'fromStage', dir: sp },
    );
    expect([refused.result, refused.error?.code]).toEqual(['failed', 'INVALID_ARGUMENT']);
    expect(refused.reason).toContain('segment.index.bytes (16)');
    expect(await sha256(log)).toBe(before);
    await writeFile(path.join(pdir, `${'9'.repeat(20)}.log`), '');
    const c = await convertSegment(
      log,
      { codec: 'zstd', indexIntervalBytes: 1, segmentIndexBytes: 16 },
      { kind: 'fromStage', dir: sp },
    );
    expect([c.result, c.stage]).toEqual(['converted', 'committed']);
  });
});

/** The ops of a commit on the temp names of the partition's segment 0 (the staged files' links). */
function tempOps(ops: FsOp[], pdir: string): string[] {
  const seg = new SegmentFiles(pdir, 0n);
  const names = new Set([LOG_SUFFIX, INDEX_SUFFIX, TIMEINDEX_SUFFIX].map((s) => seg.tmp(s)));
  return ops.filter((op) => names.has(op.path)).map((op) => `${op.kind} ${path.basename(op.path)}`);
}

describe('a commit adopting staged files', () => {
  const T = 1_700_000_000_000;
  /** T and a sub-millisecond part: the commit keeps the nanosecond. */
  const T_NS = BigInt(T) * 1_000_000n + 123_456_789n;
  async function prepared(): Promise<{ dir: string; pdir: string; log: string; sp: string; staged: string }> {
    const s = await segmentWithIndexes(mixedSegment().bytes);
    for (const f of await readdir(s.pdir)) {
      await utimes(path.join(s.pdir, f), T / 1000, T / 1000);
      setMtimeNs(path.join(s.pdir, f), T_NS);
    }
    const sp = path.join(s.dir, 'stage', 'topic-0');
    const p = await convertSegment(s.log, { codec: 'zstd' }, { kind: 'stage', dir: sp });
    expect(p.stage).toBe('staged');
    return { ...s, sp, staged: path.join(sp, BASE) };
  }
  async function commit(log: string, sp: string, level?: number) {
    const { result: r, ops } = await recordFsOps(() =>
      convertSegment(log, { codec: 'zstd', level }, { kind: 'fromStage', dir: sp }),
    );
    return { r, ops };
  }
  const lockOps = (ops: FsOp[], pdir: string) =>
    ops.flatMap((op, i) =>
      op.path === path.join(pdir, PARTITION_LOCK_NAME) && (op.kind === 'link' || op.kind === 'unlink')
        ? [{ i, kind: op.kind }]
        : [],
    );

  it('under one partition lock from before the links to after the swap; nothing rewritten, nothing re-synced', async () => {
    const { pdir, log, sp } = await prepared();
    const { r, ops } = await commit(log, sp);
    expect([r.result, r.stage]).toEqual(['converted', 'committed']);
    const locks = lockOps(ops, pdir);
    expect(locks.map((l) => l.kind)).toEqual(['link', 'unlink']);
    const firstLink = ops.findIndex((op) => op.kind === 'link' && op.path.endsWith(TMP_SUFFIX));
    const firstSwap = ops.findIndex((op) => op.kind === 'rename' && op.path.endsWith('.swap'));
    expect(locks[0].i).toBeLessThan(firstLink);
    expect(locks[1].i).toBeGreaterThan(firstSwap);
    const t = tempOps(ops, pdir);
    expect(
      t.filter((o) => !o.startsWith('link ') && !o.startsWith('unlink ') && !o.startsWith('rename ')),
    ).toEqual([]);
    for (const f of await readdir(pdir))
      expect((await stat(path.join(pdir, f), { bigint: true })).mtimeNs).toBe(T_NS);
  });

  it('a stale stage (other options) is discarded and the segment converted with the partition lock let go meanwhile', async () => {
    const { pdir, log, sp } = await prepared();
    const { r, ops } = await commit(log, sp, 9);
    expect([r.result, r.stage]).toEqual(['converted', 'discarded']);
    const locks = lockOps(ops, pdir);
    expect(locks.map((l) => l.kind)).toEqual(['link', 'unlink', 'link', 'unlink']);
    const created = ops.findIndex(
      (op) => op.kind === 'create' && op.path === new SegmentFiles(pdir, 0n).tmp(LOG_SUFFIX),
    );
    expect(created).toBeGreaterThan(locks[1].i);
    expect(created).toBeLessThan(locks[2].i);
  });

  it("a staged file whose mode or mtime differs from the source (by 1 ns) gets the source's, and is synced; the others are left", async () => {
    const { pdir, log, sp, staged } = await prepared();
    await chmod(`${staged}.index`, 0o600);
    // One nanosecond later: no rounding hides it.
    setMtimeNs(`${staged}.timeindex`, T_NS + 1n);
    expect((await stat(`${staged}.timeindex`, { bigint: true })).mtimeNs).toBe(T_NS + 1n);
    const { r, ops } = await commit(log, sp);
    expect(r.result).toBe('converted');
    const t = tempOps(ops, pdir).filter((o) => /^(chown|chmod|utimes|fsync) /.test(o));
    expect(t.some((o) => o.includes('.log.'))).toBe(false);
    expect(t.filter((o) => o.includes('.index.'))).toEqual(
      expect.arrayContaining([
        'chmod 00000000000000000000.index.seglift-tmp',
        'fsync 00000000000000000000.index.seglift-tmp',
      ]),
    );
    expect(t.filter((o) => o.includes('.index.')).some((o) => o.startsWith('utimes'))).toBe(false);
    expect(t.filter((o) => o.includes('.timeindex.'))).toEqual([
      'utimes 00000000000000000000.timeindex.seglift-tmp',
      'fsync 00000000000000000000.timeindex.seglift-tmp',
    ]);
    const mode = (f: string) => stat(path.join(pdir, f)).then((s) => s.mode & 0o7777);
    expect(await mode(`${BASE}.index`)).toBe(0o644);
    expect((await stat(path.join(pdir, `${BASE}.timeindex`), { bigint: true })).mtimeNs).toBe(T_NS);
  });

  for (const [what, uid, gid] of [
    ['owner', 65534, 0],
    ['group', 0, 65534],
  ] as const) {
    needs(root).it(`a staged file of another ${what} is given the source's, and synced`, async () => {
      const { pdir, log, sp, staged } = await prepared();
      await chown(`${staged}.log`, uid, gid);
      const { r, ops } = await commit(log, sp);
      expect(r.result).toBe('converted');
      const t = tempOps(ops, pdir).filter((o) => /^(chown|chmod|utimes|fsync) /.test(o));
      expect(t).toEqual(
        expect.arrayContaining([
          'chown 00000000000000000000.log.seglift-tmp',
          'fsync 00000000000000000000.log.seglift-tmp',
        ]),
      );
      expect(t.some((o) => !o.includes('.log.'))).toBe(false);
      const st = await stat(log);
      expect([st.uid, st.gid]).toEqual([0, 0]);
    });
  }
});
