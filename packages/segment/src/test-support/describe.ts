import {
  batchTimestampType,
  hasDeleteHorizon,
  isTransactional,
  SegliftError,
  type TimestampType,
} from '@seglift/format';
import { codecLabel, inspectEntry } from '../rewrite/entry.js';
import { type ReadSegmentOptions, readSegmentEntries } from '../rewrite/reader.js';

/** One shallow entry as kafka-dump-log prints it (docs/kafka-format.md §8.2), JSON-friendly (offsets as strings). */
export interface BatchSummary {
  position: number;
  size: number;
  magic: number;
  codec: string;
  /** v2 baseOffset; legacy: the entry offset. */
  baseOffset: string;
  lastOffset: string;
  timestampType: TimestampType;
  maxTimestamp: string;
  crc: number;
  isValid: boolean;
  /** The CRC error, when isValid is false. */
  crcError?: string;
  // v2 only:
  count?: number;
  baseTimestamp?: string;
  partitionLeaderEpoch?: number;
  producerId?: string;
  producerEpoch?: number;
  baseSequence?: number;
  lastSequence?: number;
  isTransactional?: boolean;
  isControl?: boolean;
  deleteHorizon?: boolean;
  attributes?: number;
}

/**
 * Batch-level view of a segment for `inspect`: every header field and the codec, without
 * decompressing. A CRC mismatch does not stop the iteration (isValid false); structural errors
 * (sizes, truncation) do.
 */
export async function* describeSegment(
  logPath: string,
  options: ReadSegmentOptions = {},
): AsyncGenerator<BatchSummary, void, undefined> {
  for await (const entry of readSegmentEntries(logPath, options)) {
    let crcError: string | undefined;
    try {
      inspectEntry(entry, logPath, true);
    } catch (err) {
      if (!(err instanceof SegliftError) || err.code !== 'CRC_MISMATCH') throw err;
      crcError = err.message;
    }
    const info = inspectEntry(entry, logPath, false);
    const base: BatchSummary = {
      position: entry.position,
      size: entry.size,
      magic: entry.magic,
      codec: codecLabel(info.codec),
      baseOffset: info.offset.toString(),
      lastOffset: info.lastOffset.toString(),
      timestampType: info.timestampType,
      maxTimestamp: info.maxTimestamp.toString(),
      crc: info.crc,
      isValid: crcError === undefined,
      crcError,
    };
    const h = info.header;
    if (h) {
      const lastSequence = h.baseSequence < 0 ? -1 : (h.baseSequence + h.lastOffsetDelta) % 0x80000000;
      Object.assign(base, {
        count: h.recordsCount,
        baseTimestamp: h.baseTimestamp.toString(),
        partitionLeaderEpoch: h.partitionLeaderEpoch,
        producerId: h.producerId.toString(),
        producerEpoch: h.producerEpoch,
        baseSequence: h.baseSequence,
        lastSequence,
        isTransactional: isTransactional(h),
        isControl: info.isControl,
        deleteHorizon: hasDeleteHorizon(h),
        attributes: h.attributes,
        timestampType: batchTimestampType(h),
      });
    }
    yield base;
  }
}
