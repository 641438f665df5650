import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { findPartitionDirs, findPartitionSegments, isActiveSegment, listSegments } from './discovery.js';
import { tmpDir } from './test-support/fixtures.js';

describe('discovery', () => {
  it('finds partition dirs, lists segments by base offset, knows the active one', async () => {
    const root = await tmpDir();
    const mk = async (rel: string, files: string[]) => {
      await mkdir(path.join(root, rel), { recursive: true });
      for (const f of files) await writeFile(path.join(root, rel, f), 'x');
    };
    await mk('logs1/orders-0', [
      '00000000000000000000.log',
      '00000000000000000000.index',
      '00000000000000001000.log',
      '00000000000000000500.log',
      '00000000000000000700.log.swap',
      '00000000000000000800.log.deleted',
      '00000000000000000900.log.cleaned',
      '00000000000000000000.log.seglift-tmp',
      'leader-epoch-checkpoint',
    ]);
    await mk('logs1/orders-1', ['00000000000000000042.log']);
    await mk('logs1/orders-2.abc-delete', ['00000000000000000000.log']);
    await mk('logs1/orders-3.abc-future', ['00000000000000000000.log']);
    await mk('logs2/empty-0', ['leader-epoch-checkpoint']);
    expect((await findPartitionDirs(root)).map((d) => path.relative(root, d))).toEqual([
      'logs1/orders-0',
      'logs1/orders-1',
    ]);
    expect(await findPartitionDirs(path.join(root, 'logs1/orders-1'))).toEqual([
      path.join(root, 'logs1/orders-1'),
    ]);
    const segs = await listSegments(path.join(root, 'logs1/orders-0'));
    expect(segs.map((s) => s.baseOffset)).toEqual([0n, 500n, 1000n]);
    expect(await isActiveSegment(path.join(root, 'logs1/orders-0/00000000000000001000.log'))).toBe(true);
    expect(await isActiveSegment(path.join(root, 'logs1/orders-0/00000000000000000500.log'))).toBe(false);
    const parts = await findPartitionSegments(root);
    expect(
      parts.map((p) => [path.basename(p.partitionDir), p.eligible.length, p.active?.baseOffset]),
    ).toEqual([
      ['orders-0', 2, 1000n],
      ['orders-1', 0, 42n],
    ]);
    expect((await findPartitionSegments(root, { includeActive: true }))[1].eligible.length).toBe(1);
  });
});
