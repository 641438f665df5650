import { open } from 'node:fs/promises';
import {
  CorruptRecordError,
  HEADER_SIZE_UP_TO_MAGIC,
  LOG_OVERHEAD,
  RECORD_BATCH_OVERHEAD,
  TruncatedDataError,
  UnsupportedFormatError,
} from '@seglift/format';
import { LEGACY_RECORD_OVERHEAD_V0 } from '@seglift/legacy';

/** One shallow entry of a .log: a v2 RecordBatch or a v0/v1 message (maybe a compressed wrapper). */
export interface SegmentEntry {
  /** Byte position of the entry in the file. */
  position: number;
  /** Whole entry size, log overhead included (12 + the size field). */
  size: number;
  magic: number;
  /**
   * The entry's bytes: a view into a chunk buffer. Without `reuseBuffers` that buffer is never
   * reused, so the view stays valid after the iterator moves on (memory is bounded by what the
   * caller keeps, not by the file size); with it, only until the next entry is asked for.
   */
  bytes: Uint8Array;
}

export interface TruncatedTail {
  position: number;
  bytes: number;
  /** The partial entry's offset field, when at least 8 bytes of it are present. */
  offset?: bigint;
}

export interface ReadSegmentOptions {
  /**
   * Stop quietly at a partial trailing entry (what Kafka's recovery would truncate) instead of
   * throwing TruncatedDataError; `onTruncatedTail` reports what was dropped.
   */
  acceptTruncatedTail?: boolean;
  onTruncatedTail?: (tail: TruncatedTail) => void;
  /** Largest entry accepted (whole entry, overhead included); larger sizes are corruption. */
  maxEntryBytes?: number;
  /** Start at this byte position (an entry boundary, e.g. a position from the .index). */
  startPosition?: number;
  /** Read the file as if it ended after this many bytes (kafka-dump-log's --max-bytes). */
  maxBytes?: number;
  /** Read size; entries bigger than this get a buffer of their own size. */
  chunkSize?: number;
  /**
   * Read into two alternating buffers instead of a new one per chunk: an entry's bytes are then
   * valid only until the iterator is advanced. The pipeline's own loops use this, so reading a
   * file makes no garbage for the GC to catch up with (it kept peak RSS tens of MiB higher).
   * Buffers are two chunks long (room for a partial entry in front of a read-ahead chunk).
   */
  reuseBuffers?: boolean;
  signal?: AbortSignal;
}

/** LegacyRecord.RECORD_OVERHEAD_V0: Kafka's minimum size field for any magic (docs/kafka-format.md §1.6). */
const MIN_SIZE_FIELD = LEGACY_RECORD_OVERHEAD_V0;
const MIN_V2_SIZE_FIELD = RECORD_BATCH_OVERHEAD - LOG_OVERHEAD;
/** A size field above this is corruption, never an allocation: 64 MiB by default. */
export const DEFAULT_MAX_ENTRY_BYTES = 64 * 1024 * 1024;
export const DEFAULT_CHUNK_SIZE = 1024 * 1024;

/**
 * Consecutive whole entries of a segment, all framing-checked (the checks readSegmentEntries
 * lists): `bytes[start, end)`, whose first byte is at file position `position`. The pipeline's
 * loops walk entries inside a chunk themselves: one await and no objects per entry, which for
 * small legacy messages cost more than converting them. With `reuseBuffers` the bytes are valid
 * until the iterator is advanced.
 */
export interface EntryChunk {
  bytes: Buffer;
  start: number;
  end: number;
  position: number;
}

/** Size of the entry at `p` of a chunk (12 + its size field), as the reader checked it. */
export function entrySizeAt(bytes: Uint8Array, p: number): number {
  return ((bytes[p + 8] << 24) | (bytes[p + 9] << 16) | (bytes[p + 10] << 8) | bytes[p + 11]) + LOG_OVERHEAD;
}

/**
 * Streams the shallow entries of a segment file with a FileHandle and large reads. Every entry's
 * size field is validated before any allocation: < 14, v2 below 61 bytes, or above
 * `maxEntryBytes` -> CorruptRecordError; past EOF -> TruncatedDataError (unless
 * `acceptTruncatedTail`); magic outside 0..2 -> UnsupportedFormatError. Errors carry the file,
 * the entry's position and its offset field.
 */
export async function* readSegmentEntries(
  file: string,
  options: ReadSegmentOptions = {},
): AsyncGenerator<SegmentEntry, void, undefined> {
  for await (const c of readSegmentChunks(file, options)) {
    const b = c.bytes;
    for (let p = c.start; p < c.end; ) {
      const size = entrySizeAt(b, p);
      yield { position: c.position + (p - c.start), size, magic: b[p + 16], bytes: b.subarray(p, p + size) };
      p += size;
    }
  }
}

/**
 * readSegmentEntries by chunks of whole entries (see EntryChunk), with the same checks and the
 * same errors: an entry that fails them is thrown after the chunk of the entries before it.
 */
export async function* readSegmentChunks(
  file: string,
  options: ReadSegmentOptions = {},
): AsyncGenerator<EntryChunk, void, undefined> {
  const maxEntryBytes = options.maxEntryBytes ?? DEFAULT_MAX_ENTRY_BYTES;
  const chunkSize = options.chunkSize ?? DEFAULT_CHUNK_SIZE;
  const fh = await open(file, 'r');
  let aheadRead: Promise<number> | undefined;
  try {
    const fileSize = Math.min((await fh.stat()).size, options.maxBytes ?? Number.MAX_SAFE_INTEGER);
    let buf: Buffer = Buffer.alloc(0);
    let pos = options.startPosition ?? 0;
    let bufStart = pos;
    /** File position where the entries not yet handed out start (== pos when there are none). */
    let chunkFrom = pos;

    // Read-ahead: the chunk after the buffered bytes is read on libuv's pool while the caller
    // works on the entries already handed out, so parsing and codecs never wait on a read. It
    // lands `headroom` bytes into its buffer; at the refill only the partial entry at the end of
    // the current buffer is copied in front of it.
    const headroom = chunkSize;
    const bufferBytes = headroom + chunkSize;
    // reuseBuffers: two dedicated buffers (never from Buffer's shared pool) taking turns: `current`
    // holds the entries being handed out, `spare` is free and the read-ahead's target.
    let current: Buffer | undefined;
    let spare: Buffer | undefined;
    let ahead: Buffer | undefined;
    let aheadStart = -1;
    const readInto = async (b: Buffer, at: number, length: number, filePos: number): Promise<number> => {
      let n = 0;
      while (n < length) {
        const { bytesRead } = await fh.read(b, at + n, length - n, filePos + n);
        if (bytesRead === 0) break;
        n += bytesRead;
      }
      return n;
    };
    const readAhead = (): void => {
      const start = bufStart + buf.length;
      const length = Math.min(chunkSize, fileSize - start);
      if (length <= 0) return;
      if (options.reuseBuffers) {
        if (spare === undefined || spare.length < bufferBytes) spare = Buffer.allocUnsafeSlow(bufferBytes);
        ahead = spare;
      } else {
        ahead = Buffer.allocUnsafeSlow(bufferBytes);
      }
      aheadStart = start;
      aheadRead = readInto(ahead, headroom, length, start);
      // Handled when awaited; a failure here must not surface as an unhandled rejection.
      aheadRead.catch(() => {});
    };
    const take = (next: Buffer, from: number, to: number): void => {
      buf = next.subarray(from, to);
      bufStart = pos;
      if (options.reuseBuffers) {
        // The buffer being left holds only entries already handed out: free for the next read-ahead.
        spare = current;
        current = next;
      }
      readAhead();
    };
    // Called only once the entries before `pos` have been handed out.
    const fill = async (need: number): Promise<void> => {
      const keep = Math.max(0, bufStart + buf.length - pos);
      let got = 0;
      if (aheadRead !== undefined) {
        const pending = aheadRead;
        aheadRead = undefined;
        const n = await pending;
        // Usable when it starts exactly where the kept bytes end (always, unless a caller's
        // startPosition moved `pos` past the buffer).
        if (aheadStart === pos + keep) got = n;
      }
      if (got > 0 && keep <= headroom && keep + got >= need) {
        const next = ahead!;
        if (keep > 0) buf.copy(next, headroom - keep, pos - bufStart, buf.length);
        take(next, headroom - keep, headroom + got);
        return;
      }
      // First read, an entry larger than what is buffered and read ahead, or a short read-ahead.
      const want = Math.min(Math.max(chunkSize, need, keep + got), fileSize - pos);
      const next = Buffer.allocUnsafeSlow(want);
      if (keep > 0) buf.copy(next, 0, pos - bufStart, buf.length);
      let filled = keep;
      if (got > 0) {
        ahead!.copy(next, filled, headroom, headroom + got);
        filled += got;
      }
      if (filled < want) filled += await readInto(next, filled, want - filled, pos + filled);
      if (filled < need) {
        throw new TruncatedDataError(`file shrank while reading: needed ${need} bytes, got ${filled}`, {
          file,
          position: pos,
        });
      }
      take(next, 0, filled);
    };
    // The entries checked since the last hand-out, as one chunk (they all lie in `buf`).
    const pending = (): EntryChunk | undefined => {
      if (chunkFrom === pos) return undefined;
      const c = { bytes: buf, start: chunkFrom - bufStart, end: pos - bufStart, position: chunkFrom };
      chunkFrom = pos;
      return c;
    };

    const truncated = (remaining: number, detail: string, offset?: bigint): boolean => {
      if (options.acceptTruncatedTail) {
        options.onTruncatedTail?.({ position: pos, bytes: remaining, offset });
        return true;
      }
      throw new TruncatedDataError(detail, { file, position: pos, offset });
    };

    while (pos < fileSize) {
      options.signal?.throwIfAborted();
      const remaining = fileSize - pos;
      if (remaining < HEADER_SIZE_UP_TO_MAGIC) {
        const c = pending();
        if (c) yield c;
        let offset: bigint | undefined;
        if (remaining >= 8) {
          if (!(pos >= bufStart && pos + 8 <= bufStart + buf.length)) await fill(8);
          offset = buf.readBigInt64BE(pos - bufStart);
        }
        truncated(remaining, `partial entry at the end of the file: ${remaining} bytes`, offset);
        return;
      }
      // Buffered checks inline: awaiting a no-op per entry costs more than parsing small ones.
      if (!(pos >= bufStart && pos + HEADER_SIZE_UP_TO_MAGIC <= bufStart + buf.length)) {
        const c = pending();
        if (c) yield c;
        await fill(HEADER_SIZE_UP_TO_MAGIC);
      }
      const o = pos - bufStart;
      const sizeField = (buf[o + 8] << 24) | (buf[o + 9] << 16) | (buf[o + 10] << 8) | buf[o + 11];
      const magic = buf[o + 16];
      let problem: Error | undefined;
      if (sizeField < MIN_SIZE_FIELD || magic > 2 || (magic === 2 && sizeField < MIN_V2_SIZE_FIELD)) {
        const ctx = { file, position: pos, offset: buf.readBigInt64BE(o) };
        const signed = buf.readInt8(o + 16);
        if (sizeField < MIN_SIZE_FIELD) {
          problem = new CorruptRecordError(
            `entry size ${sizeField} is smaller than the minimum ${MIN_SIZE_FIELD}`,
            ctx,
          );
        } else if (signed < 0 || signed > 2) {
          problem = new UnsupportedFormatError(`unsupported magic ${signed}`, ctx);
        } else {
          problem = new CorruptRecordError(
            `record batch length ${sizeField} is smaller than the minimum 49`,
            ctx,
          );
        }
      } else if (sizeField > maxEntryBytes - LOG_OVERHEAD) {
        problem = new CorruptRecordError(
          `entry size ${sizeField} exceeds the limit of ${maxEntryBytes} bytes (maxEntryBytes)`,
          { file, position: pos, offset: buf.readBigInt64BE(o) },
        );
      }
      if (problem) {
        const c = pending();
        if (c) yield c;
        throw problem;
      }
      const size = sizeField + LOG_OVERHEAD;
      if (size > remaining) {
        const c = pending();
        if (c) yield c;
        truncated(
          remaining,
          `partial entry at the end of the file: declares ${size} bytes, ${remaining} present`,
          buf.readBigInt64BE(o),
        );
        return;
      }
      if (!(pos + size <= bufStart + buf.length)) {
        const c = pending();
        if (c) yield c;
        await fill(size);
      }
      pos += size;
    }
    const c = pending();
    if (c) yield c;
  } finally {
    await aheadRead?.catch(() => {});
    await fh.close();
  }
}
