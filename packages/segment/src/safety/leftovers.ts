import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { KafkaLeftoversError, LockedError } from '../files/errors.js';
import { fsyncDir, removeIfExists } from '../files/fsops.js';
import {
  CLEANED_SUFFIX,
  LOCK_SUFFIX,
  MARKER_SUFFIX,
  offsetOfFileName,
  PARTITION_LOCK_NAME,
  SegmentFiles,
  SWAP_SUFFIX,
  TMP_SUFFIX,
} from '../files/names.js';
import {
  acquirePartitionLock,
  type FileLock,
  isStaleLock,
  isStaleLockTemp,
  lockPathFor,
  partitionLockPath,
  readLock,
} from './lock.js';
import { ownedLeftovers, readMarker, rollForward } from './swap.js';

export interface LeftoverReport {
  dir: string;
  /** Files deleted (temp files of unfinished rewrites and of dead lock takers, stale markers). */
  removed: string[];
  /** Segments (20-digit prefixes) whose verified swap was completed. */
  completed: string[];
  /** Segments whose swap was given up because the segment changed under it (see rollForward). */
  abandoned: string[];
  /** `.swap` files that are not provably ours: Kafka's (cleaner/split); the broker completes them. */
  foreignSwaps: string[];
  /** Kafka's `.cleaned` files: a cleaner interrupted by a shutdown (KAFKA-6264 rule at start-up). */
  cleaned: string[];
  /** Prefixes skipped because a live process holds their lock. */
  locked: string[];
}

export interface RecoverLeftoversOptions {
  /** Only this segment. */
  baseOffset?: bigint;
  /** The caller's own segment lock token: its segment is recovered even though it is locked. */
  ownLockToken?: string;
  /** The caller already holds the partition lock. */
  partitionLockHeld?: boolean;
  signal?: AbortSignal;
}

/**
 * Cleans up after a crash of convertSegment (see the protocol in swap.ts). Per segment:
 * - no readable marker: our `*.seglift-tmp` files are unverified -> deleted;
 * - a marker: the rewrite was verified and its swap had begun -> completed (rollForward), under
 *   the partition lock, so that no two segments of the partition are ever mid-swap at once;
 * and it lists what it must not touch: Kafka's `.cleaned` and `.swap` files. Segments whose lock
 * is held by a live process are skipped.
 */
export async function recoverLeftovers(
  partitionDir: string,
  options: RecoverLeftoversOptions = {},
): Promise<LeftoverReport> {
  const names = await readdir(partitionDir);
  const hasMarker = names.some(
    (n) =>
      n.endsWith(MARKER_SUFFIX) &&
      (options.baseOffset === undefined || offsetOfFileName(n) === options.baseOffset),
  );
  let lock: FileLock | undefined;
  // A partition lock left by a dead run is taken over (and so removed) even with nothing to do.
  const staleLock =
    names.includes(PARTITION_LOCK_NAME) && isStaleLock(await readLock(partitionLockPath(partitionDir)));
  if ((hasMarker || staleLock) && !options.partitionLockHeld)
    lock = await acquirePartitionLock(partitionDir, options);
  try {
    return await recoverUnderLock(partitionDir, options);
  } finally {
    await lock?.release();
  }
}

async function recoverUnderLock(
  partitionDir: string,
  options: RecoverLeftoversOptions,
  /** The segment about to be swapped: its temp files are the new segment, not leftovers. */
  except?: bigint,
): Promise<LeftoverReport> {
  const report: LeftoverReport = {
    dir: partitionDir,
    removed: [],
    completed: [],
    abandoned: [],
    foreignSwaps: [],
    cleaned: [],
    locked: [],
  };
  const names = await readdir(partitionDir);
  let changed = false;
  const remove = async (name: string) => {
    if (await removeIfExists(path.join(partitionDir, name))) report.removed.push(name);
    changed = true;
  };
  // Temp files of the partition lock's takers: removed once their run is gone.
  for (const n of names) {
    if (n.startsWith(`${PARTITION_LOCK_NAME}.`) && (await isStaleLockTemp(path.join(partitionDir, n))))
      await remove(n);
  }
  const prefixes = new Set<bigint>();
  for (const name of names) {
    const base = offsetOfFileName(name);
    if (base === undefined || (options.baseOffset !== undefined && base !== options.baseOffset)) continue;
    if (base === except) continue;
    if (name.endsWith(TMP_SUFFIX) || name.endsWith(MARKER_SUFFIX)) prefixes.add(base);
  }
  for (const base of [...prefixes].sort((a, b) => (a < b ? -1 : 1))) {
    const seg = new SegmentFiles(partitionDir, base);
    const lock = await readLock(lockPathFor(seg.log));
    if (lock && lock.token !== options.ownLockToken && !isStaleLock(lock)) {
      report.locked.push(seg.prefix);
      continue;
    }
    // Temp files of acquireSegmentLock (pending and takeover locks) belong to whichever run wrote
    // them, possibly another one taking the lock right now: removed only once that run is gone.
    const lockTemps = names.filter((n) => n.startsWith(`${seg.prefix}${LOCK_SUFFIX}.`));
    for (const n of lockTemps) {
      if (await isStaleLockTemp(path.join(partitionDir, n))) await remove(n);
    }
    const marker = await readMarker(seg);
    if (marker === undefined) {
      for (const n of names) {
        if (!n.startsWith(`${seg.prefix}.`) || lockTemps.includes(n)) continue;
        if (n.endsWith(TMP_SUFFIX) || n.endsWith(MARKER_SUFFIX)) await remove(n);
      }
      continue;
    }
    changed = true;
    const outcome = await rollForward(seg, marker);
    (outcome === 'completed' ? report.completed : report.abandoned).push(seg.prefix);
  }
  const kafka = await kafkaLeftovers(partitionDir);
  report.foreignSwaps = kafka.foreignSwaps;
  report.cleaned = kafka.cleaned;
  if (changed) await fsyncDir(partitionDir);
  return report;
}

/**
 * Files of an unfinished Kafka operation in the partition: `.cleaned` files, and `.swap` files
 * that no seglift marker in the directory proves to be ours.
 */
export async function kafkaLeftovers(
  partitionDir: string,
): Promise<{ cleaned: string[]; foreignSwaps: string[] }> {
  const names = (await readdir(partitionDir)).sort();
  const ours = new Set<string>();
  for (const n of names) {
    if (!n.endsWith(MARKER_SUFFIX)) continue;
    const base = offsetOfFileName(n);
    if (base === undefined) continue;
    const seg = new SegmentFiles(partitionDir, base);
    const marker = await readMarker(seg);
    if (marker) for (const f of await ownedLeftovers(seg, marker)) ours.add(path.basename(f));
  }
  return {
    cleaned: names.filter((n) => n.endsWith(CLEANED_SUFFIX)),
    foreignSwaps: names.filter((n) => n.endsWith(SWAP_SUFFIX) && !ours.has(n)),
  };
}

/**
 * Under the partition lock, right before a swap: completes what earlier crashes left in the
 * partition, then refuses when anything remains that a broker's start-up would act on together
 * with our swap (Kafka's `.cleaned`/`.swap` files, another segment's unfinished swap).
 */
export async function preparePartitionForSwap(seg: SegmentFiles, ownLockToken?: string): Promise<void> {
  const report = await recoverUnderLock(seg.dir, { ownLockToken }, seg.baseOffset);
  if (report.cleaned.length > 0 || report.foreignSwaps.length > 0) {
    const files = [...report.cleaned, ...report.foreignSwaps].join(', ');
    throw new KafkaLeftoversError(
      `partition holds files of an interrupted Kafka operation (${files}): a broker completing them deletes segment files by offset range, so nothing is swapped in beside them; start the broker once and stop it cleanly to let it finish them, then run seglift again`,
      { file: seg.dir },
    );
  }
  const others = (await readdir(seg.dir)).filter(
    (n) => n.endsWith(MARKER_SUFFIX) && !n.startsWith(seg.prefix),
  );
  if (others.length > 0) {
    throw new LockedError(
      `another run's swap in this partition is unfinished (${others.join(', ')}); retry when it is done`,
      { file: seg.dir },
    );
  }
}

/**
 * Before converting in place, under the partition lock: completes what earlier crashes left in
 * the partition (this segment's too) and refuses, before any work, a partition a broker would
 * still have to complete. Without the lock, another run's swap in progress would look foreign.
 */
export async function preparePartitionForConversion(
  seg: SegmentFiles,
  ownLockToken: string | undefined,
  signal?: AbortSignal,
  /** The caller holds the partition lock (and keeps it). */
  partitionLockHeld = false,
): Promise<void> {
  const lock = partitionLockHeld ? undefined : await acquirePartitionLock(seg.dir, { signal });
  try {
    const report = await recoverUnderLock(seg.dir, { ownLockToken });
    if (report.cleaned.length > 0 || report.foreignSwaps.length > 0) {
      throw new KafkaLeftoversError(
        `partition holds files of an interrupted Kafka operation (${[...report.cleaned, ...report.foreignSwaps].join(', ')}); start the broker once and stop it cleanly to let it finish them, then run seglift again`,
        { file: seg.dir },
      );
    }
  } finally {
    await lock?.release();
  }
}
