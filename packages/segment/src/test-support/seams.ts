/**
 * The test seams of @seglift/segment, not part of its API (never built, see tsconfig.json): every
 * filesystem change of this thread observed, or crashed after, through the FsOps the production
 * code takes (files/fsops.ts), installed when this module is first imported. Child processes and
 * conversion threads get their faults from @seglift/testkit's fault-preload.mjs instead.
 */
import type { FileHandle } from 'node:fs/promises';
import { type FsOps, wrapFsOps } from '../files/fsops.js';

export type FsOpKind =
  | 'create'
  | 'write'
  | 'fsync'
  | 'fsync-dir'
  | 'rename'
  | 'unlink'
  | 'link'
  | 'utimes'
  | 'chown'
  | 'chmod'
  | 'mkdir'
  | 'rmdir';

export interface FsOp {
  kind: FsOpKind;
  /** The file changed (for rename and link: the new name). */
  path: string;
  /** rename and link: the old name. */
  from?: string;
}

export type FsObserver = (op: FsOp) => void;

/**
 * Thrown by a test that simulates a crash (an observer, or `crashFsOps`): nothing after it
 * changes a file, as in a dead process.
 */
export class SimulatedCrash extends Error {
  constructor(readonly at: string) {
    super(`simulated crash after ${at}`);
    this.name = 'SimulatedCrash';
  }
}

const observers = new Set<FsObserver>();
let crashed: SimulatedCrash | undefined;

/**
 * From now on every filesystem change of this thread, and every wait between two tries of one,
 * throws `crash` before it happens, as if the process had died (a crash stops all of its tasks,
 * not only the one that saw it). `undefined` lifts it.
 */
export function crashFsOps(crash: SimulatedCrash | undefined): void {
  crashed = crash;
}

/**
 * Calls `observer` after every filesystem change of this thread, in order. It may throw (a test
 * simulating a crash throws SimulatedCrash): the change has happened, nothing after it runs.
 * Returns the function that removes the observer.
 */
export function observeFsOps(observer: FsObserver): () => void {
  observers.add(observer);
  return () => observers.delete(observer);
}

function before(): void {
  if (crashed) throw crashed;
}

function after(op: FsOp): void {
  for (const o of observers) o(op);
}

/** `inner`, each change checked against the crash before and shown to the observers after. */
function observed(inner: FsOps): FsOps {
  const change =
    <A extends unknown[], R>(kind: FsOpKind, f: (...a: A) => Promise<R>, pathOf = (a: A) => a[0] as string) =>
    async (...a: A): Promise<R> => {
      before();
      const r = await f(...a);
      after({ kind, path: pathOf(a) });
      return r;
    };
  const moved =
    (kind: FsOpKind, f: (from: string, to: string) => Promise<void>) => async (from: string, to: string) => {
      before();
      await f(from, to);
      after({ kind, path: to, from });
    };
  return {
    async create(p, flags, mode) {
      before();
      const fh: FileHandle = await inner.create(p, flags, mode);
      try {
        after({ kind: 'create', path: p });
      } catch (err) {
        await fh.close();
        throw err;
      }
      return fh;
    },
    write: change('write', inner.write.bind(inner), (a) => a[1]),
    fsync: change('fsync', inner.fsync.bind(inner), (a) => a[1]),
    fsyncDir: change('fsync-dir', inner.fsyncDir.bind(inner)),
    rename: moved('rename', inner.rename.bind(inner)),
    unlink: change('unlink', inner.unlink.bind(inner)),
    link: moved('link', inner.link.bind(inner)),
    utimes: change('utimes', inner.utimes.bind(inner)),
    setMtime: change('utimes', inner.setMtime.bind(inner)),
    chown: change('chown', inner.chown.bind(inner)),
    chmod: change('chmod', inner.chmod.bind(inner)),
    async mkdir(p) {
      before();
      const made = await inner.mkdir(p);
      if (made !== undefined) after({ kind: 'mkdir', path: p });
      return made;
    },
    rmdir: change('rmdir', inner.rmdir.bind(inner)),
    async pause(ms) {
      // A dead process does not go on waiting either.
      before();
      await inner.pause(ms);
      before();
    },
  };
}

wrapFsOps(observed);
