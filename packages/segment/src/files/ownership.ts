/**
 * Rewritten files keep their original's owner, group and mode. A broker opens every segment's
 * log and index files read-write as its own user: a segment rewritten by root into root-owned
 * 0644 files takes the whole log directory offline at the next start.
 */
import { readFileSync } from 'node:fs';
import { OwnershipError } from './errors.js';
import { statNow } from './fs-util.js';
import { chmod, chown } from './fsops.js';

export interface Ownership {
  uid: number;
  gid: number;
  /** Permission bits only (mode & 0o7777). */
  mode: number;
}

export async function ownershipOf(file: string): Promise<Ownership> {
  // Synchronous: a metadata read (fs-util.ts).
  const st = statNow(file);
  return { uid: st.uid, gid: st.gid, mode: st.mode & 0o7777 };
}

/** Whether this process may give a file `o`'s owner and group (chown(2)'s rules). */
export function canGiveOwnership(o: Ownership): boolean {
  if (typeof process.getuid !== 'function') return true; // not POSIX: nothing to keep
  const uid = process.getuid();
  if (uid === 0) return true;
  if (o.uid !== uid) return false;
  return o.gid === process.getgid?.() || (process.getgroups?.() ?? []).includes(o.gid);
}

function userName(uid: number): string {
  try {
    for (const line of readFileSync('/etc/passwd', 'utf8').split('\n')) {
      const f = line.split(':');
      if (f.length > 2 && Number(f[2]) === uid) return `${f[0]} (uid ${uid})`;
    }
  } catch {}
  return `uid ${uid}`;
}

/**
 * Refuses, before any work, a file whose owner this process could not give to the rewritten
 * files: the message says which user to run as.
 */
export function assertCanKeepOwnership(o: Ownership, file: string): void {
  if (canGiveOwnership(o)) return;
  throw new OwnershipError(
    `owned by ${userName(o.uid)}, group ${o.gid}; seglift runs as ${currentUser()} and could not give the rewritten files that owner: ${runAs(o.uid)}`,
    { file },
  );
}

/**
 * A log dir whose `.lock` this user may not open for writing (nor create): a broker's user could,
 * so the message names the log dir's owner to run as (one wording with the rule above).
 */
export function logDirLockDenied(
  logDir: string,
  lockPath: string,
  cause: NodeJS.ErrnoException,
): OwnershipError {
  let owner: number | undefined;
  try {
    owner = statNow(logDir).uid;
  } catch {}
  const whose = owner === undefined ? '' : `, owned by ${userName(owner)}`;
  return new OwnershipError(
    `cannot take the log dir's lock (${cause.code}): log dir ${logDir}${whose}; seglift runs as ${currentUser()}: ${owner === undefined ? "run it as the broker's user or as root" : runAs(owner)}`,
    { file: lockPath },
  );
}

function currentUser(): string {
  return typeof process.getuid === 'function' ? userName(process.getuid()) : 'this user';
}

/** Whom to run as for files of `uid`: their owner, the broker's user, or root (root needs no "or as root"). */
export function runAs(uid: number): string {
  return uid === 0 ? `run it as ${userName(0)}` : `run it as the broker's user, ${userName(uid)}, or as root`;
}

/** Gives `file` owner, group and mode `o`; with `bestEffort`, an owner it may not give is skipped. */
export async function applyOwnership(file: string, o: Ownership, bestEffort = false): Promise<void> {
  if (typeof process.getuid === 'function') {
    const st = statNow(file);
    if (st.uid !== o.uid || st.gid !== o.gid) {
      if (canGiveOwnership(o)) await chown(file, o.uid, o.gid);
      else if (!bestEffort) assertCanKeepOwnership(o, file);
    }
    if ((st.mode & 0o7777) === o.mode) return;
  }
  await chmod(file, o.mode);
}
