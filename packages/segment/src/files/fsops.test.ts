/**
 * The filesystem changes go through the thread's injected FsOps, and production code holds no
 * fault: the crashing and observing FsOps live in test support only (docs/architecture.md).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { tmpDir } from '../test-support/fixtures.js';
import { ls } from '../test-support/helpers.js';
import {
  type FsOps,
  fsyncDir,
  mkdirp,
  removeEmptyDirs,
  removeIfExists,
  rename,
  setMtime,
  wrapFsOps,
  writeWholeFile,
} from './fsops.js';

const SRC = path.dirname(path.dirname(fileURLToPath(import.meta.url)));

/** The package's built sources: everything under src/ but tests and test support. */
function productionSources(dir = SRC): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) {
      if (name !== 'test-support') out.push(...productionSources(p));
    } else if (name.endsWith('.ts') && !name.endsWith('.test.ts')) out.push(p);
  }
  return out;
}

describe('fsops', () => {
  it('every change is made by the injected FsOps, in order; unwrapping puts the previous ones back', async () => {
    const dir = await tmpDir();
    const seen: string[] = [];
    const unwrap = wrapFsOps((inner) => {
      const record =
        <A extends unknown[], R>(name: string, f: (...a: A) => Promise<R>) =>
        (...a: A) => {
          // A write and an fsync take the open handle first, then its path.
          const file = typeof a[0] === 'string' ? a[0] : (a[1] as string);
          seen.push(`${name} ${path.relative(dir, file)}`);
          return f(...a);
        };
      const ops = {} as Record<string, unknown>;
      for (const [k, f] of Object.entries(inner))
        ops[k] = record(k, f as (...a: unknown[]) => Promise<unknown>);
      return ops as unknown as FsOps;
    });
    try {
      await mkdirp(path.join(dir, 'a', 'b'));
      await writeWholeFile(path.join(dir, 'a', 'b', 'x'), 'bytes', { sync: true });
      await setMtime(path.join(dir, 'a', 'b', 'x'), 1_600_000_000_123_456_789n);
      await rename(path.join(dir, 'a', 'b', 'x'), path.join(dir, 'a', 'b', 'y'));
      await fsyncDir(path.join(dir, 'a', 'b'));
      // Absent: answered by a stat, no unlink made.
      expect(await removeIfExists(path.join(dir, 'a', 'b', 'x'))).toBe(false);
      expect(await readFile(path.join(dir, 'a', 'b', 'y'), 'utf8')).toBe('bytes');
      expect(await removeIfExists(path.join(dir, 'a', 'b', 'y'))).toBe(true);
      await removeEmptyDirs(path.join(dir, 'a', 'b'), path.join(dir, 'a'));
    } finally {
      unwrap();
    }
    expect(seen).toEqual([
      'mkdir a/b',
      'create a/b/x',
      'write a/b/x',
      'fsync a/b/x',
      'setMtime a/b/x',
      'rename a/b/x',
      'fsyncDir a/b',
      'unlink a/b/y',
      'rmdir a/b',
      'rmdir a',
    ]);
    expect(await ls(dir)).toEqual([]);
    await mkdirp(path.join(dir, 'after'));
    expect(seen).toHaveLength(10);
  });

  it('production code names no test fault: no crash type, no fault switch read from the environment', () => {
    const offenders = productionSources().filter((f) =>
      /SimulatedCrash|crashFsOps|SEGLIFT_TEST_|testHooks/.test(readFileSync(f, 'utf8')),
    );
    expect(offenders.map((f) => path.relative(SRC, f))).toEqual([]);
  });
});
