import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { notAPartitionLog, parsePartitionDirName } from '../files/names.js';
import { tmpDir } from '../test-support/fixtures.js';
import { findPartitionDirs, findPartitionSegments, isActiveSegment, listSegments } from './discovery.js';

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
    await mk('logs1/orders-4.abc-stray', ['00000000000000000000.log']);
    await mk('logs1/__cluster_metadata-0', ['00000000000001725413.log']);
    await mk('logs1/remote-log-index-cache', ['00000000000000000000.log']);
    await mk('logs1/not a partition', ['00000000000000000000.log']);
    await mk('logs2/empty-0', ['leader-epoch-checkpoint']);
    // A backup directory (marked by seglift when it wrote the first backup) is never migrated.
    await mk('logs2/backup/orders-0', ['.seglift-backup', '00000000000000000000.log']);
    await writeFile(path.join(root, 'logs2/backup/.seglift-backup'), '');
    // Nor is a stage dir (converted copies laid out like partitions, marked at its root only).
    await mk('logs2/stage/orders-0', ['00000000000000000000.log']);
    await writeFile(path.join(root, 'logs2/stage/.seglift-stage'), '');
    const found = await findPartitionDirs(root);
    expect(found.partitions.map((d) => path.relative(root, d))).toEqual(['logs1/orders-0', 'logs1/orders-1']);
    expect(found.ignored.map((i) => [path.relative(root, i.dir), i.reason.split(/[,:(]/)[0].trim()])).toEqual(
      [
        ['logs1/__cluster_metadata-0', 'the KRaft metadata log'],
        ['logs1/not a partition', 'not named <topic>-<partition>'],
        ['logs1/orders-2.abc-delete', 'a partition directory Kafka is deleting'],
        ['logs1/orders-3.abc-future', 'a partition directory Kafka is deleting'],
        ['logs1/orders-4.abc-stray', 'a partition directory Kafka is deleting'],
        ['logs1/remote-log-index-cache', "tiered storage's index cache"],
        ['logs2/backup', 'a seglift backup directory'],
        ['logs2/stage', 'a seglift stage directory'],
      ],
    );
    expect((await findPartitionDirs(path.join(root, 'logs1/orders-1'))).partitions).toEqual([
      path.join(root, 'logs1/orders-1'),
    ]);
    // Named directly, the metadata log and a backup are still passed over.
    expect((await findPartitionDirs(path.join(root, 'logs1/__cluster_metadata-0'))).partitions).toEqual([]);
    expect((await findPartitionDirs(path.join(root, 'logs2/backup/orders-0'))).partitions).toEqual([]);
    const segs = await listSegments(path.join(root, 'logs1/orders-0'));
    expect(segs.map((s) => s.baseOffset)).toEqual([0n, 500n, 1000n]);
    expect(await isActiveSegment(path.join(root, 'logs1/orders-0/00000000000000001000.log'))).toBe(true);
    expect(await isActiveSegment(path.join(root, 'logs1/orders-0/00000000000000000500.log'))).toBe(false);
    const parts = (await findPartitionSegments(root)).partitions;
    expect(
      parts.map((p) => [path.basename(p.partitionDir), p.eligible.length, p.active?.baseOffset]),
    ).toEqual([
      ['orders-0', 2, 1000n],
      ['orders-1', 0, 42n],
    ]);
    expect((await findPartitionSegments(root, { includeActive: true })).partitions[1].eligible.length).toBe(
      1,
    );
  });

  it('Kafka reads partition directory names as <topic>-<partition>', () => {
    expect(parsePartitionDirName('orders-0')).toEqual({ topic: 'orders', partition: 0 });
    expect(parsePartitionDirName('my-topic-12')).toEqual({ topic: 'my-topic', partition: 12 });
    expect(parsePartitionDirName('__consumer_offsets-49')).toEqual({
      topic: '__consumer_offsets',
      partition: 49,
    });
    for (const bad of ['orders', '-0', 'orders-', 'orders-x', 'orders-99999999999']) {
      expect(parsePartitionDirName(bad)).toBeUndefined();
    }
    expect(notAPartitionLog('__cluster_metadata-0')).toMatch(/metadata/);
    expect(notAPartitionLog('orders-0')).toBeUndefined();
  });
});
