/**
 * A model of what a Kafka broker does with a partition directory at start-up after a clean
 * shutdown, and of how it then answers lookups, written for the tests from Kafka's source
 * (docs/kafka-format.md, "Swap completion at start-up"; LogLoader.load and
 * removeTempFilesAndCollectSwapFiles, LogSegment.open/sanityCheck/readNextOffset/recover,
 * OffsetIndex/TimeIndex.lookup, FileRecords.searchForOffsetWithSize/searchForTimestamp,
 * UnifiedLog.fetchOffsetByTimestamp). Nothing here uses seglift's production code; records are
 * decoded by kafkajs (independent.ts). The real broker suite (e2e/kafka) checks the same states
 * against Kafka itself.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { independentRecords, type PlainRecord, recoveryIndexes, shallowEntries } from './independent.js';

export interface KafkaStartUpOptions {
  /** segment.index.bytes: the size of the zero-filled index Kafka creates for a `.log.swap` without one. */
  segmentIndexBytes?: number;
  indexIntervalBytes?: number;
}

export interface LoadedSegment {
  baseOffset: bigint;
  log: Buffer;
  index: Buffer;
  timeindex: Buffer;
  mtimeMs: number;
  /** The broker rebuilt its indexes (no .index at load). */
  recovered: boolean;
}

const offsetOf = (name: string): bigint | undefined => {
  const m = /^(\d+)\./.exec(name);
  return m ? BigInt(m[1]) : undefined;
};
const exists = (p: string) =>
  stat(p).then(
    (s) => s.isFile(),
    () => false,
  );

/** Next offset of a log: the last entry's last offset + 1, or the base offset when empty. */
function nextOffsetOf(log: Buffer, base: bigint): bigint {
  const entries = shallowEntries(log);
  return entries.length ? entries[entries.length - 1].lastOffset + 1n : base;
}

/** LogLoader.load on `pdir` (files changed in place, as the broker does), then the loaded segments. */
export async function kafkaStartUp(
  pdir: string,
  options: KafkaStartUpOptions = {},
): Promise<LoadedSegment[]> {
  const indexBytes = Math.floor((options.segmentIndexBytes ?? 10 * 1024 * 1024) / 8) * 8;
  await completeSwaps(pdir, indexBytes);
  return loadSegments(pdir, options);
}

/** LogLoader's swap completion: stray and cleaned files go, valid swaps replace their range. */
async function completeSwaps(pdir: string, indexBytes: number): Promise<void> {
  // First pass: stray .deleted files go, .cleaned and .swap files are collected.
  let minCleaned: bigint | undefined;
  const swaps: string[] = [];
  const cleaned: string[] = [];
  for (const n of await readdir(pdir)) {
    if (!(await exists(path.join(pdir, n)))) continue;
    if (n.endsWith('.deleted')) await unlink(path.join(pdir, n));
    else if (n.endsWith('.cleaned')) {
      cleaned.push(n);
      const o = offsetOf(n)!;
      if (minCleaned === undefined || o < minCleaned) minCleaned = o;
    } else if (n.endsWith('.swap')) swaps.push(n);
  }
  // KAFKA-6264: swaps at or above the lowest .cleaned offset may be an unfinished split.
  const valid: string[] = [];
  for (const n of swaps) {
    if (minCleaned !== undefined && offsetOf(n)! >= minCleaned) await unlink(path.join(pdir, n));
    else valid.push(n);
  }
  for (const n of cleaned) await unlink(path.join(pdir, n));
  // One range over every .log.swap: from the lowest base to the highest next offset. Opening a
  // swap segment creates its offset index (zero-filled) when there is none.
  let min: bigint | undefined;
  let max: bigint | undefined;
  for (const n of valid) {
    if (!n.endsWith('.log.swap')) continue;
    const base = offsetOf(n)!;
    const indexSwap = path.join(pdir, n.replace(/\.log\.swap$/, '.index.swap'));
    if (!(await exists(indexSwap))) await writeFile(indexSwap, Buffer.alloc(indexBytes));
    const next = nextOffsetOf(await readFile(path.join(pdir, n)), base);
    if (min === undefined || base < min) min = base;
    if (max === undefined || next > max) max = next;
  }
  if (min !== undefined && max !== undefined) {
    for (const n of await readdir(pdir)) {
      if (n.endsWith('.swap') || !(await exists(path.join(pdir, n)))) continue;
      const o = offsetOf(n);
      if (o !== undefined && o >= min && o < max) await unlink(path.join(pdir, n));
    }
  }
  for (const n of await readdir(pdir))
    if (n.endsWith('.swap')) await rename(path.join(pdir, n), path.join(pdir, n.slice(0, -'.swap'.length)));
}

/** LogLoader's load of the segments left: indexes trusted, recovered or created. */
async function loadSegments(pdir: string, options: KafkaStartUpOptions): Promise<LoadedSegment[]> {
  // Load: an index file without its log is deleted; a log without an offset index is recovered
  // (both indexes rebuilt); a missing time index is created empty; everything else is trusted.
  const names = (await readdir(pdir)).sort();
  for (const n of names) {
    if (!/\.(index|timeindex|txnindex)$/.test(n)) continue;
    const log = path.join(pdir, `${n.slice(0, n.indexOf('.'))}.log`);
    if (!(await exists(log))) await unlink(path.join(pdir, n));
  }
  const out: LoadedSegment[] = [];
  for (const n of names) {
    if (!/^\d+\.log$/.test(n)) continue;
    const base = offsetOf(n)!;
    const prefix = n.slice(0, -'.log'.length);
    const logPath = path.join(pdir, n);
    const indexPath = path.join(pdir, `${prefix}.index`);
    const timePath = path.join(pdir, `${prefix}.timeindex`);
    const log = await readFile(logPath);
    let recovered = false;
    if (!(await exists(indexPath))) {
      const rebuilt = recoveryIndexes(log, base, options.indexIntervalBytes);
      await writeFile(indexPath, rebuilt.index);
      await writeFile(timePath, rebuilt.timeindex);
      recovered = true;
    } else if (!(await exists(timePath))) {
      await writeFile(timePath, Buffer.alloc(0));
    }
    out.push({
      baseOffset: base,
      log,
      index: await readFile(indexPath),
      timeindex: await readFile(timePath),
      mtimeMs: (await stat(logPath)).mtimeMs,
      recovered,
    });
  }
  return out.sort((a, b) => (a.baseOffset < b.baseOffset ? -1 : 1));
}

interface Batch {
  position: number;
  lastOffset: bigint;
  maxTimestamp: bigint;
  records: PlainRecord[];
}

/** Decoded logs by content: crash tests look at the same few logs many times. */
const decoded = new Map<string, Batch[]>();

async function batchesOf(log: Buffer): Promise<Batch[]> {
  const key = createHash('sha256').update(log).digest('hex');
  const known = decoded.get(key);
  if (known) return known;
  const out: Batch[] = [];
  for (const e of shallowEntries(log)) {
    out.push({
      position: e.position,
      lastOffset: e.lastOffset,
      maxTimestamp: e.maxTimestamp,
      records: await independentRecords(e.bytes),
    });
  }
  if (decoded.size > 64) decoded.clear();
  decoded.set(key, out);
  return out;
}

/** OffsetIndex.lookup: the largest entry with offset <= target, else (base, 0). Every slot of the file counts. */
function offsetIndexLookup(
  index: Buffer,
  base: bigint,
  target: bigint,
): { offset: bigint; position: number } {
  let found = { offset: base, position: 0 };
  for (let i = 0; i + 8 <= index.length; i += 8) {
    const off = base + BigInt(index.readInt32BE(i));
    if (off > target) break;
    found = { offset: off, position: index.readInt32BE(i + 4) };
  }
  return found;
}

/** TimeIndex.lookup: the largest entry with timestamp <= target, else (-1, base). */
function timeIndexLookup(timeindex: Buffer, base: bigint, target: bigint): bigint {
  let offset = base;
  for (let i = 0; i + 12 <= timeindex.length; i += 12) {
    if (timeindex.readBigInt64BE(i) > target) break;
    offset = base + BigInt(timeindex.readInt32BE(i + 8));
  }
  return offset;
}

/** LogSegment.largestTimestamp: the time index's last entry when it has one >= 0, else the file's mtime. */
function largestTimestamp(s: LoadedSegment): bigint {
  if (s.timeindex.length >= 12) {
    const last = s.timeindex.readBigInt64BE(Math.floor(s.timeindex.length / 12) * 12 - 12);
    if (last >= 0n) return last;
  }
  return BigInt(Math.floor(s.mtimeMs));
}

/**
 * Checks that the loaded partition serves `expected` (every record, in order) and answers offset
 * and timestamp lookups as it would with correct indexes. Returns the problems found (empty: ok).
 */
export async function kafkaServes(segments: LoadedSegment[], expected: PlainRecord[]): Promise<string[]> {
  const problems: string[] = [];
  const all: PlainRecord[] = [];
  const batches = new Map<LoadedSegment, Batch[]>();
  for (const s of segments) {
    const b = await batchesOf(s.log);
    batches.set(s, b);
    for (const x of b) all.push(...x.records);
  }
  const key = (r: PlainRecord) => JSON.stringify(r);
  if (all.length !== expected.length || all.some((r, i) => key(r) !== key(expected[i]))) {
    problems.push(`records served differ: ${all.length} served, ${expected.length} expected`);
    return problems;
  }
  // Offset lookups: the batch found from the index position must be the first with lastOffset >=
  // target. Targets: the first, a middle and the last record of every batch.
  for (const s of segments) {
    const bs = batches.get(s)!;
    const byPosition = new Map(bs.map((b, i) => [b.position, i]));
    for (const [i, b] of bs.entries()) {
      const rs = b.records;
      for (const r of rs.length ? [rs[0], rs[rs.length >> 1], rs[rs.length - 1]] : []) {
        const target = BigInt(r.offset);
        const { position } = offsetIndexLookup(s.index, s.baseOffset, target);
        const start = byPosition.get(position);
        if (start === undefined) {
          problems.push(`segment ${s.baseOffset}: .index points at ${position}, not a batch boundary`);
          return problems;
        }
        let found = start;
        while (found < bs.length && bs[found].lastOffset < target) found++;
        if (found !== i) {
          problems.push(
            `segment ${s.baseOffset}: offset ${target} looked up in batch ${found}, is in batch ${i}`,
          );
          return problems;
        }
      }
    }
  }
  // Timestamp lookups (ListOffsets / offsetsForTimes): the first record with timestamp >= target.
  // Targets: around every batch's max timestamp and its first record's timestamp.
  const stamps = new Set<bigint>();
  for (const bs of batches.values()) {
    for (const b of bs) {
      for (const t of [b.maxTimestamp, b.records[0] ? BigInt(b.records[0].timestamp) : -1n])
        if (t >= 0n) for (const d of [-1n, 0n, 1n]) stamps.add(t + d);
    }
  }
  const firstAtOrAfter = (target: bigint) => all.find((r) => BigInt(r.timestamp) >= target)?.offset;
  for (const target of [...stamps].sort((a, b) => (a < b ? -1 : 1))) {
    const truth = firstAtOrAfter(target);
    let answer: string | undefined;
    const seg = segments.find((s) => largestTimestamp(s) >= target);
    if (seg) {
      const bs = batches.get(seg)!;
      const timeOffset = timeIndexLookup(seg.timeindex, seg.baseOffset, target);
      const { position } = offsetIndexLookup(seg.index, seg.baseOffset, timeOffset);
      for (const b of bs) {
        if (b.position < position || b.maxTimestamp < target) continue;
        answer = b.records.find((r) => BigInt(r.timestamp) >= target)?.offset;
        if (answer !== undefined) break;
      }
    }
    if (answer !== truth) {
      problems.push(
        `offsetsForTimes(${target}) answers ${answer ?? 'none'}, the log holds ${truth ?? 'none'}`,
      );
      if (problems.length > 5) return problems;
    }
  }
  return problems;
}
