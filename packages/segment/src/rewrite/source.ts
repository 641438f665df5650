import { isActiveSegment } from '../discovery/discovery.js';
import {
  type EntryChunk,
  type ReadSegmentOptions,
  readSegmentChunks,
  readSegmentEntries,
  type SegmentEntry,
} from './reader.js';

/**
 * Where a rewrite reads a segment's log from. The rewrite and its verification only read entries
 * front to back (with the reader's framing checks) and ask where the segment stands in its
 * partition: a local file today; an archive member or an object would be another implementation
 * of this, not a change to the pipeline.
 */
export interface SegmentSource {
  /** What errors and reports name (a local file: its path). */
  readonly name: string;
  readonly baseOffset: bigint;
  /** The entries in chunks of whole entries, from the first (reader.ts' checks and errors). */
  chunks(options: ReadSegmentOptions): AsyncGenerator<EntryChunk, void, undefined>;
  /** The entries one by one, from the first. */
  entries(options: ReadSegmentOptions): AsyncGenerator<SegmentEntry, void, undefined>;
  /**
   * Whether it is its partition's active (last) segment: a broker resizes that one's indexes to
   * segment.index.bytes when it loads the log.
   */
  isActive(): Promise<boolean>;
}

/** A segment's `.log` file on a local filesystem. */
export class LocalSegmentSource implements SegmentSource {
  constructor(
    readonly name: string,
    readonly baseOffset: bigint,
  ) {}

  chunks(options: ReadSegmentOptions): AsyncGenerator<EntryChunk, void, undefined> {
    return readSegmentChunks(this.name, options);
  }

  entries(options: ReadSegmentOptions): AsyncGenerator<SegmentEntry, void, undefined> {
    return readSegmentEntries(this.name, options);
  }

  isActive(): Promise<boolean> {
    return isActiveSegment(this.name);
  }
}
