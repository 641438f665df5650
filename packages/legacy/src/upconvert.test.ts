import {
  CompressionType,
  CorruptRecordError,
  checkRecordBatchCrc,
  decodeRecords,
  InvalidArgumentError,
  readRecordBatchHeader,
} from '@seglift/format';
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { encodeLegacyEntry } from './message.js';
import { ReferenceUpconverter } from './test-support/reference-upconverter.js';
import { upconvertAndCheck } from './test-support/verify.js';
import { Upconverter } from './upconvert.js';
import { encodeCompressedWrapper, type WrapperInnerMessage } from './writer.js';

const bytes = (s: string) => new Uint8Array(Buffer.from(s));
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const { GZIP, SNAPPY, LZ4, ZSTD } = CompressionType;
const plain = (offset: bigint, magic: 0 | 1, value: string | null, timestamp = -1n, attributes = 0) =>
  encodeLegacyEntry(offset, {
    magic,
    attributes,
    timestamp,
    key: null,
    value: value === null ? null : bytes(value),
  });

function run(entries: Uint8Array[], up: Upconverter): Uint8Array[] {
  const out = entries.flatMap((e) => up.push(e));
  return [...out, ...up.flush()];
}

describe('Upconverter', () => {
  it('kafka grouping: one v2 batch per uncompressed v0 message, exact bytes', () => {
    const up = new Upconverter({ grouping: 'kafka' });
    const batches = run([plain(5n, 0, 'v'), plain(6n, 0, null)], up);
    expect(batches.length).toBe(2);
    checkRecordBatchCrc(batches[0]);
    const b = hex(batches[0]);
    // baseOffset 5 | batchLength 57 | PLE -1 | magic 2 | crc | attributes 0 | lastOffsetDelta 0 |
    // baseTimestamp -1 | maxTimestamp -1 | producerId -1 | epoch -1 | baseSequence -1 | count 1 |
    // record: length 7, attributes 0, tsDelta 0, offsetDelta 0, key null (-1), value len 1 'v', 0 headers
    expect(b.slice(0, 34)).toBe('000000000000000500000039ffffffff02');
    expect(b.slice(42)).toBe(
      `0000` +
        `00000000` +
        'ffffffffffffffff'.repeat(3) +
        'ffff' +
        'ffffffff' +
        '00000001' +
        '0e' +
        '00' +
        '00' +
        '00' +
        '01' +
        '02' +
        '76' +
        '00',
    );
    expect(decodeRecords(batches[1])[0].value).toBeNull();
    expect(up.stats).toEqual({
      entriesIn: 2,
      recordsIn: 2,
      batchesOut: 2,
      bytesOut: batches[0].length + batches[1].length,
      oversizeBatches: 0,
      splitBatches: 0,
    });
  });

  it('kafka grouping: a wrapper becomes one batch with offsets, gaps and max timestamp kept', async () => {
    const messages: WrapperInnerMessage[] = [
      { offset: 100n, timestamp: 50n, key: bytes('a'), value: bytes('x') },
      { offset: 103n, timestamp: 90n, key: null, value: null },
      { offset: 109n, timestamp: 70n, key: bytes(''), value: bytes('') },
    ];
    const e = encodeCompressedWrapper({ magic: 1, codec: SNAPPY, messages });
    const { batches } = await upconvertAndCheck([e], { codec: GZIP });
    expect(batches.length).toBe(1);
    const h = readRecordBatchHeader(batches[0]);
    expect([
      h.baseOffset,
      h.lastOffsetDelta,
      h.baseTimestamp,
      h.maxTimestamp,
      h.recordsCount,
      h.attributes,
    ]).toEqual([100n, 9, 50n, 90n, 3, GZIP]);
    expect(decodeRecords(batches[0]).map((r) => [r.offsetDelta, r.timestampDelta])).toEqual([
      [0, 0],
      [3, 40],
      [9, 20],
    ]);
  });

  it('LogAppendTime wrapper: LogAppendTime batch, base = max = wrapper time, deltas 0', async () => {
    const e = encodeCompressedWrapper({
      magic: 1,
      codec: LZ4,
      timestampType: 'LogAppendTime',
      wrapperTimestamp: 1_700_000_000_000n,
      messages: [
        { offset: 7n, timestamp: 3n, key: null, value: bytes('a') },
        { offset: 8n, timestamp: 1n, key: null, value: bytes('b') },
      ],
    });
    const { batches } = await upconvertAndCheck([e], { codec: ZSTD });
    const h = readRecordBatchHeader(batches[0]);
    expect([h.attributes, h.baseTimestamp, h.maxTimestamp]).toEqual([
      ZSTD | 8,
      1_700_000_000_000n,
      1_700_000_000_000n,
    ]);
  });

  it('never mixes timestamp types: a LogAppendTime wrapper holding v0 messages splits (KAFKA-4298)', async () => {
    const e = encodeCompressedWrapper({
      magic: 1,
      codec: GZIP,
      timestampType: 'LogAppendTime',
      wrapperTimestamp: 99n,
      messages: [
        { offset: 0n, key: null, value: bytes('a'), magic: 0 },
        { offset: 1n, key: null, value: bytes('b') },
        { offset: 2n, key: null, value: bytes('c') },
      ],
    });
    const { batches } = await upconvertAndCheck([e], {});
    expect(
      batches.map((b) => readRecordBatchHeader(b)).map((h) => [h.baseOffset, h.recordsCount, h.attributes]),
    ).toEqual([
      [0n, 1, 0],
      [1n, 2, 8],
    ]);
  });

  it('coalesce: consecutive CreateTime records (v0 and v1) share a batch; LogAppendTime only with the same time', async () => {
    const entries = [
      plain(0n, 0, 'a'),
      plain(1n, 1, 'b', 10n),
      encodeCompressedWrapper({
        magic: 1,
        codec: GZIP,
        messages: [
          { offset: 2n, timestamp: 5n, key: null, value: bytes('c') },
          { offset: 3n, timestamp: 20n, key: null, value: bytes('d') },
        ],
      }),
      plain(4n, 1, 'e', 30n, 8),
      plain(5n, 1, 'f', 30n, 8),
      plain(6n, 1, 'g', 31n, 8),
      plain(9n, 0, 'h'),
    ];
    const { batches } = await upconvertAndCheck(entries, { grouping: 'coalesce' });
    expect(
      batches
        .map((b) => readRecordBatchHeader(b))
        .map((h) => [
          h.baseOffset,
          h.lastOffsetDelta,
          h.recordsCount,
          h.attributes,
          h.baseTimestamp,
          h.maxTimestamp,
        ]),
    ).toEqual([
      [0n, 3, 4, 0, -1n, 20n],
      [4n, 1, 2, 8, 30n, 30n],
      [6n, 0, 1, 8, 31n, 31n],
      [9n, 0, 1, 0, -1n, -1n],
    ]);
  });

  it('coalesce: respects coalesceBytes and copies plain entries the caller may reuse', async () => {
    const up = new Upconverter({ grouping: 'coalesce', coalesceBytes: 61 + 3 * 9 });
    const buf = plain(0n, 0, 'aa');
    const out = up.push(buf);
    buf.fill(0);
    out.push(...up.push(plain(1n, 0, 'bb')), ...up.push(plain(2n, 0, 'cc')), ...up.push(plain(3n, 0, 'dd')));
    out.push(...up.flush());
    expect(out.map((b) => decodeRecords(b).map((r) => Buffer.from(r.value!).toString()))).toEqual([
      ['aa', 'bb', 'cc'],
      ['dd'],
    ]);
    expect(out[0].length).toBe(61 + 3 * 9);
  });

  it('coalesce: copies plain entries handed over as Node Buffers (whose slice() is a view)', () => {
    // The segment reader hands entries as Buffer views of a read buffer it reuses.
    const up = new Upconverter({ grouping: 'coalesce' });
    const shared = Buffer.alloc(64);
    const out: Uint8Array[] = [];
    for (const [i, v] of ['aa', 'bb', 'cc'].entries()) {
      const entry = plain(BigInt(i), 0, v);
      shared.fill(0);
      shared.set(entry, 0);
      out.push(...up.push(shared.subarray(0, entry.length)));
    }
    shared.fill(0x7a);
    out.push(...up.flush());
    expect(out.flatMap((b) => decodeRecords(b).map((r) => Buffer.from(r.value!).toString()))).toEqual([
      'aa',
      'bb',
      'cc',
    ]);
  });

  it('never spans an offset delta beyond int32', async () => {
    const max = 2_147_483_647n;
    const { batches } = await upconvertAndCheck(
      [plain(10n, 0, 'a'), plain(10n + max, 0, 'b'), plain(11n + max, 0, 'c'), plain(20n + 2n * max, 0, 'd')],
      { grouping: 'coalesce' },
    );
    expect(
      batches.map((b) => readRecordBatchHeader(b)).map((h) => [h.baseOffset, h.lastOffsetDelta]),
    ).toEqual([
      [10n, 2_147_483_647],
      [11n + max, 0],
      [20n + 2n * max, 0],
    ]);
    // Inside one wrapper too (relative offsets are int64 on the wire).
    const w = encodeCompressedWrapper({
      magic: 1,
      codec: GZIP,
      messages: [
        { offset: 0n, key: null, value: bytes('a') },
        { offset: max + 1n, key: null, value: bytes('b') },
      ],
    });
    expect((await upconvertAndCheck([w], {})).batches.length).toBe(2);
  });

  it('splits batches above maxBatchBytes by records, for every codec', async () => {
    const messages = Array.from({ length: 100 }, (_, i) => ({
      offset: BigInt(1000 + i * 3),
      timestamp: BigInt(1_600_000_000_000 + ((i * 7919) % 1000)),
      key: bytes(`k${i}`),
      value: Uint8Array.from({ length: 500 }, (_, j) => (i * 31 + j * j) & 0xff),
    }));
    const e = encodeCompressedWrapper({ magic: 1, codec: GZIP, messages });
    for (const codec of [0, 1, 2, 3, 4] as const) {
      const { batches, stats, oversize } = await upconvertAndCheck([e], { codec, maxBatchBytes: 5000 });
      expect(batches.length).toBeGreaterThan(1);
      expect(batches.every((b) => b.length <= 5000)).toBe(true);
      expect(oversize).toEqual([]);
      expect(stats.splitBatches).toBe(batches.length - 1);
    }
  });

  it('emits a single record bigger than maxBatchBytes alone and reports it', async () => {
    const big = new Uint8Array(20_000).fill(7);
    const entries = [
      plain(0n, 0, 'small'),
      encodeLegacyEntry(1n, { magic: 0, key: null, value: big }),
      plain(2n, 0, 'small'),
    ];
    for (const grouping of ['kafka', 'coalesce'] as const) {
      const { batches, oversize, stats } = await upconvertAndCheck(entries, {
        grouping,
        maxBatchBytes: 1000,
      });
      expect(batches.length).toBe(3);
      expect(oversize).toEqual([
        { baseOffset: 1n, lastOffset: 1n, sizeInBytes: batches[1].length, maxBatchBytes: 1000 },
      ]);
      expect(stats.oversizeBatches).toBe(1);
    }
  });

  it('rejects offsets that do not increase, and bad options', () => {
    const up = new Upconverter({ grouping: 'kafka' });
    up.push(plain(5n, 0, 'a'));
    expect(() => up.push(plain(5n, 0, 'b'))).toThrow(CorruptRecordError);
    expect(() => new Upconverter({ grouping: 'kafka', maxBatchBytes: 61 })).toThrow(InvalidArgumentError);
    expect(() => new Upconverter({ grouping: 'other' as 'kafka' })).toThrow(InvalidArgumentError);
  });
});

// ---- property test ----

interface GenMessage {
  gap: bigint;
  magic: 0 | 1;
  timestamp: bigint;
  key: Uint8Array | null;
  value: Uint8Array | null;
}
interface GenEntry {
  wrapper: null | {
    magic: 0 | 1;
    codec: 1 | 2 | 3;
    logAppend: boolean;
    wrapperTimestamp: bigint;
    mixedMagic: boolean;
  };
  logAppend: boolean;
  messages: GenMessage[];
}

const arbBytes = fc.oneof(
  { weight: 1, arbitrary: fc.constant(null) },
  { weight: 1, arbitrary: fc.constant(new Uint8Array(0)) },
  { weight: 6, arbitrary: fc.uint8Array({ maxLength: 200 }) },
  { weight: 1, arbitrary: fc.uint8Array({ minLength: 1000, maxLength: 3000 }) },
);
const arbMessage = fc.record({
  gap: fc.oneof(
    { weight: 8, arbitrary: fc.constant(1n) },
    { weight: 3, arbitrary: fc.bigInt(2n, 1000n) },
    { weight: 1, arbitrary: fc.bigInt(2_147_483_000n, 2_147_484_000n) },
  ),
  magic: fc.constantFrom<0 | 1>(0, 1),
  timestamp: fc.oneof(fc.constant(-1n), fc.bigInt(0n, 2_000_000_000_000n)),
  key: arbBytes,
  value: arbBytes,
});
const arbEntry: fc.Arbitrary<GenEntry> = fc.record({
  wrapper: fc.option(
    fc.record({
      magic: fc.constantFrom<0 | 1>(0, 1),
      codec: fc.constantFrom<1 | 2 | 3>(1, 2, 3),
      logAppend: fc.boolean(),
      wrapperTimestamp: fc.bigInt(0n, 2_000_000_000_000n),
      mixedMagic: fc.boolean(),
    }),
    { freq: 2 },
  ),
  logAppend: fc.boolean(),
  messages: fc.array(arbMessage, { minLength: 1, maxLength: 12 }),
});

function buildEntries(gen: GenEntry[]): Uint8Array[] {
  let offset = 0n;
  const out: Uint8Array[] = [];
  for (const g of gen) {
    if (g.wrapper === null) {
      const m = g.messages[0];
      offset += m.gap;
      out.push(
        encodeLegacyEntry(offset, {
          magic: m.magic,
          attributes: m.magic === 1 && g.logAppend ? 8 : 0,
          timestamp: m.timestamp,
          key: m.key,
          value: m.value,
        }),
      );
      continue;
    }
    const w = g.wrapper;
    const messages = g.messages.map((m) => {
      offset += m.gap;
      return {
        offset,
        timestamp: m.timestamp,
        key: m.key,
        value: m.value,
        magic: w.mixedMagic ? m.magic : w.magic,
      };
    });
    out.push(
      encodeCompressedWrapper({
        magic: w.magic,
        codec: w.codec,
        timestampType: w.logAppend ? 'LogAppendTime' : 'CreateTime',
        wrapperTimestamp: w.wrapperTimestamp,
        messages,
      }),
    );
  }
  return out;
}

describe('Upconverter property', () => {
  it('preserves every record exactly, whatever the grouping, codec and batch limits', async () => {
    const seen = { splits: 0, oversize: 0, records: 0, batches: 0 };
    await fc.assert(
      fc.asyncProperty(
        fc.array(arbEntry, { minLength: 1, maxLength: 25 }),
        fc.constantFrom<'kafka' | 'coalesce'>('kafka', 'coalesce'),
        fc.constantFrom<0 | 1 | 2 | 3 | 4>(0, 1, 2, 3, 4),
        fc.constantFrom(300, 1500, 6000, 1_048_588),
        fc.constantFrom(100, 2000, 1_048_576),
        fc.boolean(),
        async (gen, grouping, codec, maxBatchBytes, coalesceBytes, prove) => {
          const entries = buildEntries(gen);
          const { stats } = await upconvertAndCheck(entries, {
            grouping,
            codec,
            maxBatchBytes,
            coalesceBytes,
            prove,
          });
          seen.splits += stats.splitBatches;
          seen.oversize += stats.oversizeBatches;
          seen.records += stats.recordsIn;
          seen.batches += stats.batchesOut;
        },
      ),
      { numRuns: 300, seed: 20240601 },
    );
    // The generator really exercises splitting and oversize records.
    expect(seen.splits).toBeGreaterThan(50);
    expect(seen.oversize).toBeGreaterThan(10);
  });
});

describe('Upconverter fast path', () => {
  // Offsets near 2^52 and timestamps near the int64 ends take the general path; the rest the fast one.
  const arbWideMessage = fc.record({
    gap: fc.oneof(
      { weight: 8, arbitrary: fc.constant(1n) },
      { weight: 2, arbitrary: fc.bigInt(2n, 1000n) },
      { weight: 1, arbitrary: fc.bigInt(2_147_483_000n, 2_147_484_000n) },
    ),
    magic: fc.constantFrom<0 | 1>(0, 1),
    timestamp: fc.oneof(
      { weight: 6, arbitrary: fc.bigInt(-1n, 2_000_000_000_000n) },
      { weight: 1, arbitrary: fc.bigInt(-(2n ** 63n), 2n ** 63n - 1n) },
      { weight: 1, arbitrary: fc.bigInt(2n ** 52n - 10n, 2n ** 52n + 10n) },
    ),
    key: arbBytes,
    value: arbBytes,
  });
  const arbWideEntry: fc.Arbitrary<GenEntry> = fc.record({
    wrapper: fc.option(
      fc.record({
        magic: fc.constantFrom<0 | 1>(0, 1),
        codec: fc.constantFrom<1 | 2 | 3>(1, 2, 3),
        logAppend: fc.boolean(),
        wrapperTimestamp: fc.oneof(fc.bigInt(0n, 2_000_000_000_000n), fc.constant(2n ** 62n)),
        mixedMagic: fc.boolean(),
      }),
      { freq: 2 },
    ),
    logAppend: fc.boolean(),
    messages: fc.array(arbWideMessage, { minLength: 1, maxLength: 12 }),
  });

  it('writes exactly the bytes of the implementation before it (kept in test-support), proving or not, each on the buffers the one before released', () => {
    let wide = 0;
    fc.assert(
      fc.property(
        fc.array(arbWideEntry, { minLength: 1, maxLength: 25 }),
        fc.constantFrom<'kafka' | 'coalesce'>('kafka', 'coalesce'),
        fc.constantFrom<0 | 1 | 2 | 3 | 4>(0, 1, 2, 3, 4),
        fc.constantFrom(300, 1500, 6000, 1_048_588),
        fc.constantFrom(100, 2000, 1_048_576),
        fc.constantFrom(0n, 2n ** 52n - 5000n),
        fc.boolean(),
        (gen, grouping, codec, maxBatchBytes, coalesceBytes, start, prove) => {
          const entries = buildEntries(gen).map((e) => {
            const b = Buffer.from(e);
            b.writeBigInt64BE(b.readBigInt64BE(0) + start, 0);
            return b;
          });
          const options = { grouping, codec, maxBatchBytes, coalesceBytes };
          const ref = new ReferenceUpconverter(options);
          const up = new Upconverter({ grouping: 'kafka', ...options, prove });
          const expected: Uint8Array[] = [];
          let refError: unknown;
          try {
            for (const e of entries) expected.push(...ref.push(e));
            expected.push(...ref.flush());
          } catch (err) {
            refError = err;
          }
          const got: Uint8Array[] = [];
          let error: unknown;
          try {
            // Entries at an offset inside a larger buffer, as the segment reader hands them over.
            for (const e of entries) {
              const host = Buffer.concat([Buffer.alloc(7, 0xee), e, Buffer.alloc(5, 0xee)]);
              up.pushEntry(host, 7, 7 + e.length);
              got.push(...splitBatches(up.takeOutput()));
            }
            up.finishPending();
            got.push(...splitBatches(up.takeOutput()));
          } catch (err) {
            error = err;
          }
          if (refError !== undefined || error !== undefined) {
            expect(String(error)).toBe(String(refError));
            return;
          }
          expect(got.map(hex)).toEqual(expected.map(hex));
          expect(up.stats).toEqual(ref.stats);
          // The next run's upconverter takes these buffers, stale bytes and all.
          up.release();
          if (gen.some((g) => g.messages.some((m) => m.timestamp >= 2n ** 52n || m.timestamp < -(2n ** 52n))))
            wide++;
        },
      ),
      { numRuns: 400, seed: 20261130 },
    );
    expect(wide).toBeGreaterThan(20);
  });

  it('corrupt entries: the same error as the implementation before it, or the same bytes', () => {
    let errors = 0;
    fc.assert(
      fc.property(
        fc.array(arbEntry, { minLength: 1, maxLength: 12 }),
        fc.array(fc.tuple(fc.nat(), fc.nat(), fc.integer({ min: 1, max: 255 })), {
          minLength: 1,
          maxLength: 3,
        }),
        fc.constantFrom<'kafka' | 'coalesce'>('kafka', 'coalesce'),
        fc.constantFrom<0 | 4>(0, 4),
        (gen, flips, grouping, codec) => {
          const entries = buildEntries(gen).map((e) => Buffer.from(e));
          // Flip bytes anywhere past the offset field (CRCs, lengths, keys, values, wrapped bytes),
          // and sometimes an offset field (offsets that stop increasing).
          for (const [i, at, x] of flips) {
            const e = entries[i % entries.length];
            const pos = x % 5 === 0 ? 7 : 12 + (at % (e.length - 12));
            e[pos] ^= x;
          }
          const options = { grouping, codec, maxBatchBytes: 1500, coalesceBytes: 2000 };
          const run = (u: { push(e: Uint8Array): Uint8Array[]; flush(): Uint8Array[] }) => {
            try {
              return [...entries.flatMap((e) => u.push(e)), ...u.flush()].map(hex).join();
            } catch (err) {
              const e = err as { name: string; message: string; offset?: bigint; position?: number };
              return `${e.name}: ${e.message} @${e.offset}/${e.position}`;
            }
          };
          const expected = run(new ReferenceUpconverter(options));
          expect(run(new Upconverter({ grouping: 'kafka', ...options, prove: true }))).toBe(expected);
          if (expected.includes('Error')) errors++;
        },
      ),
      { numRuns: 500, seed: 20261201 },
    );
    expect(errors).toBeGreaterThan(200);
  });

  it('proof failures are VerifyMismatchErrors: a codec that decodes its output wrong is caught', async () => {
    const format = await import('@seglift/format');
    const entries = [0, 1, 2].map((i) => plain(BigInt(i), 1, `value-${i}`, 1000n + BigInt(i)));
    const control = new Upconverter({ grouping: 'coalesce', codec: ZSTD, prove: true });
    for (const e of entries) control.pushEntry(e, 0, e.length);
    control.finishPending();
    expect(control.stats.batchesOut).toBe(1);
    const up = new Upconverter({ grouping: 'coalesce', codec: ZSTD, prove: true });
    for (const e of entries) up.pushEntry(e, 0, e.length);
    const real = format.decompressTransient;
    const spy = vi.spyOn(format, 'decompressTransient').mockImplementation((...a) => {
      const out = Buffer.from(real(...a));
      out[out.length - 1] ^= 1;
      return out;
    });
    try {
      expect(() => up.finishPending()).toThrow(format.VerifyMismatchError);
    } finally {
      spy.mockRestore();
    }
  });
});

function splitBatches(all: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let p = 0; p < all.length; ) {
    const size = Buffer.from(all.buffer, all.byteOffset + p + 8, 4).readInt32BE(0) + 12;
    out.push(all.slice(p, p + size));
    p += size;
  }
  return out;
}
