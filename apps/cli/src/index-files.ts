import {
  decodeOffsetIndex,
  decodeTimeIndex,
  OFFSET_INDEX_ENTRY_SIZE,
  type OffsetIndexEntry,
  TIME_INDEX_ENTRY_SIZE,
  type TimeIndexEntry,
} from '@seglift/format';

/**
 * The part of an index file worth decoding: whole entries only (the broker takes
 * `length / entrySize` entries, docs/kafka-format.md §6.5), without the zero padding of a preallocated index,
 * which kafka-dump-log stops at anyway. Keeps entry 0 even when it is all zeros.
 */
function usedEntries(buf: Uint8Array, entrySize: number): Uint8Array {
  let end = buf.length - (buf.length % entrySize);
  let last = end - 1;
  while (last >= 0 && buf[last] === 0) last--;
  const used = last < 0 ? 0 : Math.ceil((last + 1) / entrySize) * entrySize;
  end = Math.max(Math.min(end, entrySize), used);
  return buf.subarray(0, end);
}

export function decodeOffsetIndexEntries(buf: Uint8Array, baseOffset: bigint): OffsetIndexEntry[] {
  return decodeOffsetIndex(usedEntries(buf, OFFSET_INDEX_ENTRY_SIZE), baseOffset);
}

export function decodeTimeIndexEntries(buf: Uint8Array, baseOffset: bigint): TimeIndexEntry[] {
  return decodeTimeIndex(usedEntries(buf, TIME_INDEX_ENTRY_SIZE), baseOffset);
}
