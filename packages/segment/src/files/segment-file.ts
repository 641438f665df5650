import type { Stats } from 'node:fs';
import { realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { NotASegmentError, toSegmentError } from './errors.js';
import { exists, lstatNow } from './fs-util.js';
import {
  BACKUP_DIR_MARKER,
  METADATA_TOPIC,
  parsePartitionDirName,
  REWRITTEN,
  SegmentFiles,
  STAGE_DIR_MARKER,
} from './names.js';

export interface SegmentOnDisk {
  files: SegmentFiles;
  size: number;
  mtimeMs: number;
}

/** What a non-regular file is, for the message that refuses it. */
export function kindOf(st: Stats): string {
  if (st.isDirectory()) return 'a directory';
  if (st.isFIFO()) return 'a FIFO';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isSocket()) return 'a socket';
  if (st.isSymbolicLink()) return 'a symbolic link';
  return 'not a file';
}

/**
 * Refuses anything but a regular file before it is opened: a FIFO would block the open (and
 * every read after it) forever, a device (/dev/zero) reads as an empty or endless log.
 */
export function assertRegularFile(st: Stats, file: string): void {
  if (!st.isFile()) throw new NotASegmentError(`not a regular file (${kindOf(st)})`, { file });
}

/**
 * `file` followed to what it names (inspect reads a symlinked segment as kafka-dump-log would),
 * refused unless that is a regular file. Node's own error when there is nothing to stat.
 */
export async function statRegularFile(file: string): Promise<Stats> {
  const st = await stat(file);
  assertRegularFile(st, file);
  return st;
}

/**
 * The `.log` itself, never followed: Kafka never writes a symlinked segment, and a swap renames
 * over the link (the target keeps the old bytes, the partition gets a plain file), so one is
 * refused by name; anything else that is not a regular file too (a FIFO would hang the reader).
 */
export async function statSegmentLog(logPath: string): Promise<Stats> {
  let st: Stats;
  try {
    // Synchronous: a metadata read (fs-util.ts).
    st = lstatNow(logPath);
  } catch (err) {
    throw toSegmentError(err, logPath);
  }
  if (st.isSymbolicLink()) {
    const target = await realpath(logPath).catch(() => '(a dangling link)');
    throw new NotASegmentError(
      `not a regular file: a symbolic link to ${target}: Kafka never writes one and a rewrite would replace the link, not its target; name the target itself, or replace the link with the file`,
      { file: logPath },
    );
  }
  assertRegularFile(st, logPath);
  return st;
}

/**
 * The seglift directory (a backup dir marked `.seglift-backup`, a stage dir marked
 * `.seglift-stage`) that `dir` lies in, walking up its real path to the filesystem root; or
 * undefined. Their files are rollback copies and staged results: never a conversion target.
 */
export async function markedDirAbove(dir: string): Promise<{ dir: string; marker: string } | undefined> {
  let d = await realpath(dir).catch(() => path.resolve(dir));
  for (;;) {
    for (const marker of [BACKUP_DIR_MARKER, STAGE_DIR_MARKER])
      if (await exists(path.join(d, marker))) return { dir: d, marker };
    const parent = path.dirname(d);
    if (parent === d) return undefined;
    d = parent;
  }
}

/** Refuses a path inside a marked backup or stage dir (see markedDirAbove). */
export async function assertNotInMarkedDir(dir: string, file: string, what: string): Promise<void> {
  const found = await markedDirAbove(dir);
  if (found === undefined) return;
  const kind = found.marker === BACKUP_DIR_MARKER ? 'backup' : 'stage';
  throw new NotASegmentError(
    `${what} lies inside the seglift ${kind} dir ${found.dir} (marked ${found.marker}): its files are ${kind === 'backup' ? 'the rollback copies of originals' : 'staged results of a two-phase migration'}, never rewritten`,
    { file },
  );
}

/**
 * How a caller uses the segment: `read` (inspect, verify, audit, convert --out: a symlink is
 * followed, as Kafka's LogLoader follows one; nothing of it is replaced) or `in-place` (a swap in
 * its partition, or a prepare whose commit swaps).
 */
export type SegmentUse = 'read' | 'in-place';

/**
 * `logPath` as a Kafka log segment, or the typed error an operator needs: a missing file is an
 * I/O error, a directory, an index or any other name is not a segment, and a segment of the KRaft
 * metadata log is never rewritten (Kafka reads it through the raft layer, whose RecordsIterator
 * refuses a record larger than its batch's stored size: a well-compressed batch would stop the
 * node from starting). Anything but a regular file is refused; a symlinked `.log` too when it is
 * rewritten in place (statSegmentLog); and a segment inside a seglift backup or stage dir is
 * never rewritten in place (nor prepared), whatever the front door.
 */
export async function requireSegment(logPath: string, use: SegmentUse = 'read'): Promise<SegmentOnDisk> {
  const files = SegmentFiles.ofLog(logPath);
  if (files === undefined) {
    throw new NotASegmentError(
      `not a log segment: Kafka names segments <20-digit base offset>.log (an .index, .timeindex or other file cannot be read as one)`,
      { file: logPath },
    );
  }
  if (parsePartitionDirName(path.basename(files.dir))?.topic === METADATA_TOPIC) {
    throw new NotASegmentError(
      `a segment of ${METADATA_TOPIC}, the KRaft metadata log: seglift never rewrites it (Kafka loads it through the raft layer, not as a partition log)`,
      { file: logPath },
    );
  }
  let st: Stats;
  try {
    st = use === 'in-place' ? await statSegmentLog(files.log) : await statRegularFile(files.log);
  } catch (err) {
    throw toSegmentError(err, logPath);
  }
  // Read (into --out), a backup is only a source (restoring from it is a use); rewritten, never.
  if (use === 'in-place') await assertNotInMarkedDir(files.dir, logPath, 'the segment');
  return { files, size: st.size, mtimeMs: st.mtimeMs };
}

/**
 * Refuses to rewrite in place a segment whose files have another name (st_nlink > 1): the swap
 * renames new files over the names in the partition, so the other name would keep the old bytes
 * (a second copy of the data that a broker or an operator may take for the segment). seglift's
 * own links never count here: backups are copies, and a commit's links to staged files are only
 * on temp names until the swap (a stale stage link is discarded before this check).
 */
export async function assertSingleLink(files: SegmentFiles): Promise<void> {
  for (const suffix of REWRITTEN) {
    const f = files.file(suffix);
    let st: Stats | undefined;
    try {
      st = lstatNow(f);
    } catch {
      st = undefined;
    }
    if (st === undefined || st.nlink <= 1) continue;
    throw new NotASegmentError(
      `${f} has ${st.nlink} hard links: a rewrite in place would leave the other ${st.nlink === 2 ? 'name' : 'names'} on the old bytes; remove the other link, or convert a copy with --out`,
      { file: files.log },
    );
  }
}
