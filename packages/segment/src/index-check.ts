import {
  decodeOffsetIndex,
  decodeTimeIndex,
  type OffsetIndexEntry,
  type TimeIndexEntry,
} from '@seglift/format';

export interface IndexProblem {
  file: string;
  entry: number;
  message: string;
  offset?: bigint;
  position?: number;
}

/**
 * Checks .index and .timeindex entries against the batches of the log, fed in file order, the
 * way kafka-dump-log does (ref §8.2): every offset entry must point at the start of a batch whose
 * last offset is the entry's offset; every time entry (T, O) must name a batch whose last offset
 * is O and whose maxTimestamp is T; offsets strictly increasing (.index), timestamps strictly
 * increasing (.timeindex).
 */
export class IndexChecker {
  readonly problems: IndexProblem[] = [];
  private readonly offsets: OffsetIndexEntry[];
  private readonly times: TimeIndexEntry[];
  private nextOffsetEntry = 0;
  /** lastOffset -> maxTimestamp of the batches the time index names, filled while scanning. */
  private readonly wanted = new Map<bigint, bigint | undefined>();

  constructor(
    private readonly indexFile: string,
    offsetIndex: Uint8Array | undefined,
    private readonly timeIndexFile: string,
    timeIndex: Uint8Array | undefined,
    baseOffset: bigint,
    private readonly maxProblems = 100,
  ) {
    this.offsets = offsetIndex
      ? this.decode(() => decodeOffsetIndex(offsetIndex, baseOffset), indexFile)
      : [];
    this.times = timeIndex ? this.decode(() => decodeTimeIndex(timeIndex, baseOffset), timeIndexFile) : [];
    for (let i = 1; i < this.offsets.length; i++) {
      if (this.offsets[i].offset <= this.offsets[i - 1].offset) {
        this.add({
          file: indexFile,
          entry: i,
          offset: this.offsets[i].offset,
          message: 'offset not increasing',
        });
      }
    }
    for (let i = 0; i < this.times.length; i++) {
      if (i > 0 && this.times[i].timestamp <= this.times[i - 1].timestamp) {
        this.add({
          file: timeIndexFile,
          entry: i,
          offset: this.times[i].offset,
          message: 'timestamp not increasing',
        });
      }
      this.wanted.set(this.times[i].offset, undefined);
    }
  }

  get offsetEntries(): number {
    return this.offsets.length;
  }

  get timeEntries(): number {
    return this.times.length;
  }

  private decode<T>(fn: () => T[], file: string): T[] {
    try {
      return fn();
    } catch (err) {
      this.add({ file, entry: -1, message: (err as Error).message });
      return [];
    }
  }

  private add(p: IndexProblem): void {
    if (this.problems.length < this.maxProblems) this.problems.push(p);
  }

  /** One batch (or shallow legacy entry) of the log, in file order. */
  batch(position: number, lastOffset: bigint, maxTimestamp: bigint): void {
    while (
      this.nextOffsetEntry < this.offsets.length &&
      this.offsets[this.nextOffsetEntry].position < position
    ) {
      const e = this.offsets[this.nextOffsetEntry];
      this.add({
        file: this.indexFile,
        entry: this.nextOffsetEntry,
        offset: e.offset,
        position: e.position,
        message: 'position is not a batch start',
      });
      this.nextOffsetEntry++;
    }
    while (
      this.nextOffsetEntry < this.offsets.length &&
      this.offsets[this.nextOffsetEntry].position === position
    ) {
      const e = this.offsets[this.nextOffsetEntry];
      if (e.offset !== lastOffset) {
        this.add({
          file: this.indexFile,
          entry: this.nextOffsetEntry,
          offset: e.offset,
          position,
          message: `index offset ${e.offset}, log offset ${lastOffset}`,
        });
      }
      this.nextOffsetEntry++;
    }
    if (this.wanted.has(lastOffset) && this.wanted.get(lastOffset) === undefined)
      this.wanted.set(lastOffset, maxTimestamp);
  }

  finish(): IndexProblem[] {
    for (; this.nextOffsetEntry < this.offsets.length; this.nextOffsetEntry++) {
      const e = this.offsets[this.nextOffsetEntry];
      this.add({
        file: this.indexFile,
        entry: this.nextOffsetEntry,
        offset: e.offset,
        position: e.position,
        message: 'position is past the last batch',
      });
    }
    this.times.forEach((t, i) => {
      const ts = this.wanted.get(t.offset);
      if (ts === undefined) {
        this.add({
          file: this.timeIndexFile,
          entry: i,
          offset: t.offset,
          message: `indexed offset ${t.offset} is not the last offset of a batch`,
        });
      } else if (ts !== t.timestamp) {
        this.add({
          file: this.timeIndexFile,
          entry: i,
          offset: t.offset,
          message: `index timestamp ${t.timestamp}, log timestamp ${ts}`,
        });
      }
    });
    return this.problems;
  }
}
