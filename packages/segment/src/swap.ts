/**
 * Crash-safe replacement of a segment in place, compatible with Kafka's own swap completion
 * (LogLoader: for each `<base>.log.swap` it deletes every non-swap file whose name starts with an
 * offset in [base, nextOffset of the swap segment), then renames every `*.swap` file, ref §6.6).
 *
 * Order (each arrow is one rename, followed by an fsync of the directory):
 *  0. `<base>.{log,index,timeindex}.seglift-tmp` are written, fsynced, given the original .log
 *     mtime, and verified from disk. Kafka ignores these names. Crash -> tmp files are deleted.
 *  1. optional backup copies (fsynced) in backupDir/<partition dir>/.
 *  2. marker `<base>.seglift-swap` (JSON, fsynced): "these tmp/swap files are verified and ours".
 *     Crash from here until step 4 -> recoverLeftovers rolls back (deletes tmp, swap copies, marker).
 *  3. `.txnindex`/`.snapshot` (when present) are copied to `<name>.swap`: Kafka's completion
 *     deletes every `<base>.*` file, so without these copies a broker completing our swap would
 *     drop the aborted-transaction index. Alone (no .log.swap) the broker renames them onto
 *     identical originals: harmless.
 *  4. log tmp -> `.log.swap` FIRST, then timeindex tmp -> `.timeindex.swap`, index tmp ->
 *     `.index.swap`. An `.index.swap` must never exist without `.log.swap` (the broker would put a
 *     new index beside the old log). The reverse window is safe: a broker that finds `.log.swap`
 *     without `.index.swap` creates an empty (zero-filled) index.swap, whose entries all point at
 *     position 0 (slow lookups, right answers), and a missing timeindex is recreated empty (retention
 *     then uses the mtime, already restored in step 0). Crash from here -> roll forward.
 *  5. `.log.swap` -> `.log` FIRST: once it is renamed no `.log.swap` remains, so a broker only renames
 *     the leftover swaps and deletes nothing. (Renaming an index first would let a broker's
 *     completion delete the already-renamed files, e.g. the txnindex.) Then timeindex, index, copies.
 *  6. mtime restored again on .log/.index/.timeindex, marker removed.
 * recoverLeftovers (leftovers.ts) decides from what is on disk: marker + `.log.seglift-tmp` ->
 * roll back; marker + `.log.swap` -> complete; marker and neither -> finish the remaining renames.
 */
import { mkdir, readFile, stat, utimes } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { SegmentIoError } from './errors.js';
import {
  copyFileSynced,
  exists,
  fsyncDir,
  removeIfExists,
  renameSynced,
  sameContent,
  writeFileSynced,
} from './fs-util.js';
import { MARKER_SUFFIX, type SegmentPaths, SWAP_SUFFIX, TMP_SUFFIX } from './names.js';

export type SwapStep = 'marker' | 'extras' | 'log-swap' | 'index-swaps' | 'log-renamed' | 'renamed';

/** Thrown by the crash test hook: the caller must leave every file exactly as it is. */
export class SimulatedCrash extends Error {
  constructor(readonly step: string) {
    super(`simulated crash after ${step}`);
    this.name = 'SimulatedCrash';
  }
}

export interface SwapMarker {
  tool: 'seglift';
  version: 1;
  prefix: string;
  pid: number;
  host: string;
  createdAt: string;
  mtimeMs: number;
  sizes: { log: number; index: number; timeindex: number };
  extras: string[];
}

export const REWRITTEN = ['.log', '.index', '.timeindex'] as const;
/** Files we never rewrite but copy to `.swap` so a broker completing our swap keeps them. */
export const KEPT = ['.txnindex', '.snapshot'] as const;

export function markerPath(p: SegmentPaths): string {
  return path.join(p.dir, `${p.prefix}${MARKER_SUFFIX}`);
}

export function tmpPath(p: SegmentPaths, suffix: string): string {
  return path.join(p.dir, `${p.prefix}${suffix}${TMP_SUFFIX}`);
}

export function swapPath(p: SegmentPaths, suffix: string): string {
  return path.join(p.dir, `${p.prefix}${suffix}${SWAP_SUFFIX}`);
}

export function finalPath(p: SegmentPaths, suffix: string): string {
  return path.join(p.dir, `${p.prefix}${suffix}`);
}

export async function setMtime(files: string[], mtimeMs: number): Promise<void> {
  const t = new Date(mtimeMs);
  for (const f of files) if (await exists(f)) await utimes(f, t, t);
}

export async function backupOriginals(
  p: SegmentPaths,
  backupDir: string,
  mtimeMs: number,
): Promise<string[]> {
  const dest = path.join(backupDir, path.basename(p.dir));
  await mkdir(dest, { recursive: true });
  const copies: { src: string; to: string; suffix: string }[] = [];
  const kept: string[] = [];
  // A backup already there is either this original (a rerun after a crash: keep it) or something
  // else under the same name (a segment converted before, the same partition name in another log
  // dir): never overwrite it, it may be the only copy of the true original.
  for (const suffix of REWRITTEN) {
    const src = finalPath(p, suffix);
    if (!(await exists(src))) continue;
    const to = path.join(dest, `${p.prefix}${suffix}`);
    if (await exists(to)) {
      if (await sameContent(src, to)) {
        kept.push(to);
        continue;
      }
      throw new SegmentIoError(
        `backup ${to} already exists and differs from ${src}; refusing to overwrite it (move it away or use another --backup-dir)`,
        { file: to },
      );
    }
    copies.push({ src, to, suffix });
  }
  const written: string[] = [];
  try {
    for (const { src, to, suffix } of copies) {
      // Copied under a temporary name and renamed: a truncated copy (disk full, crash) never
      // sits under the original's name where it would pass for a backup.
      const partial = `${to}${TMP_SUFFIX}`;
      await copyFileSynced(src, partial);
      const st = await stat(src);
      await utimes(partial, st.atime, suffix === '.log' ? new Date(mtimeMs) : st.mtime);
      written.push(to);
      await renameSynced(partial, to);
    }
    await fsyncDir(dest);
    await fsyncDir(backupDir);
  } catch (err) {
    for (const { to } of copies) await removeIfExists(`${to}${TMP_SUFFIX}`).catch(() => {});
    for (const f of written) await removeIfExists(f).catch(() => {});
    throw err;
  }
  return [...kept, ...written];
}

export interface SwapOptions {
  mtimeMs: number;
  crashAfter?: SwapStep;
}

/** Steps 2-6 above; the tmp files exist and are verified. */
export async function swapInPlace(p: SegmentPaths, opts: SwapOptions): Promise<void> {
  const crash = (step: SwapStep) => {
    if (opts.crashAfter === step) throw new SimulatedCrash(step);
  };
  const sizes = {
    log: (await stat(tmpPath(p, '.log'))).size,
    index: (await stat(tmpPath(p, '.index'))).size,
    timeindex: (await stat(tmpPath(p, '.timeindex'))).size,
  };
  const extras: string[] = [];
  for (const suffix of KEPT) if (await exists(finalPath(p, suffix))) extras.push(suffix);
  const marker: SwapMarker = {
    tool: 'seglift',
    version: 1,
    prefix: p.prefix,
    pid: process.pid,
    host: os.hostname(),
    createdAt: new Date().toISOString(),
    mtimeMs: opts.mtimeMs,
    sizes,
    extras,
  };
  await writeFileSynced(markerPath(p), JSON.stringify(marker));
  await fsyncDir(p.dir);
  crash('marker');

  for (const suffix of extras) {
    await copyFileSynced(finalPath(p, suffix), tmpPath(p, suffix));
    await renameSynced(tmpPath(p, suffix), swapPath(p, suffix));
  }
  await fsyncDir(p.dir);
  crash('extras');

  await renameSynced(tmpPath(p, '.log'), swapPath(p, '.log'));
  await fsyncDir(p.dir);
  crash('log-swap');
  await renameSynced(tmpPath(p, '.timeindex'), swapPath(p, '.timeindex'));
  await renameSynced(tmpPath(p, '.index'), swapPath(p, '.index'));
  await fsyncDir(p.dir);
  crash('index-swaps');

  await completeSwap(p, marker, crash);
}

/** Step 5-6: `.log.swap` first, then every other swap of ours, then mtime and marker. */
export async function completeSwap(
  p: SegmentPaths,
  marker: SwapMarker,
  crash: (s: SwapStep) => void = () => {},
) {
  if (await exists(swapPath(p, '.log'))) {
    await renameSynced(swapPath(p, '.log'), finalPath(p, '.log'));
    await fsyncDir(p.dir);
  }
  crash('log-renamed');
  for (const suffix of ['.timeindex', '.index', ...marker.extras]) {
    if (await exists(swapPath(p, suffix))) {
      await renameSynced(swapPath(p, suffix), finalPath(p, suffix));
    } else if (suffix !== '.txnindex' && suffix !== '.snapshot' && (await exists(tmpPath(p, suffix)))) {
      // Verified (the marker says so) but not yet renamed to .swap when the crash came.
      await renameSynced(tmpPath(p, suffix), finalPath(p, suffix));
    }
  }
  await fsyncDir(p.dir);
  crash('renamed');
  await setMtime(
    REWRITTEN.map((s) => finalPath(p, s)),
    marker.mtimeMs,
  );
  for (const suffix of KEPT) await removeIfExists(tmpPath(p, suffix));
  await removeIfExists(markerPath(p));
  await fsyncDir(p.dir);
}

export async function readMarker(p: SegmentPaths): Promise<SwapMarker | undefined> {
  try {
    const m = JSON.parse(await readFile(markerPath(p), 'utf8')) as SwapMarker;
    if (m.tool !== 'seglift' || m.version !== 1 || m.prefix !== p.prefix) return undefined;
    return m;
  } catch {
    return undefined;
  }
}

export function assertSizes(p: SegmentPaths, marker: SwapMarker, actual: { log?: number }): void {
  if (actual.log !== undefined && actual.log !== marker.sizes.log) {
    throw new SegmentIoError(
      `swap file size ${actual.log} differs from the verified size ${marker.sizes.log}; left for an operator`,
      { file: swapPath(p, '.log') },
    );
  }
}
