import { constants } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import {
  CorruptRecordError,
  HEADER_SIZE_UP_TO_MAGIC,
  LENGTH_OFFSET,
  LOG_OVERHEAD,
  MAGIC_OFFSET,
  RECORD_BATCH_OVERHEAD,
  TruncatedDataError,
  UnsupportedFormatError,
} from '@seglift/format';
import { LEGACY_RECORD_OVERHEAD_V0 } from '@seglift/legacy';
import { ReadCourtesy, throttleIo } from '../files/io-courtesy.js';
import { assertRegularFile } from '../files/segment-file.js';
import { giveBackBuffer, takeBuffer } from './buffers.js';

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
   * Buffers are two chunks long (room for a partial entry in front of a read-ahead chunk), taken
   * from and given back to the thread's reused ones (buffers.ts) when the file is read to its end
   * or the iteration is ended.
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
  const q = p + LENGTH_OFFSET;
  return ((bytes[q] << 24) | (bytes[q + 1] << 16) | (bytes[q + 2] << 8) | bytes[q + 3]) + LOG_OVERHEAD;
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
      yield {
        position: c.position + (p - c.start),
        size,
        magic: b[p + MAGIC_OFFSET],
        bytes: b.subarray(p, p + size),
      };
      p += size;
    }
  }
}

/**
 * Opens `file` for reading, refusing anything but a regular file: O_NONBLOCK so that a FIFO
 * cannot block the open, then fstat on the descriptor (no window for a swap of the name between
 * a check and the open). On a regular file O_NONBLOCK changes nothing.
 */
export async function openRegularFile(file: string): Promise<FileHandle> {
  const fh = await open(file, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    assertRegularFile(await fh.stat(), file);
  } catch (err) {
    await fh.close().catch(() => {});
    throw err;
  }
  return fh;
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
  const fh = await openRegularFile(file);
  let window: ReadWindow | undefined;
  let courtesy: ReadCourtesy | undefined;
  try {
    const size = (await fh.stat()).size;
    // What this reader brings into the page cache leaves it again (io-courtesy.ts).
    courtesy = ReadCourtesy.open(fh.fd, size);
    const fileSize = Math.min(size, options.maxBytes ?? Number.MAX_SAFE_INTEGER);
    const w = new ReadWindow(fh, file, fileSize, options.startPosition ?? 0, options, courtesy);
    window = w;
    /** File position where the entries not yet handed out start (== w.pos when there are none). */
    let chunkFrom = w.pos;
    // The entries checked since the last hand-out, as one chunk (they all lie in w.buf).
    const pending = (): EntryChunk | undefined => {
      if (chunkFrom === w.pos) return undefined;
      const c = { bytes: w.buf, start: chunkFrom - w.bufStart, end: w.pos - w.bufStart, position: chunkFrom };
      chunkFrom = w.pos;
      return c;
    };
    const truncated = (remaining: number, detail: string, offset?: bigint): void =>
      truncatedTail(options, { file, position: w.pos }, remaining, detail, offset);

    while (w.pos < fileSize) {
      options.signal?.throwIfAborted();
      // The common case in a plain loop: an async generator's loop, hot for every small entry,
      // was optimized and thrown away by V8 five times a run (100 ms of compiling a 64 MiB file).
      w.pos = skipHeldEntries(w.buf, w.bufStart, w.pos, fileSize, maxEntryBytes);
      if (w.pos >= fileSize) break;
      const remaining = fileSize - w.pos;
      if (remaining < HEADER_SIZE_UP_TO_MAGIC) {
        const c = pending();
        if (c) yield c;
        const offset = await partialEntryOffset(w, remaining);
        truncated(remaining, `partial entry at the end of the file: ${remaining} bytes`, offset);
        return;
      }
      // Buffered checks inline: awaiting a no-op per entry costs more than parsing small ones.
      if (!w.holds(HEADER_SIZE_UP_TO_MAGIC)) {
        const c = pending();
        if (c) yield c;
        await w.fill(HEADER_SIZE_UP_TO_MAGIC);
      }
      const o = w.pos - w.bufStart;
      const buf = w.buf;
      const sizeField = entrySizeAt(buf, o) - LOG_OVERHEAD;
      if (framingFails(sizeField, buf[o + MAGIC_OFFSET], maxEntryBytes)) {
        const c = pending();
        if (c) yield c;
        throw framingError(buf, o, sizeField, maxEntryBytes, { file, position: w.pos });
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
      if (!w.holds(size)) {
        const c = pending();
        if (c) yield c;
        await w.fill(size);
      }
      w.pos += size;
    }
    const c = pending();
    if (c) yield c;
  } finally {
    await window?.settle();
    courtesy?.close();
    window?.release();
    await fh.close();
  }
}

/**
 * The file position after the whole entries from `pos` on that `buf` (file bytes from
 * `bufStart`) holds and that pass the framing checks of readSegmentChunks' loop, which then takes
 * the first entry that is not held whole or does not pass, and reports it exactly.
 */
function skipHeldEntries(
  buf: Buffer,
  bufStart: number,
  pos: number,
  fileSize: number,
  maxEntryBytes: number,
): number {
  const held = Math.min(bufStart + buf.length, fileSize);
  while (pos >= bufStart && pos + HEADER_SIZE_UP_TO_MAGIC <= held) {
    const o = pos - bufStart;
    const size = entrySizeAt(buf, o);
    if (framingFails(size - LOG_OVERHEAD, buf[o + MAGIC_OFFSET], maxEntryBytes) || pos + size > held) break;
    pos += size;
  }
  return pos;
}

/** Whether an entry's size field and magic fail the framing checks readSegmentEntries lists. */
function framingFails(sizeField: number, magic: number, maxEntryBytes: number): boolean {
  return (
    sizeField < MIN_SIZE_FIELD ||
    magic > 2 ||
    (magic === 2 && sizeField < MIN_V2_SIZE_FIELD) ||
    sizeField > maxEntryBytes - LOG_OVERHEAD
  );
}

/** A partial entry at the end: TruncatedDataError, or with acceptTruncatedTail reported and dropped. */
function truncatedTail(
  options: ReadSegmentOptions,
  at: { file: string; position: number },
  remaining: number,
  detail: string,
  offset: bigint | undefined,
): void {
  if (!options.acceptTruncatedTail) throw new TruncatedDataError(detail, { ...at, offset });
  options.onTruncatedTail?.({ position: at.position, bytes: remaining, offset });
}

/** The offset field of the partial entry at the window's position, when 8 bytes of it are there. */
async function partialEntryOffset(w: ReadWindow, remaining: number): Promise<bigint | undefined> {
  if (remaining < 8) return undefined;
  if (!w.holds(8)) await w.fill(8);
  return w.buf.readBigInt64BE(w.pos - w.bufStart);
}

/** The error for an entry whose size field or magic fails the framing checks (see above). */
function framingError(
  buf: Buffer,
  o: number,
  sizeField: number,
  maxEntryBytes: number,
  at: { file: string; position: number },
): Error {
  const ctx = { ...at, offset: buf.readBigInt64BE(o) };
  const magic = buf.readInt8(o + MAGIC_OFFSET);
  if (sizeField < MIN_SIZE_FIELD) {
    return new CorruptRecordError(
      `entry size ${sizeField} is smaller than the minimum ${MIN_SIZE_FIELD}`,
      ctx,
    );
  }
  if (magic < 0 || magic > 2) return new UnsupportedFormatError(`unsupported magic ${magic}`, ctx);
  if (magic === 2 && sizeField < MIN_V2_SIZE_FIELD) {
    return new CorruptRecordError(
      `record batch length ${sizeField} is smaller than the minimum ${MIN_V2_SIZE_FIELD}`,
      ctx,
    );
  }
  return new CorruptRecordError(
    `entry size ${sizeField} exceeds the limit of ${maxEntryBytes} bytes (maxEntryBytes)`,
    ctx,
  );
}

/**
 * The bytes of a segment file around the read position: `buf` holds file positions
 * [bufStart, bufStart + buf.length), and `pos` is where the next entry starts.
 *
 * Read-ahead: the chunk after the buffered bytes is read on libuv's pool while the caller works
 * on the entries already handed out, so parsing and codecs never wait on a read. It lands
 * `headroom` bytes into its buffer; at the refill only the partial entry at the end of the
 * current buffer is copied in front of it. With reuseBuffers two dedicated buffers (never from
 * Buffer's shared pool) take turns: `current` holds the entries being handed out, `spare` is free
 * and the read-ahead's target.
 */
class ReadWindow {
  buf: Buffer = Buffer.alloc(0);
  bufStart: number;
  pos: number;
  private readonly chunkSize: number;
  private readonly headroom: number;
  private readonly bufferBytes: number;
  private current: Buffer | undefined;
  private spare: Buffer | undefined;
  private ahead: Buffer | undefined;
  private aheadStart = -1;
  private aheadRead: Promise<number> | undefined;

  constructor(
    private readonly fh: FileHandle,
    private readonly file: string,
    private readonly fileSize: number,
    start: number,
    private readonly options: ReadSegmentOptions,
    private readonly courtesy: ReadCourtesy | undefined,
  ) {
    this.pos = start;
    this.bufStart = start;
    this.chunkSize = options.chunkSize ?? DEFAULT_CHUNK_SIZE;
    this.headroom = this.chunkSize;
    this.bufferBytes = this.headroom + this.chunkSize;
  }

  /** Whether the `n` bytes at `pos` are in `buf`. */
  holds(n: number): boolean {
    return this.pos >= this.bufStart && this.pos + n <= this.bufStart + this.buf.length;
  }

  /** Makes `buf` hold at least `need` bytes from `pos`; only once the entries before `pos` are handed out. */
  async fill(need: number): Promise<void> {
    const { pos, buf, bufStart, headroom } = this;
    const keep = Math.max(0, bufStart + buf.length - pos);
    let got = 0;
    if (this.aheadRead !== undefined) {
      const pending = this.aheadRead;
      this.aheadRead = undefined;
      const n = await pending;
      // Usable when it starts exactly where the kept bytes end (always, unless a caller's
      // startPosition moved `pos` past the buffer).
      if (this.aheadStart === pos + keep) got = n;
    }
    if (got > 0 && keep <= headroom && keep + got >= need) {
      const next = this.ahead!;
      if (keep > 0) buf.copy(next, headroom - keep, pos - bufStart, buf.length);
      this.take(next, headroom - keep, headroom + got);
      return;
    }
    // First read, an entry larger than what is buffered and read ahead, or a short read-ahead.
    const want = Math.min(Math.max(this.chunkSize, need, keep + got), this.fileSize - pos);
    // A third buffer (the kept bytes and the read-ahead are copied from the other two).
    const next =
      this.options.reuseBuffers && want <= this.bufferBytes
        ? takeBuffer(this.bufferBytes)
        : Buffer.allocUnsafeSlow(want);
    if (keep > 0) buf.copy(next, 0, pos - bufStart, buf.length);
    let filled = keep;
    if (got > 0) {
      this.ahead!.copy(next, filled, headroom, headroom + got);
      filled += got;
    }
    if (filled < want) filled += await this.readInto(next, filled, want - filled, pos + filled);
    if (filled < need) {
      throw new TruncatedDataError(`file shrank while reading: needed ${need} bytes, got ${filled}`, {
        file: this.file,
        position: pos,
      });
    }
    this.take(next, 0, filled);
  }

  /** Waits for a read-ahead in flight (its failure is the caller's no more). */
  async settle(): Promise<void> {
    await this.aheadRead?.catch(() => {});
  }

  /** With reuseBuffers, once settled and the last chunk is done with: the buffers go back. */
  release(): void {
    if (!this.options.reuseBuffers) return;
    this.giveBack(this.current);
    this.giveBack(this.spare);
    this.current = this.spare = this.ahead = undefined;
  }

  /** Only buffers of the usual size are worth keeping (a huge entry's own buffer is dropped). */
  private giveBack(b: Buffer | undefined): void {
    if (b?.length === this.bufferBytes) giveBackBuffer(b);
  }

  private take(next: Buffer, from: number, to: number): void {
    this.buf = next.subarray(from, to);
    this.bufStart = this.pos;
    if (this.options.reuseBuffers) {
      // The buffer being left holds only entries already handed out: free for the next
      // read-ahead. The spare, when `next` is not it, held a read-ahead already copied.
      if (this.spare !== next) this.giveBack(this.spare);
      this.spare = this.current;
      this.current = next;
    }
    this.readAhead();
  }

  private readAhead(): void {
    const start = this.bufStart + this.buf.length;
    const length = Math.min(this.chunkSize, this.fileSize - start);
    if (length <= 0) return;
    if (this.options.reuseBuffers) {
      if (this.spare === undefined || this.spare.length < this.bufferBytes) {
        this.spare = takeBuffer(this.bufferBytes);
      }
      this.ahead = this.spare;
    } else {
      this.ahead = Buffer.allocUnsafeSlow(this.bufferBytes);
    }
    this.aheadStart = start;
    this.aheadRead = this.readInto(this.ahead, this.headroom, length, start);
    // Handled when awaited; a failure here must not surface as an unhandled rejection.
    this.aheadRead.catch(() => {});
  }

  private async readInto(b: Buffer, at: number, length: number, filePos: number): Promise<number> {
    let n = 0;
    while (n < length) {
      const { bytesRead } = await this.fh.read(b, at + n, length - n, filePos + n);
      if (bytesRead === 0) break;
      n += bytesRead;
    }
    this.courtesy?.released(filePos, n);
    await throttleIo(n);
    return n;
  }
}
