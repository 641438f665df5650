import { describe, expect, it, vi } from 'vitest';
import { CorruptRecordError, VerifyMismatchError } from './errors.js';
import {
  encodeRecordBatch,
  encodeRecordBatchFromPayload,
  RECORD_BATCH_OVERHEAD,
  type RecordBatchFields,
  recompressRecordBatch,
  recordsPayload,
} from './record-batch.js';

// The round trip's codec, with a switch that makes it decode one byte wrong (a codec bug).
// Only the target codec breaks: the source batch is decoded by the same function (gzip here).
const broken = vi.hoisted(() => ({ flipByte: false, fail: false, sourceCodec: 1 }));
vi.mock('./codecs/index.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('./codecs/index.js')>();
  return {
    ...real,
    decompressTransient: (...a: Parameters<typeof real.decompressTransient>) => {
      if (a[0] === broken.sourceCodec) return real.decompressTransient(...a);
      if (broken.fail) throw new Error('codec exploded');
      const out = real.decompressTransient(...a);
      if (!broken.flipByte) return out;
      const copy = Buffer.from(out);
      copy[copy.length - 1] ^= 1;
      return copy;
    },
  };
});

const fields: RecordBatchFields = {
  baseOffset: 1000n,
  partitionLeaderEpoch: 3,
  attributes: 0,
  lastOffsetDelta: 2,
  baseTimestamp: 1_600_000_000_000n,
  maxTimestamp: 1_600_000_000_002n,
  producerId: -1n,
  producerEpoch: -1,
  baseSequence: -1,
};
const records = [0, 1, 2].map((i) => ({
  attributes: 0,
  timestampDelta: i,
  offsetDelta: i,
  key: null,
  value: new TextEncoder().encode(`value-${i}`),
  headers: [],
}));

describe('recompressRecordBatch with roundTrip', () => {
  it('gives the same bytes as without it, for every source and target codec', () => {
    for (const from of [0, 1, 2, 3, 4]) {
      const source = encodeRecordBatch(fields, records, from);
      for (const to of [0, 1, 2, 3, 4]) {
        const a = recompressRecordBatch(source, to);
        const b = recompressRecordBatch(source, to, { roundTrip: true });
        expect(Buffer.from(b).equals(Buffer.from(a))).toBe(true);
        expect(Buffer.from(recordsPayload(b)).equals(Buffer.from(recordsPayload(source)))).toBe(true);
      }
    }
  });

  it('refuses malformed records in a CRC-valid source, with the position in the batch', () => {
    // Record length 12 with 6 bytes present: the stream ends inside the record.
    const payload = Uint8Array.from([24, 0, 0, 0, 1, 1, 1]);
    const plain = encodeRecordBatchFromPayload(fields, 1, payload, 0);
    // Without the round trip the bytes are carried over as they are.
    expect(() => recompressRecordBatch(plain, 4)).not.toThrow();
    let err: unknown;
    try {
      recompressRecordBatch(plain, 4, { roundTrip: true });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(CorruptRecordError);
    // Positions inside uncompressed record bytes are batch positions past the 61-byte header.
    expect((err as CorruptRecordError).position).toBe(RECORD_BATCH_OVERHEAD);
    expect((err as CorruptRecordError).offset).toBe(1000n);
    const gzip = encodeRecordBatchFromPayload(fields, 1, payload, 1);
    expect(() => recompressRecordBatch(gzip, 4, { roundTrip: true })).toThrow(
      /of the decompressed records.*position 61/,
    );
  });

  it('a codec that decodes its own output wrong or not at all is a VerifyMismatchError', () => {
    const source = encodeRecordBatch(fields, records, 1);
    broken.flipByte = true;
    try {
      expect(() => recompressRecordBatch(source, 4, { roundTrip: true })).toThrow(VerifyMismatchError);
      expect(() => recompressRecordBatch(source, 4, { roundTrip: true })).toThrow(
        /decompress to different bytes/,
      );
      // Without the round trip nobody notices.
      expect(() => recompressRecordBatch(source, 4)).not.toThrow();
    } finally {
      broken.flipByte = false;
    }
    broken.fail = true;
    try {
      expect(() => recompressRecordBatch(source, 3, { roundTrip: true })).toThrow(
        /do not decompress: codec exploded/,
      );
    } finally {
      broken.fail = false;
    }
  });
});
