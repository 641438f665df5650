import { open } from 'node:fs/promises';
import { CorruptRecordError } from '@seglift/format';

/** One shallow entry of a .log: a v2 RecordBatch or a legacy (magic 0/1) message. */
export interface LogEntry {
  /** Byte position of the entry in the file. */
  position: number;
  /** Whole entry size, including the 12-byte offset+size prefix. */
  size: number;
  magic: number;
  bytes: Uint8Array;
}

const LOG_OVERHEAD = 12;
const HEADER_SIZE_UP_TO_MAGIC = 17;
/** LegacyRecord.RECORD_OVERHEAD_V0: FileLogInputStream rejects smaller declared sizes. */
const MIN_ENTRY_SIZE = 14;
const CHUNK = 1 << 20;

export interface ReadLogOptions {
  /** Read the file as if it ended here (kafka-dump-log --max-bytes). */
  maxBytes?: number;
  /** Start at this byte position (time index verification scans from an indexed position). */
  startPosition?: number;
}

/**
 * Streams the shallow entries of a .log file with bounded memory (one read chunk plus the
 * current entry), the way Kafka's FileLogInputStream does (ref §1.6): iteration ends quietly
 * when 17 or fewer bytes remain or when an entry's declared size runs past the end; the caller
 * learns the bytes left over from `end - (last position + size)`. A declared size below 14 is
 * corruption and throws.
 *
 * The inspect command keeps this small reader private (rather than @seglift/segment's) because
 * kafka-dump-log prints partial tails instead of failing on them.
 */
export class LogFileReader {
  /** File size, clipped to maxBytes. */
  end = 0;
  /** Position just after the last complete entry returned. */
  validEnd = 0;

  constructor(
    readonly path: string,
    private readonly options: ReadLogOptions = {},
  ) {}

  async *entries(): AsyncGenerator<LogEntry> {
    const fh = await open(this.path, 'r');
    try {
      const { size: fileSize } = await fh.stat();
      const end = Math.min(fileSize, this.options.maxBytes ?? Number.MAX_SAFE_INTEGER);
      this.end = end;
      let position = this.options.startPosition ?? 0;
      this.validEnd = position;
      // buf holds file bytes [bufStart, bufStart + bufLen).
      let buf = Buffer.alloc(0);
      let bufStart = position;
      const ensure = async (from: number, length: number): Promise<void> => {
        if (from >= bufStart && from + length <= bufStart + buf.length) return;
        const want = Math.min(Math.max(length, CHUNK), end - from);
        const next = Buffer.allocUnsafe(want);
        let got = 0;
        while (got < want) {
          const { bytesRead } = await fh.read(next, got, want - got, from + got);
          if (bytesRead === 0) break;
          got += bytesRead;
        }
        buf = next.subarray(0, got);
        bufStart = from;
      };
      while (position + HEADER_SIZE_UP_TO_MAGIC < end) {
        await ensure(position, HEADER_SIZE_UP_TO_MAGIC);
        const at = position - bufStart;
        if (buf.length - at < HEADER_SIZE_UP_TO_MAGIC) break;
        const declared = buf.readInt32BE(at + 8);
        if (declared < MIN_ENTRY_SIZE) {
          throw new CorruptRecordError(
            `found record size ${declared} smaller than minimum record overhead (${MIN_ENTRY_SIZE})`,
            { file: this.path, position, offset: buf.readBigInt64BE(at) },
          );
        }
        const size = LOG_OVERHEAD + declared;
        if (position + size > end) break;
        await ensure(position, size);
        const from = position - bufStart;
        const bytes = buf.subarray(from, from + size);
        if (bytes.length < size) break;
        yield { position, size, magic: bytes[16], bytes };
        position += size;
        this.validEnd = position;
      }
    } finally {
      await fh.close();
    }
  }
}
