/** Deterministic segment data built with @seglift/legacy writers and @seglift/format encoders. */
import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  type CompressionId,
  encodeControlRecordKey,
  encodeEndTransactionMarker,
  encodeRecordBatch,
  type Record as KRecord,
  type RecordBatchFields,
} from '@seglift/format';
import { encodeCompressedWrapper, encodeLegacyEntry } from '@seglift/legacy';
import { prng } from '@seglift/testkit';
import { recoveryIndexes } from './independent.js';

export { prng };

export function text(rand: () => number, n: number): Uint8Array {
  const words = ['alpha', 'beta', 'gamma', 'delta', 'kafka', 'segment', 'offset', 'record', 'batch', 'lift'];
  let s = '';
  while (s.length < n) s += `${words[Math.floor(rand() * words.length)]} `;
  return Buffer.from(s.slice(0, n));
}

export function v2Fields(baseOffset: bigint, over: Partial<RecordBatchFields> = {}): RecordBatchFields {
  return {
    baseOffset,
    partitionLeaderEpoch: 3,
    attributes: 0,
    lastOffsetDelta: 0,
    baseTimestamp: 1_600_000_000_000n,
    maxTimestamp: 1_600_000_000_000n,
    producerId: -1n,
    producerEpoch: -1,
    baseSequence: -1,
    ...over,
  };
}

export function v2Batch(
  baseOffset: bigint,
  values: (Uint8Array | null)[],
  codec: CompressionId,
  over: Partial<RecordBatchFields> = {},
  headers = false,
): Uint8Array {
  const baseTimestamp = over.baseTimestamp ?? 1_600_000_000_000n;
  const records: KRecord[] = values.map((value, i) => ({
    attributes: 0,
    timestampDelta: i * 7,
    offsetDelta: i,
    key: i % 3 === 0 ? null : Buffer.from(`k${i}`),
    value,
    headers: headers
      ? [
          { key: Buffer.from('h'), value: Buffer.from(`v${i}`) },
          { key: Buffer.from([0xff, 0xfe]), value: null },
        ]
      : [],
  }));
  return encodeRecordBatch(
    v2Fields(baseOffset, {
      lastOffsetDelta: values.length - 1,
      baseTimestamp,
      maxTimestamp: baseTimestamp + BigInt((values.length - 1) * 7),
      ...over,
    }),
    records,
    codec,
  );
}

export interface BuiltSegment {
  bytes: Buffer;
  /** Positions of entries that must be copied byte for byte (control, empty). */
  verbatim: Uint8Array[];
  lastOffset: bigint;
}

/**
 * Mixed segment: v0/v1 plain messages, gzip/snappy/lz4 wrappers (v0 and v1, CreateTime and
 * LogAppendTime), v2 batches (none with headers, gzip idempotent, transactional + COMMIT marker,
 * empty, zstd already), enough bytes to give the indexes several entries.
 */
export function mixedSegment(baseOffset = 0n, seed = 42): BuiltSegment {
  const b: MixedBuilder = { rand: prng(seed), parts: [], verbatim: [], off: baseOffset };
  mixedLegacy(b);
  mixedV2(b);
  mixedTail(b);
  return { bytes: Buffer.concat(b.parts), verbatim: b.verbatim, lastOffset: b.off - 1n };
}

/** The entries of a mixed segment so far, and the next offset. */
interface MixedBuilder {
  rand: () => number;
  parts: Uint8Array[];
  verbatim: Uint8Array[];
  off: bigint;
}

const ts = (i: bigint) => 1_500_000_000_000n + i * 1000n;

/** v0/v1 plain messages and wrappers of every legacy codec, and a LogAppendTime wrapper. */
function mixedLegacy(b: MixedBuilder): void {
  const { rand, parts } = b;
  let off = b.off;
  // v0 plain, with null key, tombstone and empty value.
  parts.push(encodeLegacyEntry(off++, { magic: 0, key: null, value: text(rand, 40) }));
  parts.push(encodeLegacyEntry(off++, { magic: 0, key: Buffer.from('k'), value: null }));
  parts.push(encodeLegacyEntry(off++, { magic: 0, key: Buffer.from(''), value: Buffer.from('') }));
  for (const codec of [1, 2, 3] as const) {
    const messages = Array.from({ length: 20 }, () => ({ offset: off++, key: null, value: text(rand, 120) }));
    parts.push(encodeCompressedWrapper({ magic: 0, codec, messages }));
  }
  for (let i = 0; i < 30; i++) {
    parts.push(
      encodeLegacyEntry(off, {
        magic: 1,
        timestamp: ts(off),
        key: Buffer.from(`key-${i}`),
        value: text(rand, 200),
      }),
    );
    off++;
  }
  for (const codec of [1, 2, 3] as const) {
    const messages = Array.from({ length: 25 }, () => {
      const m = { offset: off, timestamp: ts(off), key: Buffer.from(`wk${off}`), value: text(rand, 150) };
      off++;
      return m;
    });
    parts.push(encodeCompressedWrapper({ magic: 1, codec, messages }));
  }
  // LogAppendTime wrapper: inner timestamps differ, readers see the wrapper's.
  {
    const messages = Array.from({ length: 10 }, () => ({
      offset: off++,
      timestamp: 5n,
      key: null,
      value: text(rand, 80),
    }));
    parts.push(
      encodeCompressedWrapper({
        magic: 1,
        codec: 1,
        timestampType: 'LogAppendTime',
        wrapperTimestamp: ts(off + 100n),
        messages,
      }),
    );
  }
  b.off = off;
}

/** v2: uncompressed with headers, gzip idempotent, transactional + COMMIT, empty, zstd. */
function mixedV2(b: MixedBuilder): void {
  const { rand, parts, verbatim } = b;
  let off = b.off;
  // v2: uncompressed with headers, gzip idempotent, transactional + COMMIT, empty, zstd.
  parts.push(
    v2Batch(
      off,
      Array.from({ length: 15 }, () => text(rand, 100)),
      0,
      {},
      true,
    ),
  );
  off += 15n;
  parts.push(
    v2Batch(
      off,
      Array.from({ length: 15 }, () => text(rand, 100)),
      1,
      { producerId: 77n, producerEpoch: 2, baseSequence: 30 },
    ),
  );
  off += 15n;
  parts.push(
    v2Batch(
      off,
      Array.from({ length: 5 }, () => text(rand, 60)),
      0,
      {
        producerId: 78n,
        producerEpoch: 0,
        baseSequence: 0,
        attributes: 0x10,
      },
    ),
  );
  off += 5n;
  const control = encodeRecordBatch(
    v2Fields(off, { producerId: 78n, producerEpoch: 0, attributes: 0x30 }),
    [
      {
        attributes: 0,
        timestampDelta: 0,
        offsetDelta: 0,
        key: encodeControlRecordKey(1),
        value: encodeEndTransactionMarker(4),
        headers: [],
      },
    ],
    0,
  );
  parts.push(control);
  verbatim.push(control);
  off++;
  // Empty batch as the cleaner writes it: count 0, codec none, baseTimestamp -1, offsets kept.
  const empty = encodeRecordBatch(
    v2Fields(off, {
      lastOffsetDelta: 2,
      baseTimestamp: -1n,
      maxTimestamp: ts(off),
      producerId: 90n,
      producerEpoch: 1,
      baseSequence: 10,
    }),
    [],
    0,
  );
  parts.push(empty);
  verbatim.push(empty);
  off += 3n;
  parts.push(
    v2Batch(
      off,
      Array.from({ length: 10 }, () => text(rand, 90)),
      4,
    ),
  );
  off += 10n;
  b.off = off;
}

/** v1 messages with timestamps going back, then a gzip v2 batch. */
function mixedTail(b: MixedBuilder): void {
  const { rand, parts } = b;
  let off = b.off;
  for (let i = 0; i < 20; i++) {
    parts.push(
      encodeLegacyEntry(off, { magic: 1, timestamp: ts(off) - 500_000n, key: null, value: text(rand, 300) }),
    );
    off++;
  }
  parts.push(
    v2Batch(
      off,
      Array.from({ length: 30 }, () => text(rand, 100)),
      2,
    ),
  );
  off += 30n;
  b.off = off;
}

export async function tmpDir(prefix = 'seglift-segment-'): Promise<string> {
  return mkdtemp(path.join(os.tmpdir(), prefix));
}

/** Writes `<dir>/<topic>-<p>/<base>.log` and returns its path. */
export async function writeSegment(
  dir: string,
  bytes: Uint8Array,
  baseOffset = 0n,
  partition = 'topic-0',
): Promise<string> {
  const { mkdir } = await import('node:fs/promises');
  const pdir = path.join(dir, partition);
  await mkdir(pdir, { recursive: true });
  const file = path.join(pdir, `${baseOffset.toString().padStart(20, '0')}.log`);
  await writeFile(file, bytes);
  return file;
}

/** writeSegment, plus the .index and .timeindex Kafka's recovery builds for it. */
export async function writeSegmentWithIndexes(
  dir: string,
  bytes: Uint8Array,
  baseOffset = 0n,
): Promise<string> {
  const log = await writeSegment(dir, bytes, baseOffset);
  const idx = recoveryIndexes(Buffer.from(bytes), baseOffset);
  await writeFile(log.replace(/\.log$/, '.index'), idx.index);
  await writeFile(log.replace(/\.log$/, '.timeindex'), idx.timeindex);
  return log;
}
