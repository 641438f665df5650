import type { Hash } from 'node:crypto';
import type { FileHandle } from 'node:fs/promises';
import {
  ATTRIBUTES_OFFSET,
  batchCompression,
  batchLastOffset,
  COMPRESSION_CODEC_MASK,
  CorruptRecordError,
  LENGTH_OFFSET,
  LOG_OVERHEAD,
  RECORDS_COUNT_OFFSET,
  readRecordBatchHeader,
  type SegmentIndexBuilder,
} from '@seglift/format';
import { writeAll } from '../files/fsops.js';
import { throttleIo } from '../files/io-courtesy.js';
import { giveBackBuffer, takeBuffer } from './buffers.js';
import { formatKey } from './entry.js';

const WRITE_BUFFER_BYTES = 1024 * 1024;
/** A segment's positions are int32 (OffsetIndex, FileRecords): its size limit. */
export const MAX_SEGMENT_BYTES = 0x7fffffff;

/**
 * Buffered writer of the new log that feeds the index builder with the new positions. Batches are
 * copied into one of two reused buffers (the thread's, buffers.ts: no references kept to the reader's or codec's buffers, no
 * garbage per write); while one buffer's write runs on libuv's pool the other fills, so the
 * codecs never wait on a write. A batch larger than a buffer is written on its own.
 */
export class SegmentWriter {
  position = 0;
  batches = 0;
  records = 0;
  readonly codecOut: Record<string, number> = {};
  /** The thread's reused buffers (buffers.ts), given back by finish. */
  private readonly buffers = [takeBuffer(WRITE_BUFFER_BYTES), takeBuffer(WRITE_BUFFER_BYTES)];
  private active = 0;
  private used = 0;
  private filePos = 0;
  /** The write in flight (at most one), of the buffer not active. */
  private pending: Promise<void> | undefined;
  constructor(
    private readonly fh: FileHandle,
    private readonly file: string,
    private readonly index: SegmentIndexBuilder,
    /** sha256 of the bytes written, in file order (a stage record's). */
    private readonly digest?: Hash,
  ) {}

  async write(batch: Uint8Array): Promise<void> {
    const h = readRecordBatchHeader(batch, 0);
    if (this.position + batch.length > MAX_SEGMENT_BYTES) {
      throw new CorruptRecordError('rewritten segment would exceed 2 GiB (positions are int32)', {
        file: this.file,
        position: this.position,
        offset: h.baseOffset,
      });
    }
    this.index.append(this.position, batch.length, batchLastOffset(h), h.maxTimestamp);
    const key = formatKey(2, batchCompression(h));
    this.codecOut[key] = (this.codecOut[key] ?? 0) + 1;
    this.batches++;
    this.records += h.recordsCount;
    this.position += batch.length;
    const buffer = this.buffers[this.active];
    if (this.used + batch.length > buffer.length) await this.flush();
    if (batch.length > buffer.length) {
      // The batch may live in the reader's reused buffer: written before the reader moves on.
      await this.drain();
      const at = this.filePos;
      this.filePos += batch.length;
      await this.writeFully(batch, at);
    } else {
      this.buffers[this.active].set(batch, this.used);
      this.used += batch.length;
    }
  }

  /**
   * Writes `bytes`, whole v2 batches back to back (the upconverter's output), without a header
   * object per batch; copied before the promise resolves.
   */
  async writeBatches(bytes: Uint8Array): Promise<void> {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    for (let p = 0; p < bytes.length; ) {
      const size = view.getInt32(p + LENGTH_OFFSET) + LOG_OVERHEAD;
      if (this.position + size > MAX_SEGMENT_BYTES) {
        throw new CorruptRecordError('rewritten segment would exceed 2 GiB (positions are int32)', {
          file: this.file,
          position: this.position,
          offset: view.getBigInt64(p),
        });
      }
      this.index.appendBatchAt(view, p, this.position, size);
      const key = formatKey(2, view.getInt16(p + ATTRIBUTES_OFFSET) & COMPRESSION_CODEC_MASK);
      this.codecOut[key] = (this.codecOut[key] ?? 0) + 1;
      this.batches++;
      this.records += view.getInt32(p + RECORDS_COUNT_OFFSET);
      this.position += size;
      p += size;
    }
    let done = 0;
    while (done < bytes.length) {
      const buffer = this.buffers[this.active];
      const n = Math.min(bytes.length - done, buffer.length - this.used);
      buffer.set(bytes.subarray(done, done + n), this.used);
      this.used += n;
      done += n;
      if (this.used === buffer.length) await this.flush();
    }
  }

  /** Starts writing the active buffer and switches to the other one. */
  async flush(): Promise<void> {
    if (this.used === 0) return;
    await this.drain();
    const bytes = this.buffers[this.active].subarray(0, this.used);
    const at = this.filePos;
    this.filePos += this.used;
    this.used = 0;
    this.active ^= 1;
    const p = this.writeFully(bytes, at);
    // Rejections are handled where the write is awaited (drain).
    p.catch(() => {});
    this.pending = p;
  }

  /** Waits for the write in flight; its failure is thrown here. */
  async drain(): Promise<void> {
    const p = this.pending;
    this.pending = undefined;
    await p;
  }

  /** Everything written: flush and wait. */
  async finish(): Promise<void> {
    await this.flush();
    await this.drain();
    for (const b of this.buffers) giveBackBuffer(b);
  }

  private writeFully(bytes: Uint8Array, at: number): Promise<void> {
    // Called in file order (one write in flight at a time).
    this.digest?.update(bytes);
    return writeAll(this.fh, this.file, bytes, at).then(() => throttleIo(bytes.length));
  }
}
