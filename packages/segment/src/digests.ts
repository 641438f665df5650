import { crc32c } from '@seglift/format';

/**
 * CRC-32C and length of the decompressed record bytes of each compressed source batch that
 * convert recompressed, keyed by the batch's position in the source file. Verify-before-swap
 * checks the rewritten batch's records against these instead of decompressing the source a
 * second time (for gzip sources that second gunzip was the largest cost of the pipeline).
 *
 * Twelve bytes an entry in typed arrays; past `maxEntries` nothing more is recorded and verify
 * falls back to decoding the source for the remaining batches, so memory stays bounded whatever
 * the number of batches.
 */
export class PayloadDigests {
  private positions = new Uint32Array(1024);
  private crcs = new Uint32Array(1024);
  private lengths = new Uint32Array(1024);
  private count = 0;
  private cursor = 0;

  constructor(private readonly maxEntries = 1 << 21) {}

  get size(): number {
    return this.count;
  }

  add(position: number, payload: Uint8Array): void {
    if (this.count >= this.maxEntries) return;
    if (this.count === this.positions.length) this.grow();
    this.positions[this.count] = position;
    this.crcs[this.count] = crc32c(payload);
    this.lengths[this.count] = payload.length;
    this.count++;
  }

  /** The digest recorded for the source batch at `position`; call in increasing position order. */
  take(position: number): { crc: number; length: number } | undefined {
    while (this.cursor < this.count && this.positions[this.cursor] < position) this.cursor++;
    if (this.cursor < this.count && this.positions[this.cursor] === position) {
      const i = this.cursor++;
      return { crc: this.crcs[i], length: this.lengths[i] };
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
    this.lengths = copy(this.lengths);
  }
}
