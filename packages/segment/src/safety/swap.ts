/**
 * Crash-safe replacement of a segment in place, designed around what a Kafka broker does when
 * it starts on a directory a crash left half done (LogLoader.load; docs/kafka-format.md, "Swap
 * completion at start-up"):
 *  a. `.swap` files at or above the lowest `.cleaned` file's offset are deleted (KAFKA-6264);
 *  b. every `<base>.log.swap` is opened as a segment (creating a zero-filled `<base>.index.swap`
 *     of segment.index.bytes when there is none) and ONE range is taken over all of them, from
 *     the lowest base offset to the highest next offset: every non-swap file whose name starts
 *     with an offset in that range is deleted;
 *  c. every `.swap` file is renamed to its final name;
 *  d. a segment whose `.index` is missing is recovered: its offset and time indexes are rebuilt
 *     from the log. Otherwise, after a clean shutdown, the index files are trusted as they are
 *     (a missing `.timeindex` becomes an empty one).
 * So two segments of one partition must never be mid-swap at once (the caller holds the
 * partition lock, lock.ts), and every state below must give right offset AND time lookups
 * whichever of (a)-(d) applies.
 *
 * Order (each step is followed by an fsync of the directory unless said otherwise; the files were
 * written, given the original's owner, mode and .log mtime, fsynced and verified from disk under
 * `.seglift-tmp` names, which Kafka ignores). Steps whose renames share one fsync are those where a
 * power loss may leave any subset of them on disk and every subset is still completed right:
 *  1. marker `<base>.seglift-swap`, written under a temp name and renamed: the commit point.
 *     From here on the rewrite is completed (rolled forward): the marker records the inode and
 *     size of each new file and the original log's identity, so recovery renames and deletes
 *     only files that are provably ours.
 *  2. `.txnindex`/`.snapshot` (when present) copied to `<name>.swap`: (b) deletes every `<base>.*`
 *     file; these copies keep them. Alone they are renamed onto identical originals.
 *  3. the OLD `.index` is deleted. Old log without an offset index: (d) rebuilds both indexes.
 *  4. new `.timeindex` -> `.timeindex.swap`. Alone it lands beside the old log, which (d) then
 *     recovers (the missing .index), resetting the time index too.
 *  5. new `.log` -> `.log.swap`. (b) makes a zero-filled index: every lookup starts at position 0
 *     (slow, right answers); the time index is ours, and its entries go through that offset
 *     index, so they are right too. (a) deletes our swaps: old log, recovered by (d).
 *  6. new `.index` -> `.index.swap`: the broker completes the new segment exactly.
 *  7. `.log.swap` -> `.log` FIRST: no `.log.swap` left, so no range is deleted any more.
 *     Steps 6 and 7 share one fsync: 7 on disk without 6 is the new log without an `.index`
 *     (the old one went in step 3) and the new index under its temp name, which Kafka ignores:
 *     (d) rebuilds both indexes, and our recovery renames the temp index in (step 8).
 *  8. `.timeindex.swap` -> `.timeindex`, then `.index.swap` -> `.index` (a `.cleaned` file
 *     deleting the index swap in between leaves no .index: (d) rebuilds), then the copies.
 *  9. marker removed, with no fsync of its own: every file is in place and durable; a marker a
 *     power loss brings back finds the new log in place and recovery only removes it again. The
 *     partition's next fsync (its next swap's commit point) makes the removal durable.
 * A `.index.swap` never exists without the `.log.swap` or the new `.log` beside it: alone it would
 * put new positions beside the old log. recoverLeftovers (leftovers.ts) completes any state from
 * step 1 on; before the marker it deletes the temp files.
 */
import os from 'node:os';
import path from 'node:path';
import { readBoundedText } from '../files/bounded-read.js';
import { SegmentIoError } from '../files/errors.js';
import { exists, sameContent, statNow, statOrUndefined } from '../files/fs-util.js';
import {
  copyFileSynced,
  fsyncDir,
  removeIfExists,
  rename as renameFile,
  setMtime,
  utimes,
  writeWholeFile,
} from '../files/fsops.js';
import {
  INDEX_SUFFIX,
  LOG_SUFFIX,
  MARKER_SUFFIX,
  REWRITTEN,
  type SegmentFiles,
  SNAPSHOT_SUFFIX,
  TIMEINDEX_SUFFIX,
  TXNINDEX_SUFFIX,
} from '../files/names.js';
import { applyOwnership, ownershipOf } from '../files/ownership.js';

/** Files we never rewrite but copy to `.swap` so a broker completing our swap keeps them. */
export const KEPT = [TXNINDEX_SUFFIX, SNAPSHOT_SUFFIX] as const;

/** A file's identity: the same inode and size means nobody replaced or rewrote it. */
export interface FileIdentity {
  ino: number;
  size: number;
  mtimeMs: number;
}

export interface SwapMarker {
  tool: 'seglift';
  version: 2;
  prefix: string;
  pid: number;
  host: string;
  createdAt: string;
  /** The original .log's mtime, given to the new files (retention falls back to it). */
  mtimeMs: number;
  /**
   * The same to the nanosecond, as a decimal string (JSON has no int64); absent in the markers of
   * older versions, whose recovery sets `mtimeMs`.
   */
  mtimeNs?: string;
  /** The original .log when the swap began: a swap still under temp names is rolled forward only while it is this file. */
  source: FileIdentity;
  /**
   * The verified new files by suffix (.log, .index, .timeindex): their inodes survive every
   * rename, so recovery tells our files from anybody else's under the same names.
   */
  rewritten: Record<string, { ino: number; size: number }>;
  /** KEPT suffixes that were present and are copied to `.swap` (ours while equal to the original). */
  extras: string[];
}

export async function identityOf(file: string): Promise<FileIdentity | undefined> {
  const st = statOrUndefined(file);
  return st && { ino: st.ino, size: st.size, mtimeMs: st.mtimeMs };
}

export function sameFile(
  a: { ino: number; size: number } | undefined,
  b: { ino: number; size: number },
): boolean {
  return a !== undefined && a.ino === b.ino && a.size === b.size;
}

/**
 * Called before the marker is written and before each rename: throws when this run no longer
 * owns the segment (its lock was taken over as stale while the process was frozen).
 */
export type StillOwned = () => Promise<void>;

const owned: StillOwned = async () => {};

/**
 * Steps 1-9 above. The caller holds the segment lock and the partition lock, and the new files
 * exist under their temp names, verified and fsynced.
 */
export async function swapInPlace(seg: SegmentFiles, mtimeNs: bigint, stillOwned = owned): Promise<void> {
  await stillOwned();
  const source = await identityOf(seg.log);
  if (!source) throw new SegmentIoError('the segment disappeared before its swap', { file: seg.log });
  const rewritten: SwapMarker['rewritten'] = {};
  for (const suffix of REWRITTEN) {
    const st = statNow(seg.tmp(suffix));
    rewritten[suffix] = { ino: st.ino, size: st.size };
  }
  const extras: string[] = [];
  for (const suffix of KEPT) if (await exists(seg.file(suffix))) extras.push(suffix);
  const marker: SwapMarker = {
    tool: 'seglift',
    version: 2,
    prefix: seg.prefix,
    pid: process.pid,
    host: os.hostname(),
    createdAt: new Date().toISOString(),
    mtimeMs: Number(mtimeNs / 1_000_000n),
    mtimeNs: String(mtimeNs),
    source,
    rewritten,
    extras,
  };
  const pending = seg.tmp(MARKER_SUFFIX);
  await writeWholeFile(pending, JSON.stringify(marker), { sync: true });
  await stillOwned();
  await renameFile(pending, seg.marker);
  await fsyncDir(seg.dir);
  await rollForward(seg, marker, stillOwned);
}

/** Where the new log is: still under its temp name, renamed to `.swap`, or in place. */
type NewLogState = 'tmp' | 'swap' | 'final' | 'gone';

async function newLogState(seg: SegmentFiles, marker: SwapMarker): Promise<NewLogState> {
  const ours = marker.rewritten[LOG_SUFFIX];
  if (sameFile(await identityOf(seg.tmp(LOG_SUFFIX)), ours)) return 'tmp';
  if (sameFile(await identityOf(seg.swap(LOG_SUFFIX)), ours)) return 'swap';
  if (sameFile(await identityOf(seg.log), ours)) return 'final';
  return 'gone';
}

/**
 * The files of this swap still on disk under a temp or `.swap` name that are provably ours: a
 * rewritten file with the inode and size the marker records, a copy of a kept file equal to
 * its original. Nothing else under these names is ever renamed or deleted by recovery (a
 * `.txnindex.swap` of Kafka's cleaner, say).
 */
export async function ownedLeftovers(seg: SegmentFiles, marker: SwapMarker): Promise<string[]> {
  const out: string[] = [];
  for (const suffix of REWRITTEN) {
    for (const f of [seg.tmp(suffix), seg.swap(suffix)])
      if (sameFile(await identityOf(f), marker.rewritten[suffix])) out.push(f);
  }
  for (const suffix of marker.extras) {
    if (await exists(seg.tmp(suffix))) out.push(seg.tmp(suffix)); // a temp name is never Kafka's
    const copy = seg.swap(suffix);
    if (
      (await exists(copy)) &&
      (await exists(seg.file(suffix))) &&
      (await sameContent(copy, seg.file(suffix)))
    )
      out.push(copy);
  }
  return out;
}

async function abandon(seg: SegmentFiles, marker: SwapMarker): Promise<'abandoned'> {
  for (const f of await ownedLeftovers(seg, marker)) await removeIfExists(f);
  await removeIfExists(seg.marker);
  await fsyncDir(seg.dir);
  return 'abandoned';
}

/**
 * Completes the swap from whatever step a crash stopped it at (steps 2-9). Before step 5 the
 * original log is still in place: when it changed meanwhile (a broker started and its cleaner
 * rewrote the segment) or a verified file went missing, the swap is abandoned instead: our files
 * are removed and the segment is as the broker left it (without an .index after step 3, which
 * the broker rebuilds). The caller holds the partition lock.
 */
export async function rollForward(
  seg: SegmentFiles,
  marker: SwapMarker,
  stillOwned = owned,
): Promise<'completed' | 'abandoned'> {
  // Every rename (and the old index's removal) re-checks the locks first: see StillOwned.
  const rename = async (from: string, to: string) => {
    await stillOwned();
    await renameFile(from, to);
  };
  await stillOwned();
  await assertSizesAsVerified(seg, marker);
  const state = await newLogState(seg, marker);
  if (state === 'gone') {
    // Our log is nowhere: a broker completed the swap and rewrote the segment since, or someone
    // moved files. Only our own leftovers go; a .swap file of anybody else stays and is reported.
    return abandon(seg, marker);
  }
  if (state === 'tmp' && (await fromTempNames(seg, marker, rename, stillOwned)) === 'abandoned')
    return 'abandoned';
  if (state === 'tmp' || state === 'swap') {
    // 6. offset index (missing only if someone removed it: then the broker rebuilds it)
    if (sameFile(await identityOf(seg.tmp(INDEX_SUFFIX)), marker.rewritten[INDEX_SUFFIX]))
      await rename(seg.tmp(INDEX_SUFFIX), seg.swap(INDEX_SUFFIX));
    // 7. the log in place: from here no .log.swap, nothing deleted by a broker's completion.
    // One fsync for 6 and 7: either one alone on disk is completed right (header).
    await rename(seg.swap(LOG_SUFFIX), seg.log);
    await fsyncDir(seg.dir);
  }
  await renameTheRest(seg, marker, rename);
  await restoreMtime(seg, marker);
  // 9. No fsync: a marker back after a power loss is only removed again (header).
  await removeIfExists(seg.marker);
  return 'completed';
}

/**
 * One of our temp or swap files with another size than verified: something wrote to it since.
 * Guessing could serve a damaged segment; everything stays as it is for an operator. (Under its
 * final name it is the broker's to append to: a broker started since owns it.)
 */
async function assertSizesAsVerified(seg: SegmentFiles, marker: SwapMarker): Promise<void> {
  for (const suffix of REWRITTEN) {
    const ours = marker.rewritten[suffix];
    for (const f of [seg.tmp(suffix), seg.swap(suffix)]) {
      const id = await identityOf(f);
      if (id && id.ino === ours.ino && id.size !== ours.size) {
        throw new SegmentIoError(
          `${path.basename(f)} of an interrupted swap has ${id.size} bytes where ${ours.size} were verified; everything is left as it is for an operator (compare with the backup, or delete the seglift files of this segment and convert it again)`,
          { file: f },
        );
      }
    }
  }
}

/**
 * Steps 2-5, the new log still under its temp name: abandoned instead when the original changed
 * meanwhile, a verified index went missing, or a `.swap` copy under our name is not ours.
 */
async function fromTempNames(
  seg: SegmentFiles,
  marker: SwapMarker,
  rename: (from: string, to: string) => Promise<void>,
  stillOwned: StillOwned,
): Promise<'abandoned' | undefined> {
  const indexesIntact =
    sameFile(await identityOf(seg.tmp(INDEX_SUFFIX)), marker.rewritten[INDEX_SUFFIX]) &&
    (sameFile(await identityOf(seg.tmp(TIMEINDEX_SUFFIX)), marker.rewritten[TIMEINDEX_SUFFIX]) ||
      sameFile(await identityOf(seg.swap(TIMEINDEX_SUFFIX)), marker.rewritten[TIMEINDEX_SUFFIX]));
  // A .swap under one of our names that is not our copy: somebody else's (a broker started
  // since and its cleaner left it). Never overwritten; the swap is given up.
  let foreignCopy = false;
  for (const suffix of marker.extras) {
    const copy = seg.swap(suffix);
    if ((await exists(copy)) && !(await sameContent(copy, seg.file(suffix)))) foreignCopy = true;
  }
  if (!indexesIntact || foreignCopy || !sameFile(await identityOf(seg.log), marker.source))
    return abandon(seg, marker);
  // 2. copies of the files we keep (a partial copy from the crash is redone).
  for (const suffix of marker.extras) {
    await removeIfExists(seg.tmp(suffix));
    if (await exists(seg.swap(suffix))) continue;
    const owner = await ownershipOf(seg.file(suffix));
    await copyFileSynced(seg.file(suffix), seg.tmp(suffix), owner.mode, {
      finish: (f) => applyOwnership(f, owner),
    });
    await rename(seg.tmp(suffix), seg.swap(suffix));
  }
  // (Nothing copied: nothing changed in the directory since the commit point's fsync.)
  if (marker.extras.length > 0) await fsyncDir(seg.dir);
  // 3. the old offset index
  await stillOwned();
  if (await removeIfExists(seg.index)) await fsyncDir(seg.dir);
  // 4. time index
  if (await exists(seg.tmp(TIMEINDEX_SUFFIX))) {
    await rename(seg.tmp(TIMEINDEX_SUFFIX), seg.swap(TIMEINDEX_SUFFIX));
    await fsyncDir(seg.dir);
  }
  // 5. log
  await rename(seg.tmp(LOG_SUFFIX), seg.swap(LOG_SUFFIX));
  await fsyncDir(seg.dir);
  return undefined;
}

async function renameTheRest(
  seg: SegmentFiles,
  marker: SwapMarker,
  rename: (from: string, to: string) => Promise<void>,
): Promise<void> {
  // 8. the rest, time index before offset index, then the copies; only files provably ours.
  const owned = new Set(await ownedLeftovers(seg, marker));
  for (const suffix of [TIMEINDEX_SUFFIX, INDEX_SUFFIX, ...marker.extras]) {
    for (const f of [seg.swap(suffix), seg.tmp(suffix)]) {
      if (!owned.has(f)) continue;
      if (KEPT.includes(suffix as (typeof KEPT)[number]) && f === seg.tmp(suffix)) await removeIfExists(f);
      else await rename(f, seg.file(suffix));
    }
  }
  await fsyncDir(seg.dir);
}

/**
 * 9. the mtime (renames keep it; set again in case a crash came between: only where it differs,
 * which after an uninterrupted swap is nowhere); then the marker goes.
 */
async function restoreMtime(seg: SegmentFiles, marker: SwapMarker): Promise<void> {
  const ns = /^\d+$/.test(marker.mtimeNs ?? '') ? BigInt(marker.mtimeNs!) : undefined;
  const t = new Date(marker.mtimeMs);
  for (const s of REWRITTEN) {
    const st = statOrUndefined(seg.file(s), { bigint: true });
    if (st === undefined || !sameFile({ ino: Number(st.ino), size: Number(st.size) }, marker.rewritten[s]))
      continue;
    if (ns !== undefined) {
      if (st.mtimeNs !== ns) await setMtime(seg.file(s), ns);
    } else if (Number(st.mtimeMs) !== marker.mtimeMs) await utimes(seg.file(s), t, t);
  }
}

/**
 * The largest swap marker read: a few hundred bytes of JSON plus the names of the segment's extra
 * files; 1 MiB is far above any. A FIFO, a device or a larger file is not a marker (unreadable).
 */
const MAX_MARKER_BYTES = 1024 * 1024;

/** The marker of `seg`, or undefined when absent, unreadable or not ours. */
export async function readMarker(seg: SegmentFiles): Promise<SwapMarker | undefined> {
  let m: SwapMarker;
  try {
    m = JSON.parse(await readBoundedText(seg.marker, MAX_MARKER_BYTES, 'swap marker')) as SwapMarker;
  } catch {
    return undefined;
  }
  if (
    m?.tool !== 'seglift' ||
    m.version !== 2 ||
    m.prefix !== seg.prefix ||
    !Array.isArray(m.extras) ||
    REWRITTEN.some((s) => typeof m.rewritten?.[s]?.ino !== 'number')
  )
    return undefined;
  return m;
}
