/**
 * The I/O buffers a thread reuses from one pass and one segment to the next: the reader's windows
 * (reader.ts, with reuseBuffers) and the writer's buffers (writer.ts). A conversion reads a
 * segment three times (the skip check, the rewrite, verify) and writes it once: fresh buffers for
 * each pass were ~20 MiB of garbage per segment, which V8 frees only at its next scavenge, so a
 * conversion thread held tens of MiB more than it used (docs/benchmarks.md, "Scaling up").
 * A buffer given back must no longer be read or written by anyone (its reads settled).
 */

/** At most this many bytes wait here for their next use. */
const MAX_FREE_BYTES = 12 * 1024 * 1024;

const free: Buffer[] = [];
let freeBytes = 0;

/** A buffer of exactly `size` bytes (not zeroed, never from Buffer's shared pool). */
export function takeBuffer(size: number): Buffer {
  const i = free.findIndex((b) => b.length === size);
  if (i < 0) return Buffer.allocUnsafeSlow(size);
  const b = free[i];
  free.splice(i, 1);
  freeBytes -= size;
  return b;
}

/** Gives `b` back for a later takeBuffer (dropped when the free ones would exceed the cap). */
export function giveBackBuffer(b: Buffer | undefined): void {
  if (b === undefined || freeBytes + b.length > MAX_FREE_BYTES || free.includes(b)) return;
  free.push(b);
  freeBytes += b.length;
}

/** Bytes waiting for reuse (tests). */
export function freeBufferBytes(): number {
  return freeBytes;
}
