import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { compress, crc32, crc32c, type RecordBatchFields } from '@seglift/format';
import { encodeCompressedWrapper, encodeLegacyEntry } from '@seglift/legacy';
import { describe, expect, it } from 'vitest';
import { convertSegment } from '../placements/convert.js';
import { describeSegment } from '../test-support/describe.js';
import { mixedSegment, prng, tmpDir, v2Batch, writeSegment } from '../test-support/fixtures.js';
import { recoveryIndexes, shallowEntries } from '../test-support/independent.js';
import { RecompressedBatchProofs, type UpconvertedRun, UpconvertedRunProofs } from './proofs.js';
import { formatReportTable, reportsToJSON, summarize } from './report.js';
import { type RewriteFiles, type VerifyRewriteOptions, verifyRewrite, verifySegment } from './verify.js';

describe('verifySegment', () => {
  it('accepts a legacy segment with recovery-rule indexes and reports index problems', async () => {
    const seg = mixedSegment();
    const dir = await tmpDir();
    const log = await writeSegment(dir, seg.bytes);
    const ok = await verifySegment(log);
    expect(ok).toMatchObject({
      ok: true,
      entries: 67,
      records: 274,
      hasIndex: false,
      hasTimeIndex: false,
      problems: [],
    });
    const out = path.join(dir, 'o');
    await convertSegment(log, { codec: 'lz4', grouping: 'kafka' }, { kind: 'outDir', dir: out });
    const outLog = path.join(out, path.basename(log));
    expect((await verifySegment(outLog)).ok).toBe(true);
    const entries = shallowEntries(await readFile(outLog));
    // An index entry that names the wrong batch, a time index entry with a wrong timestamp.
    const idx = Buffer.alloc(16);
    idx.writeInt32BE(Number(entries[5].lastOffset), 0);
    idx.writeInt32BE(entries[5].position, 4);
    idx.writeInt32BE(Number(entries[9].lastOffset) + 1, 8);
    idx.writeInt32BE(entries[9].position, 12);
    await writeFile(outLog.replace(/\.log$/, '.index'), idx);
    const tix = Buffer.alloc(12);
    tix.writeBigInt64BE(123n, 0);
    tix.writeInt32BE(Number(entries[40].lastOffset), 8);
    await writeFile(outLog.replace(/\.log$/, '.timeindex'), tix);
    const bad = await verifySegment(outLog);
    expect(bad.ok).toBe(false);
    expect(bad.problems.map((p) => [p.kind, p.message])).toEqual([
      ['index', `entry 1: index offset ${entries[9].lastOffset + 1n}, log offset ${entries[9].lastOffset}`],
      ['timeindex', `entry 0: index timestamp 123, log timestamp ${entries[40].maxTimestamp}`],
    ]);
  });

  it('reports a CRC error as a structure problem with position and offset', async () => {
    const seg = Buffer.from(mixedSegment().bytes);
    const e = shallowEntries(seg).find((x) => x.magic === 2)!;
    seg[e.position + 80] ^= 1;
    const dir = await tmpDir();
    const r = await verifySegment(await writeSegment(dir, seg));
    expect(r.ok).toBe(false);
    expect(r.error).toMatchObject({
      code: 'CRC_MISMATCH',
      position: e.position + 17,
      offset: e.bytes.readBigInt64BE(0).toString(),
    });
    // How far the segment is good: the entries before the bad one.
    const before = shallowEntries(seg).filter((x) => x.position < e.position);
    expect(r).toMatchObject({
      stoppedAtError: true,
      entries: before.length,
      lastOffset: before.at(-1)!.lastOffset.toString(),
    });
    expect(r.problems).toEqual([
      {
        kind: 'structure',
        // The detail, not the message rendered with the position and offset.
        message: expect.stringMatching(/^CRC-32C mismatch: stored 0x[0-9a-f]{8}, computed 0x[0-9a-f]{8}$/),
        file: r.path,
        position: e.position + 17,
        offset: e.bytes.readBigInt64BE(0).toString(),
      },
    ]);
  });
});

describe('verifySegment: offsets, counts and what stops the scan', () => {
  it('reports offsets below the base offset, not increasing, and a batch last offset below its records', async () => {
    const dir = await tmpDir();
    const log = await writeSegment(
      dir,
      Buffer.concat([
        // 98 and 99 below the base offset 100.
        v2Batch(98n, values(3, 'a'), 0),
        // Records 101..103 in a batch whose header says it ends at 102.
        v2Batch(101n, values(3, 'b'), 1, { lastOffsetDelta: 1 }),
        // 103 again.
        v2Batch(103n, values(2, 'c'), 0),
      ]),
      100n,
    );
    const second = v2Batch(98n, values(3, 'a'), 0).length;
    const third = second + v2Batch(101n, values(3, 'b'), 1, { lastOffsetDelta: 1 }).length;
    const r = await verifySegment(log);
    const { durationMs, ...rest } = r;
    expect(durationMs).toBeGreaterThanOrEqual(0);
    expect(rest).toEqual({
      path: log,
      ok: false,
      entries: 3,
      records: 8,
      bytes: (await readFile(log)).length,
      firstOffset: '98',
      lastOffset: '104',
      indexEntries: 0,
      timeIndexEntries: 0,
      hasIndex: false,
      hasTimeIndex: false,
      problems: [
        {
          kind: 'offsets',
          message: 'offset 98 is below the segment base offset 100',
          file: log,
          position: 0,
          offset: '98',
        },
        {
          kind: 'offsets',
          message: 'offset 99 is below the segment base offset 100',
          file: log,
          position: 0,
          offset: '99',
        },
        {
          kind: 'offsets',
          message: "batch last offset 102 is below its records' 103",
          file: log,
          position: second,
          offset: '102',
        },
        {
          kind: 'offsets',
          message: 'offset 103 does not follow 103',
          file: log,
          position: third,
          offset: '103',
        },
      ],
    });
    // Shallow: each entry's first offset and header last offset only, record counts from the headers.
    const shallow = await verifySegment(log, { shallow: true });
    expect(shallow).toMatchObject({ entries: 3, records: 8, firstOffset: '98', lastOffset: '104' });
    expect(shallow.problems.map((p) => p.message)).toEqual([
      'offset 98 is below the segment base offset 100',
    ]);
  });

  it('keeps at most 100 offset problems', async () => {
    const dir = await tmpDir();
    const batch = v2Batch(0n, values(1, 'd'), 0);
    const log = await writeSegment(dir, Buffer.concat(Array.from({ length: 110 }, () => batch)));
    const r = await verifySegment(log);
    expect(r).toMatchObject({ ok: false, entries: 110, records: 110 });
    // Every batch after the first repeats offset 0: 109 problems.
    expect(r.problems.length).toBe(100);
    expect(r.problems[99]).toEqual({
      kind: 'offsets',
      message: 'offset 0 does not follow 0',
      file: log,
      position: 100 * batch.length,
      offset: '0',
    });
  });

  it('counts a clean converted segment with its indexes; legacy entries count no records when shallow', async () => {
    const dir = await tmpDir();
    const log = await writeSegment(dir, mixedSegment().bytes);
    await convertSegment(
      log,
      { codec: 'zstd', grouping: 'kafka' },
      { kind: 'outDir', dir: path.join(dir, 'o') },
    );
    const outLog = path.join(dir, 'o', path.basename(log));
    const bytes = await readFile(outLog);
    const entries = shallowEntries(bytes);
    const idx = await readFile(outLog.replace(/\.log$/, '.index'));
    const tix = await readFile(outLog.replace(/\.log$/, '.timeindex'));
    const r = await verifySegment(outLog);
    expect(r).toMatchObject({
      ok: true,
      entries: entries.length,
      records: 274,
      bytes: bytes.length,
      firstOffset: '0',
      lastOffset: entries.at(-1)!.lastOffset.toString(),
      indexEntries: idx.length / 8,
      timeIndexEntries: tix.length / 12,
      hasIndex: true,
      hasTimeIndex: true,
      problems: [],
    });
    expect(r.indexEntries).toBeGreaterThan(0);
    expect(r.stoppedAtError).toBeUndefined();
    expect((await verifySegment(log, { shallow: true })).records).toBe(
      shallowEntries(mixedSegment().bytes)
        .filter((e) => e.magic === 2)
        .reduce((n, e) => n + e.bytes.readInt32BE(57), 0),
    );
  });

  it('a path that is not a segment is a structure problem with the typed error', async () => {
    const dir = await tmpDir();
    const file = path.join(dir, 'notes.txt');
    await writeFile(file, 'x');
    const r = await verifySegment(file);
    expect(r).toMatchObject({ path: file, ok: false, entries: 0, error: { code: 'NOT_A_SEGMENT', file } });
    expect(r.problems).toEqual([
      {
        kind: 'structure',
        message:
          'not a log segment: Kafka names segments <20-digit base offset>.log (an .index, .timeindex or other file cannot be read as one)',
        file,
      },
    ]);
  });
});

describe('describeSegment and reports', () => {
  it('summarizes every batch with header fields and codec', async () => {
    const dir = await tmpDir();
    const log = await writeSegment(dir, mixedSegment().bytes);
    const all = [];
    for await (const b of describeSegment(log)) all.push(b);
    expect(all.length).toBe(67);
    expect(all[0]).toMatchObject({
      position: 0,
      magic: 0,
      codec: 'none',
      baseOffset: '0',
      timestampType: 'NoTimestampType',
      isValid: true,
    });
    const control = all.find((b) => b.isControl)!;
    expect(control).toMatchObject({
      magic: 2,
      codec: 'none',
      count: 1,
      isTransactional: true,
      producerId: '78',
    });
    const idem = all.find((b) => b.producerId === '77')!;
    expect(idem).toMatchObject({
      codec: 'gzip',
      baseSequence: 30,
      lastSequence: 44,
      partitionLeaderEpoch: 3,
    });
  });

  it('formats a table and JSON', async () => {
    const dir = await tmpDir();
    const log = await writeSegment(dir, mixedSegment().bytes);
    const r = await convertSegment(
      log,
      { codec: 'zstd', grouping: 'kafka' },
      { kind: 'outDir', dir: path.join(dir, 'o') },
    );
    const skipped = { ...r, path: 'b.log', result: 'skipped' as const, reason: 'active-segment' };
    const s = summarize([r, skipped]);
    expect(s).toMatchObject({ segments: 2, converted: 1, skipped: 1, failed: 0, recordsIn: 548 });
    const table = formatReportTable([r, skipped], s);
    const lines = table.split('\n');
    expect(lines.length).toBe(5);
    expect(lines[0]).toMatch(/^segment\s+result\s+in\s+out\s+ratio\s+records\s+codecs in\s+MB\/s\s+note$/);
    expect(lines[3]).toContain('active-segment');
    expect(lines[4]).toContain('1 conv/1 skip/0 fail');
    const json = JSON.parse(reportsToJSON([r], summarize([r])));
    expect(json.segments[0].codecOut).toEqual({ 'v2/none': 2, 'v2/zstd': 65 });
  });
});

/** A source segment and a rewritten log beside it, with the indexes the recovery rule gives for it. */
async function rewrite(source: Uint8Array, out: Uint8Array, base = 0n, interval = 4096) {
  const dir = await tmpDir();
  const log = await writeSegment(dir, source, base);
  await mkdir(path.join(dir, 'out'));
  const name = path.join(dir, 'out', path.basename(log, '.log'));
  const files: RewriteFiles = { log: `${name}.log`, index: `${name}.index`, timeindex: `${name}.timeindex` };
  const { index, timeindex } = recoveryIndexes(Buffer.from(out), base, interval);
  await writeFile(files.log, out);
  await writeFile(files.index, index);
  await writeFile(files.timeindex, timeindex);
  return { log, files };
}

/** The typed error verifyRewrite rejects with: class, field, file, byte position, offset, detail. */
async function rejection(p: Promise<void>) {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof Error)) throw new Error('verifyRewrite accepted the rewrite');
  const e = err as Error & {
    code?: string;
    field?: string;
    file?: string;
    position?: number;
    offset?: bigint;
    detail?: string;
  };
  return {
    name: e.name,
    code: e.code,
    field: e.field,
    file: e.file,
    position: e.position,
    offset: e.offset,
    detail: e.detail,
  };
}

const values = (n: number, tag: string) => Array.from({ length: n }, (_, i) => Buffer.from(`${tag}-${i}`));
/** `n` legacy v1 messages from offset `first` (CreateTime), values `<tag>-<offset>`. */
const legacy = (first: bigint, n: number, tag = 'm') =>
  Buffer.concat(
    Array.from({ length: n }, (_, i) => {
      const offset = first + BigInt(i);
      return encodeLegacyEntry(offset, {
        magic: 1,
        timestamp: 1_500_000_000_000n + offset,
        key: null,
        value: Buffer.from(`${tag}-${offset}`),
      });
    }),
  );

/** What convert writes for `source` (legacy messages coalesced, no compression). */
async function converted(source: Uint8Array): Promise<Buffer> {
  const dir = await tmpDir();
  const log = await writeSegment(dir, source);
  const r = await convertSegment(log, { codec: 'none' }, { kind: 'outDir', dir: path.join(dir, 'o') });
  expect(r.result).toBe('converted');
  return readFile(path.join(dir, 'o', path.basename(log)));
}

describe('verifyRewrite', () => {
  // Source: two gzip batches at offsets 5 and 10 (base 5); the rewrite: the same in zstd.
  const src = () => Buffer.concat([v2Batch(5n, values(5, 'a'), 1), v2Batch(10n, values(4, 'b'), 1)]);
  const out = (over: Partial<RecordBatchFields> = {}, second = values(4, 'b')) =>
    Buffer.concat([v2Batch(5n, values(5, 'a'), 4), v2Batch(10n, second, 4, over)]);
  const outSecond = () => v2Batch(5n, values(5, 'a'), 4).length;

  it('accepts the same records in another codec with the same header fields', async () => {
    const { log, files } = await rewrite(src(), out(), 5n);
    await expect(verifyRewrite(log, files, { baseOffset: 5n })).resolves.toBeUndefined();
  });

  it('rejects each header field that differs, naming it, the rewritten batch and the source offset', async () => {
    const changed: [string, Partial<RecordBatchFields>, string][] = [
      ['baseOffset', { baseOffset: 11n }, '10 vs 11'],
      ['partitionLeaderEpoch', { partitionLeaderEpoch: 4 }, '3 vs 4'],
      ['lastOffsetDelta', { lastOffsetDelta: 4 }, '3 vs 4'],
      [
        'baseTimestamp',
        { baseTimestamp: 1_600_000_000_001n, maxTimestamp: 1_600_000_000_021n },
        '1600000000000 vs 1600000000001',
      ],
      ['maxTimestamp', { maxTimestamp: 1_600_000_000_022n }, '1600000000021 vs 1600000000022'],
      ['producerId', { producerId: 7n }, '-1 vs 7'],
      ['producerEpoch', { producerEpoch: 2 }, '-1 vs 2'],
      ['baseSequence', { baseSequence: 9 }, '-1 vs 9'],
      // The timestamp type bit (LogAppendTime); the codec bits may differ.
      ['attributes', { attributes: 0x08 }, '1 vs 12'],
    ];
    for (const [field, over, detail] of changed) {
      const { log, files } = await rewrite(src(), out(over), 5n);
      expect(await rejection(verifyRewrite(log, files, { baseOffset: 5n }))).toEqual({
        name: 'VerifyMismatchError',
        code: 'VERIFY_MISMATCH',
        field,
        file: files.log,
        position: outSecond(),
        offset: 10n,
        detail: `verify mismatch in ${field}: ${detail}`,
      });
    }
    // recordsCount: one record less, the header's last offset delta kept.
    const { log, files } = await rewrite(
      src(),
      out({ lastOffsetDelta: 3, maxTimestamp: 1_600_000_000_021n }, values(3, 'b')),
      5n,
    );
    expect(await rejection(verifyRewrite(log, files, { baseOffset: 5n }))).toMatchObject({
      field: 'recordsCount',
      file: files.log,
      position: outSecond(),
      offset: 10n,
      detail: 'verify mismatch in recordsCount: 4 vs 3',
    });
  });

  it('rejects a record that differs, a missing batch and an extra batch', async () => {
    const value = values(4, 'b').map((v, i) => (i === 2 ? Buffer.from('b-X') : v));
    let { log, files } = await rewrite(src(), out({}, value), 5n);
    expect(await rejection(verifyRewrite(log, files, { baseOffset: 5n }))).toMatchObject({
      name: 'VerifyMismatchError',
      field: 'value',
      file: files.log,
      position: outSecond(),
      offset: 12n,
    });
    const first = v2Batch(5n, values(5, 'a'), 1).length;
    ({ log, files } = await rewrite(src(), v2Batch(5n, values(5, 'a'), 4), 5n));
    expect(await rejection(verifyRewrite(log, files, { baseOffset: 5n }))).toEqual({
      name: 'VerifyMismatchError',
      code: 'VERIFY_MISMATCH',
      field: 'batch',
      file: files.log,
      position: undefined,
      offset: 10n,
      detail: `verify mismatch in batch: source batch at ${first} is missing`,
    });
    const extra = v2Batch(14n, values(1, 'c'), 4);
    ({ log, files } = await rewrite(src(), Buffer.concat([out(), extra]), 5n));
    expect(await rejection(verifyRewrite(log, files, { baseOffset: 5n }))).toMatchObject({
      field: 'batch',
      file: files.log,
      position: out().length,
      offset: 14n,
      detail: 'verify mismatch in batch: extra batch',
    });
  });

  it('rejects a rewritten entry that is not a v2 batch, naming its magic, position and offset', async () => {
    const { log, files } = await rewrite(legacy(3n, 2), legacy(3n, 2), 3n);
    expect(await rejection(verifyRewrite(log, files, { baseOffset: 3n }))).toEqual({
      name: 'VerifyMismatchError',
      code: 'VERIFY_MISMATCH',
      field: 'magic',
      file: files.log,
      position: 0,
      offset: 3n,
      detail: 'verify mismatch in magic: rewritten entry has magic 1',
    });
  });

  it('legacy source: the records continue across batches; a differing, missing or extra record is rejected', async () => {
    const six = await converted(legacy(0n, 6));
    let { log, files } = await rewrite(legacy(0n, 6), six);
    await expect(verifyRewrite(log, files, { baseOffset: 0n })).resolves.toBeUndefined();
    // The legacy records split over three batches of the rewrite.
    const split = Buffer.concat([
      await converted(legacy(0n, 2)),
      await converted(legacy(2n, 3)).then((b) => b),
      await converted(legacy(5n, 1)),
    ]);
    expect(shallowEntries(split).length).toBe(3);
    ({ log, files } = await rewrite(legacy(0n, 6), split));
    await expect(verifyRewrite(log, files, { baseOffset: 0n })).resolves.toBeUndefined();

    ({ log, files } = await rewrite(Buffer.concat([legacy(0n, 4), legacy(4n, 2, 'x')]), six));
    expect(await rejection(verifyRewrite(log, files, { baseOffset: 0n }))).toMatchObject({
      field: 'value',
      file: files.log,
      position: 0,
      offset: 4n,
    });
    ({ log, files } = await rewrite(legacy(0n, 6), await converted(legacy(0n, 4))));
    expect(await rejection(verifyRewrite(log, files, { baseOffset: 0n }))).toEqual({
      name: 'VerifyMismatchError',
      code: 'VERIFY_MISMATCH',
      field: 'record',
      file: files.log,
      position: undefined,
      offset: 4n,
      detail: 'verify mismatch in record: record at offset 4 is missing',
    });
    ({ log, files } = await rewrite(legacy(0n, 4), six));
    expect(await rejection(verifyRewrite(log, files, { baseOffset: 0n }))).toMatchObject({
      field: 'record',
      file: files.log,
      position: 0,
      offset: 4n,
      detail: 'verify mismatch in record: extra record',
    });
  });

  it('rejects a rewritten batch that continues past a source batch boundary', async () => {
    const tail = v2Batch(6n, values(2, 't'), 1);
    const out = await converted(Buffer.concat([legacy(0n, 6), tail]));
    const { log, files } = await rewrite(Buffer.concat([legacy(0n, 4), tail]), out);
    expect(await rejection(verifyRewrite(log, files, { baseOffset: 0n }))).toEqual({
      name: 'VerifyMismatchError',
      code: 'VERIFY_MISMATCH',
      field: 'batch boundary',
      file: files.log,
      position: 0,
      offset: 4n,
      detail: 'verify mismatch in batch boundary: rewritten batch continues past a source batch boundary',
    });
  });

  it("the indexes must be the recovery rule's for the new log, with the index interval given", async () => {
    const many = Buffer.concat(
      Array.from({ length: 6 }, (_, i) => v2Batch(BigInt(i * 5), values(5, `v${i}`), 1)),
    );
    const rewritten = Buffer.concat(
      Array.from({ length: 6 }, (_, i) => v2Batch(BigInt(i * 5), values(5, `v${i}`), 0)),
    );
    const { log, files } = await rewrite(many, rewritten, 0n, 100);
    const opts: VerifyRewriteOptions = { baseOffset: 0n, indexIntervalBytes: 100 };
    await expect(verifyRewrite(log, files, opts)).resolves.toBeUndefined();
    expect(await rejection(verifyRewrite(log, files, { baseOffset: 0n }))).toEqual({
      name: 'VerifyMismatchError',
      code: 'VERIFY_MISMATCH',
      field: '.index',
      file: files.index,
      position: undefined,
      offset: undefined,
      detail: 'verify mismatch in .index: offset index differs from the one the new log gives',
    });
    const tix = await readFile(files.timeindex);
    tix.writeBigInt64BE(tix.readBigInt64BE(0) + 1n, 0);
    await writeFile(files.timeindex, tix);
    expect(await rejection(verifyRewrite(log, files, opts))).toMatchObject({
      field: '.timeindex',
      file: files.timeindex,
      detail: 'verify mismatch in .timeindex: time index differs from the one the new log gives',
    });
  });

  it('a recompressed batch with a proof: its stored CRC and size must be the proven ones', async () => {
    const source = src();
    const second = v2Batch(5n, values(5, 'a'), 1).length;
    const proofs = (bytes: Uint8Array) => {
      const p = new RecompressedBatchProofs();
      p.add(0, v2Batch(5n, values(5, 'a'), 4));
      p.add(second, bytes);
      return p;
    };
    const written = v2Batch(10n, values(4, 'b'), 4);
    // The proven batch: its records are not decoded again (a proof of other bytes is refused).
    let { log, files } = await rewrite(source, out(), 5n);
    await expect(
      verifyRewrite(log, files, { baseOffset: 5n, proofs: proofs(written) }),
    ).resolves.toBeUndefined();
    // Another batch with the same header fields and a valid CRC of its own.
    const forged = values(4, 'b').map((v, i) => (i === 1 ? Buffer.from('b-Y') : v));
    ({ log, files } = await rewrite(source, out({}, forged), 5n));
    const forgedCrc = Buffer.from(v2Batch(10n, forged, 4)).readUInt32BE(17);
    const crc = Buffer.from(written).readUInt32BE(17);
    expect(await rejection(verifyRewrite(log, files, { baseOffset: 5n, proofs: proofs(written) }))).toEqual({
      name: 'VerifyMismatchError',
      code: 'VERIFY_MISMATCH',
      field: 'batch',
      file: files.log,
      position: outSecond(),
      offset: 10n,
      detail: `verify mismatch in batch: rewritten batch is not the one written (CRC ${forgedCrc} vs ${crc}, ${written.length} vs ${written.length} bytes)`,
    });
    // Same CRC, another size.
    ({ log, files } = await rewrite(source, out(), 5n));
    const longer = Buffer.concat([written, Buffer.alloc(1)]);
    expect(
      await rejection(verifyRewrite(log, files, { baseOffset: 5n, proofs: proofs(longer) })),
    ).toMatchObject({
      field: 'batch',
      position: outSecond(),
      detail: `verify mismatch in batch: rewritten batch is not the one written (CRC ${crc} vs ${crc}, ${written.length} vs ${longer.length} bytes)`,
    });
  });

  it('a run of legacy entries with a proof: source and output bytes must have the CRC-32s recorded', async () => {
    // A v2 batch, four legacy messages (the run), a v2 batch: the run starts inside both files.
    const head = v2Batch(0n, values(2, 'h'), 1);
    const tail = v2Batch(6n, values(2, 't'), 1);
    const source = Buffer.concat([head, legacy(2n, 4), tail]);
    const out = await converted(source);
    const batches = shallowEntries(out);
    expect(batches.map((b) => b.lastOffset)).toEqual([1n, 5n, 7n]);
    const good: UpconvertedRun = {
      sourceStart: head.length,
      sourceEnd: source.length - tail.length,
      sourceCrc: crc32(source.subarray(head.length, source.length - tail.length)),
      outputStart: batches[1].position,
      outputEnd: batches[2].position,
      outputCrc: crc32(out.subarray(batches[1].position, batches[2].position)),
      batches: 1,
    };
    const runs = (over: Partial<UpconvertedRun> = {}) => {
      const r = new UpconvertedRunProofs();
      r.add({ ...good, ...over });
      return r;
    };
    const { log, files } = await rewrite(source, out);
    await expect(verifyRewrite(log, files, { baseOffset: 0n, runs: runs() })).resolves.toBeUndefined();
    const sourceError = {
      name: 'VerifyMismatchError',
      code: 'VERIFY_MISMATCH',
      field: 'source',
      file: log,
      position: good.sourceStart,
      offset: undefined,
      detail: `verify mismatch in source: legacy entries [${good.sourceStart}, ${good.sourceEnd}) are not the bytes converted (read back to ${good.sourceEnd})`,
    };
    expect(
      await rejection(
        verifyRewrite(log, files, { baseOffset: 0n, runs: runs({ sourceCrc: good.sourceCrc ^ 1 }) }),
      ),
    ).toEqual(sourceError);
    // A run recorded as ending past the end of the file.
    const past = source.length + 10;
    expect(
      await rejection(verifyRewrite(log, files, { baseOffset: 0n, runs: runs({ sourceEnd: past }) })),
    ).toEqual({
      ...sourceError,
      detail: `verify mismatch in source: legacy entries [${good.sourceStart}, ${past}) are not the bytes converted (read back to ${source.length})`,
    });
    expect(
      await rejection(
        verifyRewrite(log, files, { baseOffset: 0n, runs: runs({ outputStart: good.outputStart + 1 }) }),
      ),
    ).toEqual({
      name: 'VerifyMismatchError',
      code: 'VERIFY_MISMATCH',
      field: 'batch',
      file: files.log,
      position: good.outputStart + 1,
      offset: undefined,
      detail: `verify mismatch in batch: batches of the legacy entries at ${good.sourceStart} are missing`,
    });
    const notWritten = `verify mismatch in batch: batches [${good.outputStart}, ${good.outputEnd}) are not the ones written and proven for the legacy entries at ${good.sourceStart}`;
    for (const over of [{ outputCrc: good.outputCrc ^ 1 }, { batches: 2 }]) {
      expect(await rejection(verifyRewrite(log, files, { baseOffset: 0n, runs: runs(over) }))).toEqual({
        name: 'VerifyMismatchError',
        code: 'VERIFY_MISMATCH',
        field: 'batch',
        file: files.log,
        position: good.outputStart,
        offset: undefined,
        detail: notWritten,
      });
    }
    // Output recorded as ending inside the last batch: the walk stops after the batch, past the end.
    expect(
      await rejection(
        verifyRewrite(log, files, { baseOffset: 0n, runs: runs({ outputEnd: good.outputEnd - 1 }) }),
      ),
    ).toMatchObject({
      field: 'batch',
      position: good.outputStart,
      detail: `verify mismatch in batch: batches [${good.outputStart}, ${good.outputEnd - 1}) are not the ones written and proven for the legacy entries at ${good.sourceStart}`,
    });
  });

  it('a proven run whose rewritten batch fails its CRC or is not v2: the usual typed error', async () => {
    const source = legacy(0n, 4);
    const out = await converted(source);
    const run: UpconvertedRun = {
      sourceStart: 0,
      sourceEnd: source.length,
      sourceCrc: crc32(source),
      outputStart: 0,
      outputEnd: out.length,
      outputCrc: crc32(out),
      batches: 1,
    };
    const runs = () => {
      const r = new UpconvertedRunProofs();
      r.add(run);
      return r;
    };
    const flipped = Buffer.from(out);
    flipped[flipped.length - 1] ^= 1;
    let { log, files } = await rewrite(source, flipped);
    expect(await rejection(verifyRewrite(log, files, { baseOffset: 0n, runs: runs() }))).toMatchObject({
      name: 'CrcMismatchError',
      code: 'CRC_MISMATCH',
      file: files.log,
      position: 17,
      offset: 0n,
    });
    ({ log, files } = await rewrite(source, source));
    expect(await rejection(verifyRewrite(log, files, { baseOffset: 0n, runs: runs() }))).toMatchObject({
      field: 'magic',
      file: files.log,
      position: 0,
      offset: 0n,
    });
  });

  it('a proven run over several reader chunks (1 MiB): checksummed across the chunk boundaries', async () => {
    // 2.5 MB of legacy messages with incompressible values: source and output span three chunks.
    const rand = prng(7);
    const big = Buffer.concat(
      Array.from({ length: 300 }, (_, i) =>
        encodeLegacyEntry(BigInt(i), {
          magic: 1,
          timestamp: 1_500_000_000_000n + BigInt(i),
          key: null,
          value: Buffer.from(Array.from({ length: 8192 }, () => Math.floor(rand() * 256))),
        }),
      ),
    );
    const out = await converted(big);
    expect(out.length).toBeGreaterThan(2 * 1024 * 1024);
    const batches = shallowEntries(out).length;
    expect(batches).toBeGreaterThan(1);
    const run: UpconvertedRun = {
      sourceStart: 0,
      sourceEnd: big.length,
      sourceCrc: crc32(big),
      outputStart: 0,
      outputEnd: out.length,
      outputCrc: crc32(out),
      batches,
    };
    const runs = () => {
      const r = new UpconvertedRunProofs();
      r.add(run);
      return r;
    };
    let { log, files } = await rewrite(big, out);
    await expect(verifyRewrite(log, files, { baseOffset: 0n, runs: runs() })).resolves.toBeUndefined();
    // Without the proof the records are compared one by one: the same answer.
    await expect(verifyRewrite(log, files, { baseOffset: 0n })).resolves.toBeUndefined();
    // A byte of the source in its last chunk.
    const changed = Buffer.from(big);
    changed[changed.length - 100] ^= 1;
    ({ log, files } = await rewrite(changed, out));
    expect(await rejection(verifyRewrite(log, files, { baseOffset: 0n, runs: runs() }))).toMatchObject({
      field: 'source',
      file: log,
      position: 0,
      detail: `verify mismatch in source: legacy entries [0, ${big.length}) are not the bytes converted (read back to ${big.length})`,
    });
    // A value byte of the last output batch, its CRC-32C made right again.
    const forged = Buffer.from(out);
    const last = shallowEntries(forged).at(-1)!;
    forged[forged.length - 100] ^= 1;
    forged.writeUInt32BE(crc32c(forged.subarray(last.position + 21)), last.position + 17);
    ({ log, files } = await rewrite(big, forged));
    expect(await rejection(verifyRewrite(log, files, { baseOffset: 0n, runs: runs() }))).toMatchObject({
      field: 'batch',
      file: files.log,
      position: 0,
      detail: `verify mismatch in batch: batches [0, ${out.length}) are not the ones written and proven for the legacy entries at 0`,
    });
    expect(await rejection(verifyRewrite(log, files, { baseOffset: 0n }))).toMatchObject({
      field: 'value',
      position: last.position,
    });
  });

  it('passes its limits and options to both reads: decompression limit, entry size, truncated tail, abort', async () => {
    // v2 source batch and a legacy gzip wrapper, each decoded record by record (no proofs).
    const wrapper = encodeCompressedWrapper({
      magic: 0,
      codec: 1,
      messages: Array.from({ length: 4 }, (_, i) => ({
        offset: BigInt(i),
        key: null,
        value: Buffer.alloc(300, 97),
      })),
    });
    // A v0 wrapper's offset is its last inner message's.
    for (const [source, offset] of [
      [v2Batch(0n, [Buffer.alloc(1200, 98)], 1), 0n],
      [Buffer.from(wrapper), 3n],
    ] as const) {
      const { log, files } = await rewrite(source, await converted(source));
      await expect(verifyRewrite(log, files, { baseOffset: 0n })).resolves.toBeUndefined();
      expect(
        await rejection(verifyRewrite(log, files, { baseOffset: 0n, maxDecompressedBytes: 1000 })),
      ).toMatchObject({ name: 'DecompressionLimitError', code: 'DECOMPRESSION_LIMIT', file: log, offset });
    }
    const source = src();
    let { log, files } = await rewrite(source, out(), 5n);
    expect(await rejection(verifyRewrite(log, files, { baseOffset: 5n, maxEntryBytes: 100 }))).toMatchObject({
      name: 'CorruptRecordError',
      file: log,
      position: 0,
    });
    const ac = new AbortController();
    ac.abort(new Error('stop'));
    await expect(verifyRewrite(log, files, { baseOffset: 5n, signal: ac.signal })).rejects.toThrow('stop');
    // A source with a partial entry at its end: refused unless the tail is accepted (and dropped).
    ({ log, files } = await rewrite(Buffer.concat([source, source.subarray(0, 30)]), out(), 5n));
    expect(await rejection(verifyRewrite(log, files, { baseOffset: 5n }))).toMatchObject({
      name: 'TruncatedDataError',
      file: log,
      position: source.length,
    });
    await expect(
      verifyRewrite(log, files, { baseOffset: 5n, acceptTruncatedTail: true }),
    ).resolves.toBeUndefined();
  });

  it('a run proof whose output would end past the end of the new log is refused', async () => {
    const source = legacy(0n, 4);
    const out = await converted(source);
    const runs = new UpconvertedRunProofs();
    runs.add({
      sourceStart: 0,
      sourceEnd: source.length,
      sourceCrc: crc32(source),
      outputStart: 0,
      outputEnd: out.length + 100,
      outputCrc: crc32(out),
      batches: 1,
    });
    const { log, files } = await rewrite(source, out);
    expect(await rejection(verifyRewrite(log, files, { baseOffset: 0n, runs }))).toMatchObject({
      field: 'batch',
      position: 0,
      detail: `verify mismatch in batch: batches [0, ${out.length + 100}) are not the ones written and proven for the legacy entries at 0`,
    });
  });

  it("indexes that are the recovery rule's but fail kafka-dump-log's check are refused (two batches with one last offset)", async () => {
    // Both batches end at offset 7; the later one has the larger timestamp. The recovery rule's
    // time index names offset 7 with it, the check looks offset 7 up in the first batch.
    const later = { baseTimestamp: 1_600_000_002_000n, maxTimestamp: 1_600_000_002_014n };
    const source = Buffer.concat([v2Batch(5n, values(3, 'a'), 1), v2Batch(5n, values(3, 'a'), 1, later)]);
    const out = Buffer.concat([v2Batch(5n, values(3, 'a'), 4), v2Batch(5n, values(3, 'a'), 4, later)]);
    const { log, files } = await rewrite(source, out, 0n, 1);
    expect(await rejection(verifyRewrite(log, files, { baseOffset: 0n, indexIntervalBytes: 1 }))).toEqual({
      name: 'VerifyMismatchError',
      code: 'VERIFY_MISMATCH',
      field: '.timeindex entry 0',
      file: files.timeindex,
      position: undefined,
      offset: 7n,
      detail:
        'verify mismatch in .timeindex entry 0: index timestamp 1600000002014, log timestamp 1600000000014',
    });
  });

  it('inner CRCs of a legacy wrapper are checked again unless convert checked them in this run', async () => {
    const inner = Buffer.from(encodeLegacyEntry(0n, { magic: 0, key: null, value: Buffer.from('abc') }));
    inner[inner.length - 1] ^= 0xff;
    const wrapper = encodeLegacyEntry(0n, {
      magic: 0,
      attributes: 1,
      key: null,
      value: compress(1, inner, { magic: 0 }),
    });
    const out = v2Batch(0n, [Buffer.from([0x61, 0x62, 0x63 ^ 0xff])], 0, {
      baseTimestamp: -1n,
      maxTimestamp: -1n,
    });
    const { log, files } = await rewrite(wrapper, out);
    await expect(
      verifyRewrite(log, files, { baseOffset: 0n, sourceCrcsChecked: true }),
    ).resolves.toBeUndefined();
    expect(await rejection(verifyRewrite(log, files, { baseOffset: 0n }))).toMatchObject({
      name: 'CrcMismatchError',
      file: log,
      offset: 0n,
    });
  });

  it('a run recorded past the end of the source is refused even when the bytes there have its CRC', async () => {
    const source = legacy(0n, 4);
    const out = await converted(source);
    const runs = new UpconvertedRunProofs();
    runs.add({
      sourceStart: 0,
      sourceEnd: source.length + 10,
      sourceCrc: crc32(source),
      outputStart: 0,
      outputEnd: out.length,
      outputCrc: crc32(out),
      batches: 1,
    });
    const { log, files } = await rewrite(source, out);
    expect(await rejection(verifyRewrite(log, files, { baseOffset: 0n, runs }))).toMatchObject({
      field: 'source',
      file: log,
      position: 0,
      detail: `verify mismatch in source: legacy entries [0, ${source.length + 10}) are not the bytes converted (read back to ${source.length})`,
    });
  });

  it('closes both files when it refuses a rewrite midway', async () => {
    const fds = async () => (await readdir('/proc/self/fd')).length;
    // Refused at the first batch, both files still being read.
    const { log, files } = await rewrite(src(), out({ producerId: 7n }), 5n);
    const before = await fds();
    for (let i = 0; i < 3; i++) await rejection(verifyRewrite(log, files, { baseOffset: 5n }));
    expect(await fds()).toBe(before);
  });

  it('checks the stored CRC of every unproven source entry, with or without proofs of other batches', async () => {
    // Only the stored CRC field is wrong (a legacy entry's at byte 12): the records decode the same.
    const good = legacy(0n, 3);
    const bad = Buffer.from(good);
    const second = legacy(0n, 1).length;
    bad.writeUInt32BE((bad.readUInt32BE(second + 12) ^ 1) >>> 0, second + 12);
    const { log, files } = await rewrite(bad, await converted(good));
    // With proofs of other batches (none of these entries) and without any.
    for (const proofs of [new RecompressedBatchProofs(), undefined])
      expect(await rejection(verifyRewrite(log, files, { baseOffset: 0n, proofs }))).toMatchObject({
        name: 'CrcMismatchError',
        file: log,
        // A legacy entry's CRC error names the entry's position.
        position: second,
        offset: 1n,
      });
  });
});

describe('verifySegment: index files and reports', () => {
  it('index files that are not whole entries: one problem each, without an entry number or offset', async () => {
    const dir = await tmpDir();
    const log = await writeSegment(dir, v2Batch(0n, values(2, 'i'), 0));
    await writeFile(log.replace(/\.log$/, '.index'), Buffer.alloc(5));
    await writeFile(log.replace(/\.log$/, '.timeindex'), Buffer.alloc(13));
    const r = await verifySegment(log);
    expect(r).toMatchObject({
      ok: false,
      hasIndex: true,
      hasTimeIndex: true,
      indexEntries: 0,
      timeIndexEntries: 0,
    });
    expect(r.problems).toEqual([
      {
        kind: 'index',
        message: expect.not.stringMatching(/^entry /),
        file: log.replace(/\.log$/, '.index'),
        position: undefined,
        offset: undefined,
      },
      {
        kind: 'timeindex',
        message: expect.not.stringMatching(/^entry /),
        file: log.replace(/\.log$/, '.timeindex'),
        position: undefined,
        offset: undefined,
      },
    ]);
  });

  it('a batch whose records do not decode: the typed error with the file, its byte position and offset', async () => {
    // A valid CRC over records that claim one record more than they hold.
    const b = Buffer.from(v2Batch(40n, values(3, 'r'), 0));
    b.writeInt32BE(4, 57);
    b.writeUInt32BE(crc32c(b.subarray(21)), 17);
    const first = v2Batch(37n, values(3, 'q'), 0);
    const dir = await tmpDir();
    const log = await writeSegment(dir, Buffer.concat([first, b]), 37n);
    const r = await verifySegment(log);
    // The records decoded before the bad one count; the offsets of the bad batch do not.
    expect(r).toMatchObject({ ok: false, stoppedAtError: true, entries: 2, records: 6, lastOffset: '39' });
    expect(r.error).toMatchObject({ file: log, offset: '40' });
    expect(r.error?.position).toBeGreaterThan(first.length);
    expect(r.problems).toEqual([
      {
        kind: 'structure',
        message: r.error?.detail ?? expect.any(String),
        file: log,
        position: r.error?.position,
        offset: '40',
      },
    ]);
  });

  it('durationMs is the time of the call, also for a path that is not a segment', async () => {
    const dir = await tmpDir();
    const log = await writeSegment(dir, v2Batch(0n, values(2, 'i'), 0));
    const notes = path.join(dir, 'notes.txt');
    await writeFile(notes, 'x');
    for (const f of [log, notes]) {
      const before = performance.now();
      const r = await verifySegment(f);
      const elapsed = performance.now() - before;
      expect(r.durationMs).toBeGreaterThanOrEqual(0);
      expect(r.durationMs).toBeLessThanOrEqual(elapsed);
    }
    const { durationMs, error, problems, ...rest } = await verifySegment(notes);
    expect(rest).toEqual({
      path: notes,
      ok: false,
      entries: 0,
      records: 0,
      bytes: 0,
      indexEntries: 0,
      timeIndexEntries: 0,
      hasIndex: false,
      hasTimeIndex: false,
    });
  });

  it('the last offset: a compacted batch counts to its header, none for an empty segment or a first entry that fails', async () => {
    const dir = await tmpDir();
    // Records 0..2 of a batch whose last offset is 5 (compacted away), then offset 3: not after 5.
    const compacted = v2Batch(0n, values(3, 'k'), 0, { lastOffsetDelta: 5 });
    let log = await writeSegment(dir, compacted);
    let r = await verifySegment(log);
    expect(r).toMatchObject({ ok: true, records: 3, firstOffset: '0', lastOffset: '5' });
    log = await writeSegment(dir, Buffer.concat([compacted, v2Batch(3n, values(1, 'l'), 0)]), 0n, 'topic-1');
    r = await verifySegment(log);
    expect(r.problems).toEqual([
      {
        kind: 'offsets',
        message: 'offset 3 does not follow 5',
        file: log,
        position: compacted.length,
        offset: '3',
      },
    ]);
    log = await writeSegment(dir, new Uint8Array(0), 10n);
    r = await verifySegment(log);
    expect(r).toMatchObject({ ok: true, entries: 0, records: 0, bytes: 0, problems: [] });
    expect(r.firstOffset).toBeUndefined();
    expect(r.lastOffset).toBeUndefined();
    // A CRC error in the first entry: nothing good before it.
    const bad = Buffer.from(v2Batch(20n, values(2, 'm'), 0));
    bad[bad.length - 1] ^= 1;
    log = await writeSegment(dir, bad, 20n);
    r = await verifySegment(log);
    expect(r).toMatchObject({
      ok: false,
      stoppedAtError: true,
      entries: 0,
      error: { code: 'CRC_MISMATCH', offset: '20' },
    });
    expect(r.lastOffset).toBeUndefined();
    // A partial entry too short to hold an offset: a problem without one.
    log = await writeSegment(dir, Buffer.concat([v2Batch(30n, values(1, 'n'), 0), Buffer.alloc(5)]), 30n);
    r = await verifySegment(log);
    expect(r).toMatchObject({
      ok: false,
      stoppedAtError: true,
      entries: 1,
      lastOffset: '30',
      error: { code: 'TRUNCATED' },
    });
    expect(r.problems).toEqual([
      {
        kind: 'structure',
        message: 'partial entry at the end of the file: 5 bytes',
        file: log,
        position: v2Batch(30n, values(1, 'n'), 0).length,
        offset: undefined,
      },
    ]);
  });
});
