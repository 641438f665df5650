import { readSegmentEntries, type SegmentEntry } from '@seglift/segment';

export type LogEntry = SegmentEntry;

export interface ReadLogOptions {
  /** Read the file as if it ended here (kafka-dump-log --max-bytes). */
  maxBytes?: number;
  /** Start at this byte position (index verification reads from an indexed position). */
  startPosition?: number;
}

/**
 * The shallow entries of a .log the way kafka-dump-log walks them (docs/kafka-format.md §1.6): a partial entry at
 * the end ends the iteration quietly and is reported afterwards as invalid bytes
 * (`end - validEnd`) instead of failing. Reading is @seglift/segment's streaming reader.
 */
export class LogFileReader {
  /** Position of the end of the data read (file size, clipped to maxBytes), once iterated. */
  end = 0;
  /** Position just after the last complete entry. */
  validEnd = 0;

  constructor(
    readonly path: string,
    private readonly options: ReadLogOptions = {},
  ) {}

  async *entries(): AsyncGenerator<LogEntry> {
    this.validEnd = this.options.startPosition ?? 0;
    this.end = this.validEnd;
    let tail = 0;
    for await (const entry of readSegmentEntries(this.path, {
      ...this.options,
      acceptTruncatedTail: true,
      onTruncatedTail: (t) => {
        tail = t.bytes;
      },
    })) {
      yield entry;
      this.validEnd = entry.position + entry.size;
      this.end = this.validEnd;
    }
    this.end = this.validEnd + tail;
  }
}
