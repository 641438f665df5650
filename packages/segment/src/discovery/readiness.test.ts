import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  realpathSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, onTestFinished } from 'vitest';
import {
  evaluatePartition,
  findReadySegments,
  newestSegmentReady,
  quietAtStart,
  readinessRules,
  segmentReadiness,
  splitReady,
} from './readiness.js';

const scanRoots: typeof findReadySegments = (roots, rules, options) =>
  findReadySegments(roots, rules, { ...options, realPaths: true });

const tmp = realpathSync(mkdtempSync(join(tmpdir(), 'seglift-scan-')));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const seg = (n: number) => `${String(n).padStart(20, '0')}.log`;
const NOW = Date.parse('2024-06-01T00:00:00Z');

function partition(dir: string, files: Array<[string, number?]>): string {
  mkdirSync(dir, { recursive: true });
  for (const [name, ageMs] of files) {
    const p = join(dir, name);
    writeFileSync(p, name);
    const t = (NOW - (ageMs ?? 3_600_000)) / 1000;
    utimesSync(p, t, t);
  }
  return dir;
}

const live = { requireRolled: true, quietMs: 60_000 };
const archive = { requireRolled: false, quietMs: 60_000 };

describe('evaluatePartition', () => {
  const dir = partition(join(tmp, 'eval', 't-0'), [
    [seg(0)],
    [seg(100)],
    [seg(250), 1000],
    [`${seg(0)}.swap`],
    [`${seg(100)}.cleaned`],
    [`${seg(50)}.deleted`],
    [`${seg(0).replace('.log', '.index')}`],
    ['leader-epoch-checkpoint'],
    ['123.log'],
  ]);
  const names = [
    '00000000000000000250.log',
    '00000000000000000000.log',
    '00000000000000000100.log',
    '00000000000000000000.log.swap',
    '00000000000000000100.log.cleaned',
    '00000000000000000050.log.deleted',
    '00000000000000000000.index',
    'leader-epoch-checkpoint',
    '123.log',
  ];

  it('never queues the active (newest) segment nor temp files in a live dir', async () => {
    const v = await evaluatePartition(dir, names, live, NOW);
    expect(v.ready.map((r) => r.path)).toEqual([join(dir, seg(0)), join(dir, seg(100))]);
    expect(v.ready[0].size).toBe(24);
    expect(v.ready[0].mtimeMs).toBe(NOW - 3_600_000);
    expect(v.notReady).toBe(1);
    expect(v.recheckAt).toBeUndefined();
  });

  it('queues an archive newest segment once quiet for quietMs', async () => {
    const early = await evaluatePartition(dir, names, archive, NOW);
    expect(early.ready.map((r) => r.path)).toEqual([join(dir, seg(0)), join(dir, seg(100))]);
    expect(early.notReady).toBe(1);
    expect(early.recheckAt).toBe(NOW - 1000 + 60_000 + 1);
    const later = await evaluatePartition(dir, names, archive, NOW + 59_000);
    expect(later.ready.map((r) => r.path)).toEqual([
      join(dir, seg(0)),
      join(dir, seg(100)),
      join(dir, seg(250)),
    ]);
    expect(later.notReady).toBe(0);
  });

  it('archive: an older segment still being copied (written after the newest) is not ready until quiet for quietMs', async () => {
    // A parallel copy finished the newest segment first and is still writing an older one.
    const copying = partition(join(tmp, 'eval', 'copying-0'), [[seg(0)], [seg(100), 1000], [seg(250)]]);
    const names = [seg(0), seg(100), seg(250)];
    const early = await evaluatePartition(copying, names, archive, NOW);
    expect(early.ready.map((r) => r.path)).toEqual([join(copying, seg(0)), join(copying, seg(250))]);
    expect(early.notReady).toBe(1);
    expect(early.recheckAt).toBe(NOW - 1000 + 60_000 + 1);
    const later = await evaluatePartition(copying, names, archive, NOW + 59_000);
    expect(later.ready.map((r) => r.path)).toEqual(names.map((n) => join(copying, n)));
    // A live broker's log dir: a rolled segment is ready at once (Kafka never appends to it).
    const liveDir = await evaluatePartition(copying, names, live, NOW);
    expect(liveDir.ready.map((r) => r.path)).toEqual([join(copying, seg(0)), join(copying, seg(100))]);
    // The scan of the roots decides by the same rule.
    const scan = await scanRoots([copying], archive, { now: NOW });
    expect(scan.ready.map((r) => r.path)).toEqual([join(copying, seg(0)), join(copying, seg(250))]);
    expect(scan.notReady).toBe(1);
  });

  it('handles a single segment and an empty dir', async () => {
    expect((await evaluatePartition(dir, [seg(0)], live, NOW)).ready).toEqual([]);
    expect(await evaluatePartition(dir, [], live, NOW)).toEqual({ ready: [], notReady: 0 });
  });
});

describe('scanRoots', () => {
  const root = join(tmp, 'scan', 'kafka-logs');
  const outside = partition(join(tmp, 'scan', 'outside', 'x-0'), [[seg(0)], [seg(10)]]);
  partition(join(root, 'a-0'), [[seg(0)], [seg(10)], [seg(20)]]);
  partition(join(root, 'a-1'), [[seg(0)]]);
  partition(join(root, 'b-0.4b1f2c-delete'), [[seg(0)], [seg(10)]]);
  partition(join(root, 'b-0.4b1f2c-future'), [[seg(0)], [seg(10)]]);
  partition(join(root, 'b-1.4b1f2c-stray'), [[seg(0)], [seg(10)]]);
  // The KRaft metadata log shares the first log dir by default: never a job.
  partition(join(root, '__cluster_metadata-0'), [[seg(0)], [seg(10)]]);
  // A backup directory seglift marked when it wrote its first backup.
  partition(join(root, 'backup', 'a-0'), [[seg(0)], [seg(10)], ['.seglift-backup']]);
  writeFileSync(join(root, 'backup', '.seglift-backup'), '');
  partition(join(root, 'nested', 'c-0'), [[seg(5)], [seg(6)]]);
  symlinkSync(join(tmp, 'scan', 'outside'), join(root, 'link-out'));
  symlinkSync(outside, join(root, 'x-0'));

  it('finds ready segments, skipping -delete/-future/-stray dirs, the metadata log, backups; a symlinked dir is followed (as Kafka follows one) and walked once by its real path', async () => {
    const r = await scanRoots([root], live, { now: NOW });
    expect(r.roots).toEqual([root]);
    // x-0 and link-out/x-0 are one partition: its real path, once.
    expect(r.partitions).toBe(4);
    expect(r.notReady).toBe(4);
    expect(r.ready.map((s) => s.path).sort()).toEqual(
      [
        join(root, 'a-0', seg(0)),
        join(root, 'a-0', seg(10)),
        join(root, 'nested/c-0', seg(5)),
        join(outside, seg(0)),
      ].sort(),
    );
  });

  it('reports missing roots, dedupes roots given twice, resolves symlinked roots', async () => {
    symlinkSync(root, join(tmp, 'scan', 'alias'));
    const r = await scanRoots([join(tmp, 'scan', 'alias'), root, join(tmp, 'nope')], live, { now: NOW });
    expect(r.roots).toEqual([root]);
    expect(r.missingRoots).toEqual([join(tmp, 'nope')]);
    expect(r.ready).toHaveLength(4);
  });

  it('scans 10,000 partition directories', async () => {
    // tmpfs when there is one: creating 20,000 files on a loaded disk is what takes time here.
    const bigBase = existsSync('/dev/shm') ? mkdtempSync('/dev/shm/seglift-scan-') : tmp;
    const big = join(bigBase, 'big');
    onTestFinished(() => rmSync(bigBase === tmp ? big : bigBase, { recursive: true, force: true }));
    const ids = Array.from({ length: 10_000 }, (_, i) => i);
    for (let i = 0; i < ids.length; i += 500) {
      await Promise.all(
        ids.slice(i, i + 500).map(async (n) => {
          const d = join(big, `topic-${n}`);
          await mkdir(d, { recursive: true });
          await Promise.all([writeFile(join(d, seg(0)), ''), writeFile(join(d, seg(7)), '')]);
        }),
      );
    }
    // Correctness at scale only: how fast is a benchmark's business (bench/), not a test's.
    const r = await scanRoots([big], live, { now: NOW });
    expect(r.partitions).toBe(10_000);
    expect(r.ready).toHaveLength(10_000);
    expect(r.notReady).toBe(10_000);
  });
});

describe('newestSegmentReady', () => {
  it('with quietMs 0 takes a newest segment written this very millisecond, or stamped ahead of the clock', () => {
    const now = 1_700_000_000_000;
    const rules = { requireRolled: false, quietMs: 0 };
    expect(newestSegmentReady({ mtimeMs: now + 0.4 }, rules, now)).toBe(true);
    expect(newestSegmentReady({ mtimeMs: now + 5_000 }, rules, now)).toBe(true);
    expect(newestSegmentReady({ mtimeMs: now - 999 }, { requireRolled: false, quietMs: 1000 }, now)).toBe(
      false,
    );
    expect(newestSegmentReady({ mtimeMs: now - 1000 }, { requireRolled: false, quietMs: 1000 }, now)).toBe(
      true,
    );
    expect(newestSegmentReady({ mtimeMs: 0 }, { requireRolled: true, quietMs: 0 }, now)).toBe(false);
  });
});

describe('readinessRules', () => {
  it("builds every front door's rules from its settings: the config's as set, --include-active, a live broker's", () => {
    const archiveConfig = { readiness: { requireRolled: false, quietMs: 300_000 }, roots: ['/x'] };
    expect(readinessRules(archiveConfig)).toEqual({ requireRolled: false, quietMs: 300_000 });
    expect(readinessRules({ readiness: { requireRolled: true, quietMs: 300_000 } })).toEqual({
      requireRolled: true,
      quietMs: 300_000,
    });
    // --include-active wins over the config: every segment, waiting for nothing.
    expect(readinessRules({ ...archiveConfig, includeActive: true })).toEqual({
      requireRolled: false,
      quietMs: 0,
    });
    expect(readinessRules({ includeActive: true })).toEqual({ requireRolled: false, quietMs: 0 });
    expect(readinessRules()).toEqual({ requireRolled: true, quietMs: 0 });
    expect(readinessRules({ includeActive: false })).toEqual({ requireRolled: true, quietMs: 0 });
  });

  it('quietAtStart: an archive re-checks its quiet when a conversion starts; a live dir and --include-active do not', () => {
    expect(quietAtStart({ requireRolled: false, quietMs: 300_000 })).toBe(300_000);
    expect(quietAtStart({ requireRolled: true, quietMs: 300_000 })).toBeUndefined();
    expect(quietAtStart(readinessRules({ includeActive: true }))).toBeUndefined();
  });
});

describe('segmentReadiness', () => {
  const dir = partition(join(tmp, 'one', 't-0'), [
    [seg(0), 120_000],
    [seg(100), 1000],
  ]);
  const at = (n: number, ageMs: number) => ({ path: join(dir, seg(n)), mtimeMs: NOW - ageMs });

  it("decides one segment as splitReady decides its partition: a live dir's active segment never, an archive's once quiet", async () => {
    expect(await segmentReadiness(at(0, 120_000), live, NOW)).toEqual({ ready: true });
    expect(await segmentReadiness(at(100, 1000), live, NOW)).toEqual({
      ready: false,
      reason: 'active-segment',
    });
    expect(await segmentReadiness(at(0, 120_000), archive, NOW)).toEqual({ ready: true });
    // Written 1 s ago, 60 s of quiet needed: asked again 59 s later (as splitReady's recheckAt).
    const still = await segmentReadiness(at(100, 1000), archive, NOW);
    expect(still).toEqual({ ready: false, reason: 'still-changing', recheckAt: NOW - 1000 + 60_000 + 1 });
    expect(splitReady([at(0, 120_000), at(100, 1000)], archive, NOW).recheckAt).toBe(NOW - 1000 + 60_000 + 1);
    expect(await segmentReadiness(at(100, 60_000), archive, NOW)).toEqual({ ready: true });
    expect(await segmentReadiness(at(100, 1000), readinessRules({ includeActive: true }), NOW)).toEqual({
      ready: true,
    });
  });
});
