import {
  INT32_MAX,
  LAST_OFFSET_DELTA_OFFSET,
  MAX_TIMESTAMP_OFFSET,
  type OffsetIndexView,
  offsetIndexView,
  type TimeIndexView,
  timeIndexView,
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
 * way kafka-dump-log does (docs/kafka-format.md §8.2): every offset entry must point at the start of a batch whose
 * last offset is the entry's offset; every time entry (T, O) must name a batch whose last offset
 * is O and whose maxTimestamp is T; offsets strictly increasing (.index), timestamps strictly
 * increasing (.timeindex).
 */
export class IndexChecker {
  readonly problems: IndexProblem[] = [];
  // Views over the index bytes, and typed arrays: memory stays a few bytes per entry however big
  // the segment (decoded entry objects and a bigint-keyed map took ~70 MiB for a 1 GiB log).
  private readonly offsets: OffsetIndexView;
  private readonly times: TimeIndexView;
  private nextOffsetEntry = 0;
  /** Relative offset -> slot (the first time entry with that offset) of the offsets the time index names. */
  private readonly wanted = new Map<number, number>();
  /** Per slot: whether a batch with that last offset was seen, and the first one's maxTimestamp. */
  private readonly seen: Uint8Array;
  private readonly seenTimestamp: BigInt64Array;
  /** baseOffset as a number when below 2^52 (batchAt's arithmetic stays exact), else NaN. */
  private readonly baseNumber: number;

  constructor(
    private readonly indexFile: string,
    offsetIndex: Uint8Array | undefined,
    private readonly timeIndexFile: string,
    timeIndex: Uint8Array | undefined,
    private readonly baseOffset: bigint,
    private readonly maxProblems = 100,
  ) {
    this.offsets = this.view(
      () => offsetIndexView(offsetIndex ?? EMPTY, baseOffset),
      indexFile,
      offsetIndexView,
    );
    this.times = this.view(() => timeIndexView(timeIndex ?? EMPTY, baseOffset), timeIndexFile, timeIndexView);
    for (let i = 1; i < this.offsets.length; i++) {
      if (this.offsets.relativeOffset(i) <= this.offsets.relativeOffset(i - 1)) {
        this.add({
          file: indexFile,
          entry: i,
          offset: this.offsets.offset(i),
          message: 'offset not increasing',
        });
      }
    }
    this.baseNumber = baseOffset >= 0n && baseOffset < 2n ** 52n ? Number(baseOffset) : Number.NaN;
    this.seen = new Uint8Array(this.times.length);
    this.seenTimestamp = new BigInt64Array(this.times.length);
    for (let i = 0; i < this.times.length; i++) {
      if (i > 0 && this.times.timestamp(i) <= this.times.timestamp(i - 1)) {
        this.add({
          file: timeIndexFile,
          entry: i,
          offset: this.times.offset(i),
          message: 'timestamp not increasing',
        });
      }
      const rel = this.times.relativeOffset(i);
      if (!this.wanted.has(rel)) this.wanted.set(rel, i);
    }
  }

  get offsetEntries(): number {
    return this.offsets.length;
  }

  get timeEntries(): number {
    return this.times.length;
  }

  /** The view, or an empty one with the problem recorded (a size that is not whole entries). */
  private view<T>(fn: () => T, file: string, empty: (b: Uint8Array, base: bigint) => T): T {
    try {
      return fn();
    } catch (err) {
      this.add({ file, entry: -1, message: (err as Error).message });
      return empty(EMPTY, this.baseOffset);
    }
  }

  private add(p: IndexProblem): void {
    if (this.problems.length < this.maxProblems) this.problems.push(p);
  }

  /** One batch (or shallow legacy entry) of the log, in file order. */
  batch(position: number, lastOffset: bigint, maxTimestamp: bigint): void {
    const rel = lastOffset - this.baseOffset;
    this.lastOffset = lastOffset;
    this.maxTimestamp = maxTimestamp;
    this.header = undefined;
    this.check(position, rel >= INT32_MIN_BIG && rel <= INT32_MAX_BIG ? Number(rel) : Number.NaN);
  }

  /**
   * `batch` for the v2 batch whose header is at `view`'s byte `p`: the same checks, its last
   * offset and maxTimestamp made BigInts only where a problem or a time index entry needs them.
   */
  batchAt(view: DataView, p: number, position: number): void {
    const hi = view.getInt32(p);
    if (hi < 0 || hi >= 0x100000 || Number.isNaN(this.baseNumber)) {
      this.batch(
        position,
        view.getBigInt64(p) + BigInt(view.getInt32(p + LAST_OFFSET_DELTA_OFFSET)),
        view.getBigInt64(p + MAX_TIMESTAMP_OFFSET),
      );
      return;
    }
    // Both below 2^52: the difference is exact.
    const rel =
      hi * TWO32 + view.getUint32(p + 4) - this.baseNumber + view.getInt32(p + LAST_OFFSET_DELTA_OFFSET);
    this.header = view;
    this.headerAt = p;
    // `| 0`: a small integer, which the Map of wanted offsets hashes fastest.
    this.check(position, rel >= -TWO31 && rel < TWO31 ? rel | 0 : Number.NaN);
  }

  /** `rel`: the last offset relative to the base when it fits an int32 (as index entries do), else NaN. */
  private check(position: number, rel: number): void {
    while (
      this.nextOffsetEntry < this.offsets.length &&
      this.offsets.position(this.nextOffsetEntry) < position
    ) {
      const i = this.nextOffsetEntry;
      this.add({
        file: this.indexFile,
        entry: i,
        offset: this.offsets.offset(i),
        position: this.offsets.position(i),
        message: 'position is not a batch start',
      });
      this.nextOffsetEntry++;
    }
    while (
      this.nextOffsetEntry < this.offsets.length &&
      this.offsets.position(this.nextOffsetEntry) === position
    ) {
      const i = this.nextOffsetEntry;
      if (this.offsets.relativeOffset(i) !== rel) {
        const offset = this.offsets.offset(i);
        this.add({
          file: this.indexFile,
          entry: i,
          offset,
          position,
          message: `index offset ${offset}, log offset ${this.batchLastOffset()}`,
        });
      }
      this.nextOffsetEntry++;
    }
    if (this.wanted.size > 0 && !Number.isNaN(rel)) {
      const slot = this.wanted.get(rel);
      if (slot !== undefined && this.seen[slot] === 0) {
        this.seen[slot] = 1;
        this.seenTimestamp[slot] = this.batchMaxTimestamp();
      }
    }
  }

  // The batch being checked: its header (batchAt) or its fields (batch).
  private header: DataView | undefined;
  private headerAt = 0;
  private lastOffset = 0n;
  private maxTimestamp = 0n;

  private batchLastOffset(): bigint {
    const v = this.header;
    const p = this.headerAt;
    return v ? v.getBigInt64(p) + BigInt(v.getInt32(p + LAST_OFFSET_DELTA_OFFSET)) : this.lastOffset;
  }

  private batchMaxTimestamp(): bigint {
    return this.header ? this.header.getBigInt64(this.headerAt + MAX_TIMESTAMP_OFFSET) : this.maxTimestamp;
  }

  finish(): IndexProblem[] {
    for (; this.nextOffsetEntry < this.offsets.length; this.nextOffsetEntry++) {
      const i = this.nextOffsetEntry;
      this.add({
        file: this.indexFile,
        entry: i,
        offset: this.offsets.offset(i),
        position: this.offsets.position(i),
        message: 'position is past the last batch',
      });
    }
    for (let i = 0; i < this.times.length; i++) {
      const slot = this.wanted.get(this.times.relativeOffset(i))!;
      const offset = this.times.offset(i);
      if (this.seen[slot] === 0) {
        this.add({
          file: this.timeIndexFile,
          entry: i,
          offset,
          message: `indexed offset ${offset} is not the last offset of a batch`,
        });
      } else if (this.seenTimestamp[slot] !== this.times.timestamp(i)) {
        this.add({
          file: this.timeIndexFile,
          entry: i,
          offset,
          message: `index timestamp ${this.times.timestamp(i)}, log timestamp ${this.seenTimestamp[slot]}`,
        });
      }
    }
    return this.problems;
  }
}

const EMPTY = new Uint8Array(0);
const INT32_MAX_BIG = BigInt(INT32_MAX);
const INT32_MIN_BIG = -INT32_MAX_BIG - 1n;
const TWO31 = 2 ** 31;
const TWO32 = 2 ** 32;
