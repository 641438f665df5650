import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  CompressionType,
  encodeControlRecordKey,
  encodeEndTransactionMarker,
  encodeRecordBatch,
  type Record,
  type RecordBatchFields,
} from '@seglift/format';
import { encodeCompressedWrapper, encodeLegacyEntry } from '@seglift/legacy';

export function tmpDir(prefix = 'seglift-cli-'): string {
  return mkdtempSync(path.join(tmpdir(), prefix));
}

export function segmentName(base: bigint, suffix = '.log'): string {
  return `${base.toString().padStart(20, '0')}${suffix}`;
}

export function writeSegment(dir: string, base: bigint, entries: Uint8Array[], suffix = '.log'): string {
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, segmentName(base, suffix));
  writeFileSync(file, Buffer.concat(entries));
  return file;
}

const enc = new TextEncoder();
export const utf8 = (s: string): Uint8Array => enc.encode(s);

export function fields(over: Partial<RecordBatchFields> = {}): RecordBatchFields {
  return {
    baseOffset: 0n,
    partitionLeaderEpoch: 0,
    attributes: 0,
    lastOffsetDelta: 0,
    baseTimestamp: 1_700_000_000_000n,
    maxTimestamp: 1_700_000_000_000n,
    producerId: -1n,
    producerEpoch: -1,
    baseSequence: -1,
    ...over,
  };
}

export function rec(
  offsetDelta: number,
  key: string | null,
  value: string | null,
  timestampDelta = 0,
): Record {
  return {
    attributes: 0,
    timestampDelta,
    offsetDelta,
    key: key === null ? null : utf8(key),
    value: value === null ? null : utf8(value),
    headers: [],
  };
}

/** A v2 batch of `n` records with keys k<i> and values v<i>, timestamps 1 ms apart. */
export function v2Batch(
  baseOffset: bigint,
  n: number,
  codec: number = CompressionType.NONE,
  over: Partial<RecordBatchFields> = {},
): Uint8Array {
  const records = Array.from({ length: n }, (_, i) =>
    rec(i, `k${Number(baseOffset) + i}`, `v${Number(baseOffset) + i}`, i),
  );
  return encodeRecordBatch(
    fields({
      baseOffset,
      lastOffsetDelta: n - 1,
      baseTimestamp: 1_700_000_000_000n + baseOffset,
      maxTimestamp: 1_700_000_000_000n + baseOffset + BigInt(n - 1),
      ...over,
    }),
    records,
    codec,
  );
}

export function commitMarker(offset: bigint, producerId: bigint, coordinatorEpoch: number): Uint8Array {
  return encodeRecordBatch(
    fields({
      baseOffset: offset,
      attributes: 0x30,
      producerId,
      producerEpoch: 0,
      baseSequence: -1,
    }),
    [
      {
        attributes: 0,
        timestampDelta: 0,
        offsetDelta: 0,
        key: encodeControlRecordKey(1),
        value: encodeEndTransactionMarker(coordinatorEpoch),
        headers: [],
      },
    ],
    CompressionType.NONE,
  );
}

export { encodeCompressedWrapper, encodeLegacyEntry };
