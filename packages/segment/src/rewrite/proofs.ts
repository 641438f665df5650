import { CRC_OFFSET } from '@seglift/format';

/**
 * What convert proved in memory about each batch it recompressed (recompressRecordBatch with
 * `roundTrip`: source records strictly parsed, new record bytes decompressed again and equal to
 * the source's), keyed by the source batch's position: the new batch's stored CRC-32C and size.
 * A batch kept as it was after that round trip (oversize, or onlyIfSmaller) is proven with its own
 * bytes. Batches copied without a round trip (control, empty, already in the target codec) have
 * no proof: verify decodes them, so their records are still checked.
 * Verify-before-swap reads the new batch back from disk, checks its CRC over the bytes and
 * compares the header fields with the source's; a CRC and size equal to these then shows the
 * bytes on disk are the ones proven, so neither side is decompressed a second time (for gzip
 * sources that was the largest cost of the pipeline).
 *
 * Twelve bytes a batch in typed arrays (position, CRC, size); past `maxEntries` nothing more is recorded and verify
 * decodes and compares both sides for the remaining batches, so memory stays bounded whatever
 * the number of batches.
 */
export class RecompressedBatchProofs {
  private positions = new Uint32Array(1024);
  private crcs = new Uint32Array(1024);
  private sizes = new Uint32Array(1024);
  private count = 0;
  private cursor = 0;

  constructor(private readonly maxEntries = 1 << 21) {}

  get size(): number {
    return this.count;
  }

  /** `batch` is the new batch as written; its stored CRC is at CRC_OFFSET (docs/kafka-format.md §5.1). */
  add(sourcePosition: number, batch: Uint8Array): void {
    if (this.count >= this.maxEntries) return;
    if (this.count === this.positions.length) this.grow();
    this.positions[this.count] = sourcePosition;
    this.crcs[this.count] = new DataView(batch.buffer, batch.byteOffset, batch.byteLength).getUint32(
      CRC_OFFSET,
    );
    this.sizes[this.count] = batch.length;
    this.count++;
  }

  /** Whether a proof is recorded at `position`, without taking it (same ordering rule as take). */
  has(position: number): boolean {
    while (this.cursor < this.count && this.positions[this.cursor] < position) this.cursor++;
    return this.cursor < this.count && this.positions[this.cursor] === position;
  }

  /** The proof recorded for the source batch at `position`; call in increasing position order. */
  take(position: number): { crc: number; size: number } | undefined {
    while (this.cursor < this.count && this.positions[this.cursor] < position) this.cursor++;
    if (this.cursor < this.count && this.positions[this.cursor] === position) {
      const i = this.cursor++;
      return { crc: this.crcs[i], size: this.sizes[i] };
    }
    return undefined;
  }

  private grow(): void {
    const n = this.positions.length * 2;
    const copy = (a: Uint32Array) => {
      const b = new Uint32Array(n);
      b.set(a);
      return b;
    };
    this.positions = copy(this.positions);
    this.crcs = copy(this.crcs);
    this.sizes = copy(this.sizes);
  }
}

/** One run of consecutive legacy entries and the batches it became (see UpconvertedRunProofs). */
export interface UpconvertedRun {
  sourceStart: number;
  sourceEnd: number;
  /** CRC-32 of the source bytes [sourceStart, sourceEnd) as convert read them. */
  sourceCrc: number;
  outputStart: number;
  outputEnd: number;
  /** CRC-32 of the new log's bytes [outputStart, outputEnd) as convert handed them to the write. */
  outputCrc: number;
  batches: number;
}

/**
 * What convert proved in memory about each run of consecutive legacy entries: the Upconverter
 * (`prove`) parsed back every record it wrote and compared it with the legacy message it came
 * from, read back every batch header and decompressed every batch's record bytes again. So the
 * batches written for a run hold exactly the records of the run's source bytes, as a consumer
 * of either reads them.
 *
 * Verify-before-swap then shows the files on disk are those bytes: it re-reads the run's source
 * bytes and the run's output bytes, and their CRC-32s must be the ones recorded here (besides
 * every batch's own CRC-32C and the index checks; CRC-32 because it is twice as fast here). The source is not decoded again (for gzip
 * wrappers that second gunzip cost about as much as the recompression) and neither are the new
 * batches.
 *
 * Runs are recorded in file order; past `maxEntries` nothing more is recorded and verify decodes
 * and compares both sides for the remaining runs (memory stays bounded: a run ends only at a v2
 * batch, so there are at most as many runs as v2 batches, plus one).
 */
export class UpconvertedRunProofs {
  private readonly runs: UpconvertedRun[] = [];
  private cursor = 0;

  constructor(private readonly maxEntries = 1 << 20) {}

  get size(): number {
    return this.runs.length;
  }

  add(run: UpconvertedRun): void {
    if (this.runs.length < this.maxEntries) this.runs.push(run);
  }

  /** The run starting at `position`; call in increasing position order. */
  take(position: number): UpconvertedRun | undefined {
    while (this.cursor < this.runs.length && this.runs[this.cursor].sourceStart < position) this.cursor++;
    const r = this.runs[this.cursor];
    if (r !== undefined && r.sourceStart === position) {
      this.cursor++;
      return r;
    }
    return undefined;
  }
}
