import { createHash } from 'node:crypto';
import { readdir, readFile, stat } from 'node:fs/promises';
import { type FsOp, observeFsOps } from './seams.js';

export async function sha256(file: string): Promise<string> {
  return createHash('sha256')
    .update(await readFile(file))
    .digest('hex');
}

export async function ls(dir: string): Promise<string[]> {
  return (await readdir(dir)).sort();
}

/** The file's mtime to the nanosecond. */
export async function mtime(file: string): Promise<bigint> {
  return (await stat(file, { bigint: true })).mtimeNs;
}

/** Runs `fn` and returns what it returned with every filesystem change it made through fsops. */
export async function recordFsOps<T>(fn: () => Promise<T>): Promise<{ result: T; ops: FsOp[] }> {
  const ops: FsOp[] = [];
  const stop = observeFsOps((op) => ops.push(op));
  try {
    return { result: await fn(), ops };
  } finally {
    stop();
  }
}
