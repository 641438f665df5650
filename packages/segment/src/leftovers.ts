import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { fsyncDir, removeIfExists } from './fs-util.js';
import { isStaleLock, lockPathFor, readLock } from './lock.js';
import {
  formatBaseOffset,
  LOCK_SUFFIX,
  MARKER_SUFFIX,
  SWAP_SUFFIX,
  segmentPaths,
  TMP_SUFFIX,
} from './names.js';
import { completeSwap, KEPT, markerPath, readMarker, swapPath, tmpPath } from './swap.js';

export interface LeftoverReport {
  dir: string;
  /** Files deleted (our temp files, our swap copies of a rolled-back swap, stale markers). */
  removed: string[];
  /** Segments (20-digit prefixes) whose verified swap was completed. */
  completed: string[];
  /** Segments whose unfinished, not yet swapped rewrite was rolled back. */
  rolledBack: string[];
  /** `.swap` files without our marker: Kafka's own (cleaner/split); the broker completes them. */
  foreignSwaps: string[];
  /** Prefixes skipped because a live process holds their lock. */
  locked: string[];
}

export interface RecoverLeftoversOptions {
  /** Only this segment. */
  baseOffset?: bigint;
  /** The caller's own lock token: its segment is recovered even though it is locked. */
  ownLockToken?: string;
}

const PREFIX_RE = /^(\d{20})\./;

/**
 * Cleans up after a crash of convertSegment (see the protocol in swap.ts). Per segment:
 * - no readable marker: our `*.seglift-tmp` files are unverified -> deleted; `.swap` files are left
 *   alone (without our marker they are Kafka's) and listed in `foreignSwaps`;
 * - marker and `<base>.log.seglift-tmp`: verified but not swapped -> rolled back (tmp files, the
 *   `.txnindex/.snapshot` swap copies and the marker deleted); the original is intact;
 * - marker and `<base>.log.swap`, or marker alone: the swap had started -> completed (renames, mtime).
 * Segments whose lock is held by a live process are skipped.
 */
export async function recoverLeftovers(
  partitionDir: string,
  options: RecoverLeftoversOptions = {},
): Promise<LeftoverReport> {
  const report: LeftoverReport = {
    dir: partitionDir,
    removed: [],
    completed: [],
    rolledBack: [],
    foreignSwaps: [],
    locked: [],
  };
  const names = await readdir(partitionDir);
  const only = options.baseOffset === undefined ? undefined : formatBaseOffset(options.baseOffset);
  const prefixes = new Set<string>();
  for (const name of names) {
    const m = PREFIX_RE.exec(name);
    if (!m || (only !== undefined && m[1] !== only)) continue;
    if (name.endsWith(TMP_SUFFIX) || name.endsWith(MARKER_SUFFIX) || name.endsWith(SWAP_SUFFIX))
      prefixes.add(m[1]);
  }
  let changed = false;
  for (const prefix of [...prefixes].sort()) {
    const p = segmentPaths(path.join(partitionDir, `${prefix}.log`));
    const lock = await readLock(lockPathFor(p.log));
    if (lock && lock.token !== options.ownLockToken && !isStaleLock(lock)) {
      report.locked.push(prefix);
      continue;
    }
    // Temp files of acquireSegmentLock (pending and takeover locks) belong to whichever run wrote
    // them, possibly another one taking the lock right now: removed only once that run is gone.
    const lockTemps = names.filter((n) => n.startsWith(`${prefix}${LOCK_SUFFIX}.`));
    for (const n of lockTemps) {
      if (isStaleLock(await readLock(path.join(partitionDir, n)))) {
        if (await removeIfExists(path.join(partitionDir, n))) report.removed.push(n);
        changed = true;
      }
    }
    const ours = names.filter((n) => n.startsWith(`${prefix}.`) && !lockTemps.includes(n));
    const marker = await readMarker(p);
    if (marker === undefined) {
      for (const n of ours) {
        if (n.endsWith(TMP_SUFFIX) || n.endsWith(MARKER_SUFFIX)) {
          if (await removeIfExists(path.join(partitionDir, n))) report.removed.push(n);
          changed = true;
        } else if (n.endsWith(SWAP_SUFFIX)) {
          report.foreignSwaps.push(n);
        }
      }
      continue;
    }
    changed = true;
    if (ours.includes(path.basename(tmpPath(p, '.log')))) {
      // Not swapped yet: the original is still complete; undo.
      for (const n of ours) {
        const full = path.join(partitionDir, n);
        const isOurCopy = KEPT.some((s) => full === swapPath(p, s));
        if (n.endsWith(TMP_SUFFIX) || isOurCopy) {
          if (await removeIfExists(full)) report.removed.push(n);
        }
      }
      await removeIfExists(markerPath(p));
      report.removed.push(path.basename(markerPath(p)));
      report.rolledBack.push(prefix);
      continue;
    }
    if (ours.includes(path.basename(swapPath(p, '.log')))) {
      const size = (await stat(swapPath(p, '.log'))).size;
      if (size !== marker.sizes.log) {
        // Should not happen; leave everything for an operator rather than guess.
        report.foreignSwaps.push(path.basename(swapPath(p, '.log')));
        continue;
      }
    }
    await completeSwap(p, marker);
    report.completed.push(prefix);
  }
  if (changed) await fsyncDir(partitionDir);
  return report;
}

/**
 * `.swap` files that are not ours: no seglift marker for their segment in the same listing (ours
 * always have one: the marker is written before the first .swap and removed after the last).
 */
export async function findForeignSwaps(partitionDir: string): Promise<string[]> {
  const names = await readdir(partitionDir);
  const markers = new Set(names.filter((n) => n.endsWith(MARKER_SUFFIX)).map((n) => n.slice(0, 20)));
  return names.filter((n) => n.endsWith(SWAP_SUFFIX) && !markers.has(n.slice(0, 20))).sort();
}
