import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PathOutsideRootsError } from '../files/errors.js';
import { resolveWithinRoots } from './roots.js';

const tmp = mkdtempSync(join(tmpdir(), 'seglift-roots-'));

describe('resolveWithinRoots', () => {
  const root = join(tmp, 'root');
  const outside = join(tmp, 'outside');
  mkdirSync(join(root, 'topic-0'), { recursive: true });
  mkdirSync(outside, { recursive: true });
  writeFileSync(join(root, 'topic-0', '00000000000000000000.log'), '');
  writeFileSync(join(outside, 'secret.log'), '');
  symlinkSync(outside, join(root, 'escape'));
  symlinkSync(join(root, 'topic-0'), join(tmp, 'alias'));

  const code = async (p: Promise<unknown>) => {
    try {
      await p;
    } catch (err) {
      expect(err).toBeInstanceOf(PathOutsideRootsError);
      return (err as PathOutsideRootsError).code;
    }
    return 'resolved';
  };

  it('accepts paths inside a root, existing or not', async () => {
    const seg = join(root, 'topic-0', '00000000000000000000.log');
    expect(await resolveWithinRoots(seg, [outside, root])).toBe(seg);
    expect(await resolveWithinRoots(root, [root])).toBe(root);
    expect(await resolveWithinRoots(join(root, 'new', 'x.log'), [root])).toBe(join(root, 'new', 'x.log'));
  });

  it('accepts a root given through a symlink', async () => {
    const seg = join(tmp, 'alias', '00000000000000000000.log');
    expect(await resolveWithinRoots(seg, [join(tmp, 'alias')])).toBe(
      join(root, 'topic-0', '00000000000000000000.log'),
    );
  });

  it('rejects .., symlink escapes, relative paths and other absolute paths', async () => {
    expect(
      await code(resolveWithinRoots(join(root, 'topic-0', '..', '..', 'outside', 'secret.log'), [root])),
    ).toBe('PATH_OUTSIDE_ROOTS');
    expect(
      await code(resolveWithinRoots(`${root}/topic-0/../topic-0/00000000000000000000.log`, [root])),
    ).toBe('PATH_OUTSIDE_ROOTS');
    expect(await code(resolveWithinRoots(join(root, 'escape', 'secret.log'), [root]))).toBe(
      'PATH_OUTSIDE_ROOTS',
    );
    expect(await code(resolveWithinRoots(join(root, 'escape', 'not-yet.log'), [root]))).toBe(
      'PATH_OUTSIDE_ROOTS',
    );
    expect(await code(resolveWithinRoots('topic-0/00000000000000000000.log', [root]))).toBe(
      'PATH_OUTSIDE_ROOTS',
    );
    expect(await code(resolveWithinRoots(join(outside, 'secret.log'), [root]))).toBe('PATH_OUTSIDE_ROOTS');
    expect(await code(resolveWithinRoots(`${root}-sibling/x.log`, [root]))).toBe('PATH_OUTSIDE_ROOTS');
    expect(await code(resolveWithinRoots(join(root, 'x'), []))).toBe('PATH_OUTSIDE_ROOTS');
  });

  it('says where the path resolved to', async () => {
    await expect(resolveWithinRoots(join(root, 'escape', 'secret.log'), [root])).rejects.toThrow(
      `path resolves to ${join(outside, 'secret.log')}, outside the allowed roots; allowed roots: ${root}`,
    );
  });
});
