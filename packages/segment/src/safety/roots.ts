import { realpath } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { PathOutsideRootsError } from '../files/errors.js';

/**
 * Resolves `path` (absolute) to its real path and checks it lies inside one of `roots` (also
 * compared by real path). Rejects any `..` component outright, symlinks that lead out of the
 * roots, relative paths and absolute paths elsewhere, with PathOutsideRootsError. A path that does
 * not exist yet (an output file) is resolved through its nearest existing ancestor.
 */
export async function resolveWithinRoots(path: string, roots: readonly string[]): Promise<string> {
  if (typeof path !== 'string' || path === '' || path.includes('\0')) {
    throw new PathOutsideRootsError(String(path), roots, 'not a valid path');
  }
  if (!isAbsolute(path)) throw new PathOutsideRootsError(path, roots, 'path must be absolute');
  if (path.split(/[\\/]+/).includes('..'))
    throw new PathOutsideRootsError(path, roots, 'path must not contain ".."');
  return realPathWithinRoots(path, roots);
}

/**
 * The real path of `path` (relative to the working directory, `..` resolved by the kernel as it
 * resolves every later open and rename), when inside one of `roots`; else PathOutsideRootsError.
 * resolveWithinRoots is this for the worker's job paths, which must also be plain absolute paths.
 */
export async function realPathWithinRoots(path: string, roots: readonly string[]): Promise<string> {
  const real = await realpathOfNearest(isAbsolute(path) ? path : `${process.cwd()}${sep}${path}`);
  for (const root of roots) {
    let realRoot: string;
    try {
      realRoot = await realpath(root);
    } catch {
      continue; // a missing root contains nothing
    }
    if (isInside(real, realRoot)) return real;
  }
  throw new PathOutsideRootsError(
    path,
    roots,
    real === path
      ? 'path is outside the allowed roots'
      : `path resolves to ${real}, outside the allowed roots`,
  );
}

/**
 * A partition found under `dir` (a log dir or partition dir given), by its real path `real`,
 * inside one of `roots`; else PathOutsideRootsError saying whether a symlink led it out. One rule
 * for every front door that writes in partitions (migrate, tier-prepare).
 */
export async function assertPartitionWithinRoots(
  real: string,
  dir: string,
  roots: readonly string[],
): Promise<void> {
  if (roots.length === 0) return;
  await realPathWithinRoots(real, roots).catch((err: unknown) => {
    if (!(err instanceof PathOutsideRootsError)) throw err;
    const linked = !real.startsWith(`${resolve(dir)}${sep}`) && real !== resolve(dir);
    throw new PathOutsideRootsError(
      real,
      roots,
      `partition dir ${real}, found under ${dir}${linked ? ' through a symlink' : ''}, is outside the allowed roots`,
    );
  });
}

/** True when `child` is `parent` or below it (both already normalized, absolute). */
export function isInside(child: string, parent: string): boolean {
  const rel = relative(parent, child);
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
}

/** The real path of `path`, or of its nearest existing ancestor joined with the rest. */
export async function realpathOfNearest(path: string): Promise<string> {
  const rest: string[] = [];
  let p = path;
  for (;;) {
    try {
      const real = await realpath(p);
      return rest.length === 0 ? real : join(real, ...rest.reverse());
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR') throw err;
      const parent = dirname(p);
      if (parent === p) throw err;
      rest.push(basename(p));
      p = parent;
    }
  }
}
