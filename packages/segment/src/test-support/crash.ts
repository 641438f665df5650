/**
 * Crash simulation for tests: run some conversions and "kill the process" right after its Nth
 * filesystem change (seams.ts), then look at the directory as a broker or a rerun would.
 */
import { readdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { crashFsOps, type FsOp, observeFsOps, SimulatedCrash } from './seams.js';

export interface CrashRun {
  /** Whether the crash happened (false: the work finished in fewer operations). */
  crashed: boolean;
  /** Every filesystem change made, in order, up to and including the Nth. */
  ops: FsOp[];
  /** What each task of `work` resolved to (undefined: it rejected with the crash). */
  results: unknown[];
}

/** `n`: right after the nth change; a function: right after the first change it picks. */
export type CrashPoint = number | ((op: FsOp, ops: FsOp[]) => boolean);

/**
 * Runs `work` and crashes it right after the chosen filesystem change (0: never): from that
 * instant every task of `work` stops at its next change, as a dead process would. Resolves once
 * every task has settled.
 */
export async function crashAfterOp<T>(
  at: CrashPoint,
  work: () => Promise<T>[],
): Promise<CrashRun & { results: (T | undefined)[] }> {
  const ops: FsOp[] = [];
  let crashed = false;
  const stop = observeFsOps((op) => {
    if (crashed) return;
    ops.push(op);
    if (typeof at === 'number' ? ops.length === at : at(op, ops)) {
      crashed = true;
      const crash = new SimulatedCrash(`op ${ops.length}: ${op.kind} ${path.basename(op.path)}`);
      crashFsOps(crash);
      throw crash;
    }
  });
  let results: (T | undefined)[];
  try {
    const settled = await Promise.allSettled(work());
    for (const r of settled) {
      if (r.status === 'rejected' && !causedByCrash(r.reason)) throw r.reason;
    }
    results = settled.map((r) => (r.status === 'fulfilled' ? r.value : undefined));
  } finally {
    stop();
    crashFsOps(undefined);
  }
  return { crashed, ops, results };
}

/** The simulated crash, or an error made of it (a rename's SegmentIoError has it as its cause). */
function causedByCrash(err: unknown): boolean {
  for (let e = err; e instanceof Error; e = e.cause) if (e instanceof SimulatedCrash) return true;
  return false;
}

/** The kind and name of a change without its directory and offset: `rename .log.swap`. */
export function stepOf(op: FsOp): string {
  return `${op.kind} ${path.basename(op.path).replace(/^\d{20}/, '')}`;
}

/**
 * The crashed process is gone: its lock files (which name this test process, alive) are given a
 * pid that cannot be running, as a lock of a dead process on this host.
 */
export async function killLocks(dir: string): Promise<void> {
  const dead = 2 ** 22 + 4321;
  for (const n of await readdir(dir)) {
    if (!n.includes('.lock')) continue;
    const p = path.join(dir, n);
    // A pending lock left half written names its writer: that writer is the dead one.
    const renamed = n.replace(`.${process.pid}.`, `.${dead}.`);
    if (renamed !== n) await rename(p, path.join(dir, renamed));
    try {
      const info = JSON.parse(await readFile(path.join(dir, renamed), 'utf8'));
      info.pid = dead;
      await writeFile(path.join(dir, renamed), JSON.stringify(info));
    } catch {}
  }
}
