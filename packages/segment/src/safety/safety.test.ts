/**
 * Data safety findings (issue 10): ownership kept, backups outside the migrated tree, coalesce
 * correct past every buffer boundary, the active segment's indexes within segment.index.bytes.
 */
import { mkdir, readdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { CodecName } from '@seglift/format';
import { encodeCompressedWrapper, encodeLegacyEntry } from '@seglift/legacy';
import { needs, root } from '@seglift/testkit';
import { describe, expect, it } from 'vitest';
import { convertSegment } from '../placements/convert.js';
import { verifySegment } from '../rewrite/verify.js';
import { migrate } from '../runs/migrate.js';
import { commitStage, prepareStage } from '../runs/two-phase.js';
import { mixedSegment, prng, text, tmpDir, writeSegment } from '../test-support/fixtures.js';
import { independentRecords, recoveryIndexes } from '../test-support/independent.js';

describe('rewritten files keep owner, group and mode', () => {
  needs(root).it(
    'as root, on files of the broker user (65534, 0640): new files and backups keep them',
    async () => {
      const dir = await tmpDir();
      const log = await writeSegment(dir, mixedSegment().bytes);
      const pdir = path.dirname(log);
      const idx = recoveryIndexes(await readFile(log), 0n);
      await writeFile(path.join(pdir, '00000000000000000000.index'), idx.index, { mode: 0o600 });
      await writeFile(path.join(pdir, '00000000000000000000.timeindex'), idx.timeindex, { mode: 0o600 });
      const { chown, chmod } = await import('node:fs/promises');
      for (const f of await readdir(pdir)) await chown(path.join(pdir, f), 65534, 65534);
      await chmod(log, 0o640);
      const backupDir = path.join(dir, 'backup');
      const r = await convertSegment(log, { codec: 'zstd' }, { kind: 'inPlace', backupDir });
      expect(r.error).toBeUndefined();
      const owner = async (f: string) => {
        const st = await stat(f);
        return [st.uid, st.gid, (st.mode & 0o7777).toString(8)];
      };
      expect(await owner(log)).toEqual([65534, 65534, '640']);
      expect(await owner(path.join(pdir, '00000000000000000000.index'))).toEqual([65534, 65534, '600']);
      expect(await owner(path.join(pdir, '00000000000000000000.timeindex'))).toEqual([65534, 65534, '600']);
      const b = path.join(backupDir, 'topic-0');
      expect(await owner(path.join(b, '00000000000000000000.log'))).toEqual([65534, 65534, '640']);
      expect(await owner(path.join(b, '00000000000000000000.index'))).toEqual([65534, 65534, '600']);
      // --out keeps the mode (and, as root, the owner).
      const out = path.join(dir, 'out');
      const o = await convertSegment(
        path.join(b, '00000000000000000000.log'),
        { codec: 'lz4' },
        { kind: 'outDir', dir: out },
      );
      expect(o.error).toBeUndefined();
      expect(await owner(path.join(out, '00000000000000000000.log'))).toEqual([65534, 65534, '640']);
    },
  );
});

describe('a backup directory inside the migrated tree is refused', () => {
  async function logDir() {
    const dir = await tmpDir();
    const root = path.join(dir, 'kafka-logs');
    await writeSegment(root, mixedSegment().bytes, 0n, 'orders-0');
    await writeSegment(root, mixedSegment(1000n).bytes, 1000n, 'orders-0');
    return { dir, root };
  }

  it('inside a migrated dir, containing one, or reached through a symlink: refused before any change', async () => {
    const { dir, root } = await logDir();
    const before = await readdir(path.join(root, 'orders-0'));
    await symlink(root, path.join(dir, 'alias'));
    for (const backupDir of [
      path.join(root, 'backup'),
      path.join(root, 'orders-0', 'b'),
      dir,
      path.join(dir, 'alias', 'backup'),
    ]) {
      await expect(migrate([root], { codec: 'zstd', backupDir })).rejects.toThrow(
        /backup dir .* (is inside|contains) .*which is being migrated/,
      );
    }
    await expect(
      migrate([path.join(dir, 'alias')], { codec: 'zstd', backupDir: path.join(root, 'x') }),
    ).rejects.toThrow(/is inside/);
    expect(await readdir(path.join(root, 'orders-0'))).toEqual(before);
    // convert --in-place into the partition itself is refused the same way.
    const r = await convertSegment(
      path.join(root, 'orders-0', '00000000000000000000.log'),
      { codec: 'zstd' },
      { kind: 'inPlace', backupDir: path.join(root, 'orders-0', 'bk') },
    );
    expect(r.error?.code).toBe('INVALID_ARGUMENT');
  });

  it('the commit checks it as migrate does, before any change: inside the roots, and outside the real log dir of a partition named through a link', async () => {
    const { dir, root } = await logDir();
    const stageDir = path.join(dir, 'stage');
    await prepareStage(root, { codec: 'zstd', stageDir, mode: 'inline' });
    const staged = await readdir(stageDir, { recursive: true });
    const before = await readdir(path.join(root, 'orders-0'));
    const elsewhere = path.join(await tmpDir(), 'backup');
    await expect(
      commitStage(root, { codec: 'zstd', stageDir, mode: 'inline', roots: [dir], backupDir: elsewhere }),
    ).rejects.toThrow(/backup dir .* is outside the allowed roots/);
    // The partition named through a link: its real log dir is `root`, where a broker would find
    // the backup dir beside its partitions and refuse to start.
    await mkdir(path.join(dir, 'links'));
    const linked = path.join(dir, 'links', 'orders-0');
    await symlink(path.join(root, 'orders-0'), linked);
    const linkedStage = path.join(dir, 'stage-linked');
    await prepareStage(linked, { codec: 'zstd', stageDir: linkedStage, mode: 'inline' });
    await expect(
      commitStage(linked, {
        codec: 'zstd',
        stageDir: linkedStage,
        mode: 'inline',
        backupDir: path.join(root, 'backup'),
      }),
    ).rejects.toThrow(/backup dir .* is inside .*which is being migrated/);
    expect(await readdir(path.join(root, 'orders-0'))).toEqual(before);
    expect(await readdir(stageDir, { recursive: true })).toEqual(staged);
  });

  it('backups are marked and never migrated: a second run over a parent of both leaves them alone', async () => {
    const { dir, root } = await logDir();
    const backupDir = path.join(dir, 'backup');
    const first = await migrate([root], { codec: 'zstd', backupDir });
    expect(first.summary.converted).toBe(1);
    expect(await readdir(backupDir)).toEqual(['.seglift-backup', 'orders-0']);
    const backed = await readFile(path.join(backupDir, 'orders-0', '00000000000000000000.log'));
    const second = await migrate([dir], { codec: 'gzip', force: true, includeActive: true });
    expect(second.ignored.map((i) => [path.relative(dir, i.dir), i.reason])).toEqual([
      ['backup', 'a seglift backup directory'],
    ]);
    expect(second.reports.map((r) => path.relative(dir, r.path))).toEqual([
      'kafka-logs/orders-0/00000000000000000000.log',
      'kafka-logs/orders-0/00000000000000001000.log',
    ]);
    expect(await readFile(path.join(backupDir, 'orders-0', '00000000000000000000.log'))).toEqual(backed);
  });
});

describe('every grouping and codec past every buffer boundary', () => {
  /**
   * Small (100-200 byte) plain magic-1 messages with a few compressed wrappers and one
   * LogAppendTime wrapper (which ends a coalesced batch) among them. 4.6 MiB crosses the reader's
   * 1 MiB chunks often enough that its two read buffers are each reused while a 1 MiB coalesced
   * batch still holds records of them, and the writer's two 1 MiB buffers; with the small sizes
   * below, coalesceBytes and maxBatchBytes are crossed many times.
   */
  function smallMessages(total: number): Buffer {
    const rand = prng(0x5eed);
    const parts: Uint8Array[] = [];
    let off = 0n;
    let bytes = 0;
    const ts = (o: bigint) => 1_600_000_000_000n + o;
    while (bytes < total) {
      let e: Uint8Array;
      if (off % 2000n === 1999n) {
        const messages = Array.from({ length: 20 }, () => {
          const m = { offset: off, timestamp: ts(off), key: null, value: text(rand, 150) };
          off++;
          return m;
        });
        e = encodeCompressedWrapper({ magic: 1, codec: 1 + Number(off % 3n), messages } as never);
      } else if (off === 15000n) {
        const messages = Array.from({ length: 5 }, () => ({
          offset: off++,
          timestamp: 7n,
          key: null,
          value: text(rand, 90),
        }));
        e = encodeCompressedWrapper({
          magic: 1,
          codec: 1,
          timestampType: 'LogAppendTime',
          wrapperTimestamp: ts(off),
          messages,
        });
      } else {
        e = encodeLegacyEntry(off, {
          magic: 1,
          timestamp: ts(off),
          key: off % 5n === 0n ? null : Buffer.from(`k${off}`),
          value: text(rand, 60 + Math.floor(rand() * 120)),
        });
        off++;
      }
      parts.push(e);
      bytes += e.length;
    }
    return Buffer.concat(parts);
  }

  const big = smallMessages(4.6 * 1024 * 1024);
  const small = smallMessages(2.3 * 1024 * 1024);
  const expected = new Map<Buffer, Awaited<ReturnType<typeof independentRecords>>>();
  // Defaults (a coalesced batch up to 1 MiB spans the reader's chunks: records must not view a
  // reused read buffer), and small sizes crossed many times.
  const sizes = {
    defaults: {},
    small: { coalesceBytes: 48 * 1024, maxBatchBytes: 96 * 1024 },
  };
  for (const grouping of ['kafka', 'coalesce'] as const) {
    for (const codec of ['none', 'gzip', 'snappy', 'lz4', 'zstd'] as CodecName[]) {
      for (const [name, size] of Object.entries(sizes)) {
        if (name === 'small' && (grouping === 'kafka' || codec === 'gzip' || codec === 'snappy')) continue;
        it(`${grouping} -> ${codec}, ${name}`, async () => {
          const source = grouping === 'coalesce' && name === 'defaults' ? big : small;
          if (!expected.has(source)) expected.set(source, await independentRecords(source));
          const dir = await tmpDir();
          const log = await writeSegment(dir, source);
          const out = path.join(dir, 'out');
          const r = await convertSegment(log, { codec, grouping, ...size }, { kind: 'outDir', dir: out });
          expect(r.error).toBeUndefined();
          const outLog = path.join(out, '00000000000000000000.log');
          const written = await readFile(outLog);
          expect(await independentRecords(written)).toEqual(expected.get(source));
          expect((await verifySegment(outLog)).problems).toEqual([]);
          if (grouping === 'coalesce') expect(r.batchesOut).toBeLessThan(r.batchesIn / 50);
        }, 60_000);
      }
    }
  }
});

describe("the active segment's rebuilt indexes fit segment.index.bytes", () => {
  it('an active segment whose .index would not fit is refused, naming the setting; a larger value converts it', async () => {
    const dir = await tmpDir();
    const log = await writeSegment(dir, mixedSegment().bytes);
    const opts = { codec: 'none' as const, indexIntervalBytes: 1 };
    const r = await convertSegment(log, { ...opts, segmentIndexBytes: 64 }, { kind: 'inPlace' });
    expect(r.error?.code).toBe('INVALID_ARGUMENT');
    expect(r.reason).toMatch(
      /active \(last\) segment .* segment\.index\.bytes \(64\).*--segment-index-bytes/,
    );
    const ok = await convertSegment(log, { ...opts, segmentIndexBytes: 1024 * 1024 }, { kind: 'inPlace' });
    expect(ok.error).toBeUndefined();
    // Not the last segment of its partition: any size is fine (Kafka only resizes the active one).
    await mkdir(path.dirname(log), { recursive: true });
    await writeFile(path.join(path.dirname(log), '00000000000000009000.log'), '');
    const other = await convertSegment(
      log,
      { ...opts, codec: 'zstd', segmentIndexBytes: 64 },
      { kind: 'inPlace' },
    );
    expect(other.error).toBeUndefined();
  });
});
