/**
 * What a commit checks before it swaps in a staged segment (docs/reliability.md): the staged files
 * are the bytes prepare wrote and verified (their sha256 against the record), the source is the
 * file prepare read (ctime too: a write with the size and mtime put back, a recreated file under
 * a reused inode number), the stage dir serves this very log dir. And the new files' mtime is the
 * source's to the nanosecond, whichever way they came in.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  copyFile,
  mkdir,
  open,
  readdir,
  readFile,
  realpath,
  rename,
  stat,
  symlink,
  truncate,
  unlink,
  writeFile,
} from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { StageDirError } from '../files/errors.js';
import { setMtimeNs } from '../files/libc.js';
import { STAGE_DIR_MARKER } from '../files/names.js';
import { verifySegment } from '../rewrite/verify.js';
import {
  readStageRecord,
  sampleDigest,
  sourceIdentity,
  stageOptionsKey,
  staleReason,
} from '../stage/stage.js';
import { prng, tmpDir, v2Batch } from '../test-support/fixtures.js';
import { independentRecords, recoveryIndexes } from '../test-support/independent.js';
import { commitStage, prepareStage } from './two-phase.js';

const prefix = (base: bigint) => base.toString().padStart(20, '0');
const OPTIONS = { codec: 'zstd' as const, mode: 'inline' as const, indexIntervalBytes: 1024 };
/** Sources' mtimes, with sub-millisecond parts (a rewrite keeps them to the nanosecond). */
const MTIME_NS = [1_600_000_000_123_456_789n, 1_600_000_100_987_654_321n];

/**
 * A segment of 60 uncompressed batches of 10 random 400-byte values (~250 KiB: the commit's
 * head and tail samples do not cover its middle). `edited`: batch 30's values differ, same size.
 */
function segmentBytes(base: bigint, seed: number, edited = false): Buffer {
  const rand = prng(seed);
  const batches: Uint8Array[] = [];
  for (let b = 0; b < 60; b++) {
    const values = Array.from({ length: 10 }, () => {
      const v = Buffer.alloc(400);
      for (let i = 0; i < v.length; i++) v[i] = Math.floor(rand() * 256);
      if (edited && b === 30) v[0] ^= 0xff;
      return v;
    });
    batches.push(v2Batch(base + BigInt(b * 10), values, 0));
  }
  return Buffer.concat(batches);
}

interface Dir {
  logDir: string;
  stageDir: string;
  pdir: string;
  /** The rolled segments' logs (the last segment, active, is never staged). */
  logs: string[];
  bases: bigint[];
}

async function writeSegment(pdir: string, base: bigint, bytes: Buffer): Promise<string> {
  const log = path.join(pdir, `${prefix(base)}.log`);
  const idx = recoveryIndexes(bytes, base);
  await writeFile(log, bytes);
  await writeFile(path.join(pdir, `${prefix(base)}.index`), idx.index);
  await writeFile(path.join(pdir, `${prefix(base)}.timeindex`), idx.timeindex);
  return log;
}

/** A log dir with one partition: two rolled segments (the sources) and an active one. */
async function logDir(name = 'kafka-logs', root?: string): Promise<Dir> {
  // Real paths: the stage marker records the log dir's.
  const r = root ?? (await realpath(await tmpDir('seglift-stage-checks-')));
  const logDir = path.join(r, name);
  const pdir = path.join(logDir, 'orders-0');
  await mkdir(pdir, { recursive: true });
  const bases = [0n, 600n];
  const logs: string[] = [];
  for (const [i, base] of bases.entries()) {
    const log = await writeSegment(pdir, base, segmentBytes(base, 10 + i));
    setMtimeNs(log, MTIME_NS[i]);
    logs.push(log);
  }
  await writeFile(path.join(pdir, `${prefix(1200n)}.log`), v2Batch(1200n, [Buffer.from('live')], 0));
  return { logDir, stageDir: path.join(r, 'stage'), pdir, logs, bases };
}

const staged = (d: Dir, base: bigint, suffix: string) =>
  path.join(d.stageDir, 'orders-0', `${prefix(base)}${suffix}`);

/** Flips one byte in the middle of `file`, in place: same inode, same size. */
async function flipMiddleByte(file: string): Promise<void> {
  const before = await stat(file);
  const fh = await open(file, 'r+');
  try {
    const at = Math.floor(before.size / 2);
    const b = Buffer.alloc(1);
    await fh.read(b, 0, 1, at);
    b[0] ^= 0x20;
    await fh.write(b, 0, 1, at);
  } finally {
    await fh.close();
  }
  const after = await stat(file);
  expect([after.ino, after.size]).toEqual([before.ino, before.size]);
}

/** The partition holds converted, verified segments with exactly `expected` records each. */
async function expectConverted(d: Dir, expected: Buffer[]): Promise<void> {
  for (const [i, log] of d.logs.entries()) {
    const bytes = await readFile(log);
    expect(bytes[16], log).toBe(2);
    expect(bytes.equals(expected[i])).toBe(false);
    expect(await independentRecords(bytes)).toEqual(await independentRecords(expected[i]));
    const v = await verifySegment(log);
    expect(v.problems).toEqual([]);
    expect(v.ok).toBe(true);
    const idx = recoveryIndexes(bytes, d.bases[i]);
    expect(await readFile(path.join(d.pdir, `${prefix(d.bases[i])}.index`))).toEqual(idx.index);
    expect(await readFile(path.join(d.pdir, `${prefix(d.bases[i])}.timeindex`))).toEqual(idx.timeindex);
    for (const s of ['.log', '.index', '.timeindex'])
      expect((await stat(path.join(d.pdir, `${prefix(d.bases[i])}${s}`), { bigint: true })).mtimeNs).toBe(
        MTIME_NS[i],
      );
  }
  expect((await readdir(d.pdir)).filter((n) => n.includes('seglift'))).toEqual([]);
  const left = (await readdir(d.stageDir, { recursive: true, withFileTypes: true }))
    .filter((e) => e.isFile())
    .map((e) => e.name);
  expect(left).toEqual([STAGE_DIR_MARKER]);
}

describe('a commit checks the staged files it swaps in', () => {
  for (const suffix of ['.log', '.index']) {
    it(`a byte flipped in the middle of a staged ${suffix} (same size, same inode): discarded, the segment converted from its source at commit, reported`, async () => {
      const d = await logDir();
      const sources = await Promise.all(d.logs.map((l) => readFile(l)));
      const prep = await prepareStage(d.logDir, { ...OPTIONS, stageDir: d.stageDir });
      expect(prep.counts.staged).toBe(2);
      await flipMiddleByte(staged(d, 0n, suffix));
      const commit = await commitStage(d.logDir, { ...OPTIONS, stageDir: d.stageDir });
      const [first, second] = d.logs.map((l) => commit.reports.find((r) => r.path === l)!);
      expect(first).toMatchObject({ result: 'converted', stage: 'corrupt' });
      expect(first.reason).toBe(
        `staged copy failed its check (sha256 of ${prefix(0n)}${suffix} differs from the stage record): converted at commit`,
      );
      expect(first.recordsIn).toBe(600);
      expect(first.recordsOut).toBe(600);
      expect(second).toMatchObject({ result: 'converted', stage: 'committed' });
      expect(commit.counts).toMatchObject({ staged: 1, failedCheck: 1, discarded: 1, convertedAtCommit: 1 });
      expect(commit.summary.failed).toBe(0);
      await expectConverted(d, sources);
    });
  }

  it('an untouched stage is committed whole, every file with its source mtime to the nanosecond', async () => {
    const d = await logDir();
    const sources = await Promise.all(d.logs.map((l) => readFile(l)));
    await prepareStage(d.logDir, { ...OPTIONS, stageDir: d.stageDir });
    for (const base of d.bases)
      for (const s of ['.log', '.index', '.timeindex'])
        expect((await stat(staged(d, base, s), { bigint: true })).mtimeNs).toBe(
          MTIME_NS[d.bases.indexOf(base)],
        );
    const commit = await commitStage(d.logDir, { ...OPTIONS, stageDir: d.stageDir });
    expect(commit.counts).toMatchObject({ staged: 2, failedCheck: 0, discarded: 0, convertedAtCommit: 0 });
    await expectConverted(d, sources);
  });
});

describe('a commit sees a source changed behind its identity (ctime)', () => {
  it('written in the middle with its size and mtime put back: stale, converted from what is there now', async () => {
    const d = await logDir();
    await prepareStage(d.logDir, { ...OPTIONS, stageDir: d.stageDir });
    const sp = path.join(d.stageDir, 'orders-0');
    const record = (await readStageRecord(sp, 0n))!;
    const edited = segmentBytes(0n, 10, true);
    // In place: the same inode, the same size, head and tail; only the middle batch differs.
    const fh = await open(d.logs[0], 'r+');
    await fh.write(edited, 0, edited.length, 0);
    await fh.close();
    setMtimeNs(d.logs[0], MTIME_NS[0]);
    const now = (await sourceIdentity(d.logs[0]))!;
    expect(pick(now)).toEqual(pick(record.source));
    expect(await sampleDigest(d.logs[0], now.size)).toBe(record.source.sampleSha256);
    expect(now.ctimeNs).not.toBe(record.source.ctimeNs);
    expect(await staleReason(record, d.logs[0], stageOptionsKey(OPTIONS), sp)).toBe('changed');
    const commit = await commitStage(d.logDir, { ...OPTIONS, stageDir: d.stageDir });
    expect(commit.reports.find((r) => r.path === d.logs[0])).toMatchObject({
      result: 'converted',
      stage: 'discarded',
    });
    await expectConverted(d, [edited, segmentBytes(600n, 11)]);
  });

  it('deleted and recreated under the same inode number, size and mtime: stale, converted from the new file', async () => {
    const d = await logDir();
    await prepareStage(d.logDir, { ...OPTIONS, stageDir: d.stageDir });
    const sp = path.join(d.stageDir, 'orders-0');
    const record = (await readStageRecord(sp, 0n))!;
    const edited = segmentBytes(0n, 10, true);
    // ext4 and xfs mostly hand a just-freed inode number to the next file made in the directory.
    let reused = false;
    for (let i = 0; i < 20 && !reused; i++) {
      await unlink(d.logs[0]);
      await writeFile(d.logs[0], edited);
      reused = String((await stat(d.logs[0], { bigint: true })).ino) === record.source.ino;
    }
    if (!reused) {
      // Another process took it (or tmpfs, which never reuses one): the record is pointed at the
      // new inode instead, which is the same case for every check the commit makes.
      const file = staged(d, 0n, '.seglift-stage.json');
      record.source.ino = String((await stat(d.logs[0], { bigint: true })).ino);
      await writeFile(file, JSON.stringify(record));
    }
    setMtimeNs(d.logs[0], MTIME_NS[0]);
    const now = (await sourceIdentity(d.logs[0]))!;
    expect(pick(now)).toEqual(pick(record.source));
    expect(await sampleDigest(d.logs[0], now.size)).toBe(record.source.sampleSha256);
    const commit = await commitStage(d.logDir, { ...OPTIONS, stageDir: d.stageDir });
    expect(commit.reports.find((r) => r.path === d.logs[0])).toMatchObject({
      result: 'converted',
      stage: 'discarded',
    });
    await expectConverted(d, [edited, segmentBytes(600n, 11)]);
  });

  it("an older seglift's record (no ctimeNs) never matches: discarded, converted at commit", async () => {
    const d = await logDir();
    const sources = await Promise.all(d.logs.map((l) => readFile(l)));
    await prepareStage(d.logDir, { ...OPTIONS, stageDir: d.stageDir });
    const file = staged(d, 0n, '.seglift-stage.json');
    const r = JSON.parse(await readFile(file, 'utf8'));
    delete r.source.ctimeNs;
    r.version = 1;
    await writeFile(file, JSON.stringify(r));
    const commit = await commitStage(d.logDir, { ...OPTIONS, stageDir: d.stageDir });
    expect(commit.reports.find((x) => x.path === d.logs[0])).toMatchObject({
      result: 'converted',
      stage: 'discarded',
    });
    expect(commit.counts).toMatchObject({ staged: 1, discarded: 1, convertedAtCommit: 1 });
    await expectConverted(d, sources);
  });
});

/** An identity without its ctime: what the identity was before ctime was part of it. */
function pick(i: { dev: string; ino: string; size: number; mtimeNs: string }) {
  return { dev: i.dev, ino: i.ino, size: i.size, mtimeNs: i.mtimeNs };
}

/** Every file under `dir`, by relative path, with its bytes and mtime. */
async function snapshot(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const e of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!e.isFile()) continue;
    const f = path.join(e.parentPath, e.name);
    out[path.relative(dir, f)] =
      `${(await readFile(f)).toString('base64')} ${(await stat(f, { bigint: true })).mtimeNs}`;
  }
  return out;
}

describe('a stage dir serves the log dir it was prepared for', () => {
  it("preparing or committing log dir B with A's stage dir is refused, naming both; nothing written", async () => {
    const a = await logDir('logs-a');
    const b = await logDir('logs-b', path.dirname(a.logDir));
    await prepareStage(a.logDir, { ...OPTIONS, stageDir: a.stageDir });
    const [stageBefore, bBefore] = [await snapshot(a.stageDir), await snapshot(b.logDir)];
    for (const run of [prepareStage, commitStage]) {
      const err = await run(b.logDir, { ...OPTIONS, stageDir: a.stageDir }).catch((e) => e);
      expect(err).toBeInstanceOf(StageDirError);
      expect(err.message).toContain(`prepared for the log dir ${a.logDir}, not ${b.logDir}`);
    }
    expect(await snapshot(a.stageDir)).toEqual(stageBefore);
    expect(await snapshot(b.logDir)).toEqual(bBefore);
    // A's own commit still takes all of it.
    const commit = await commitStage(a.logDir, { ...OPTIONS, stageDir: a.stageDir });
    expect(commit.counts).toMatchObject({ staged: 2, discarded: 0 });
  });

  it("an older marker's one line names its log dir; a marker naming none is rewritten only while nothing is staged", async () => {
    const a = await logDir('logs-a');
    const b = await logDir('logs-b', path.dirname(a.logDir));
    const marker = path.join(a.stageDir, STAGE_DIR_MARKER);
    await prepareStage(a.logDir, { ...OPTIONS, stageDir: a.stageDir });
    // The first versions' marker.
    await writeFile(marker, `seglift stage dir for ${a.logDir}\n`);
    expect((await prepareStage(a.logDir, { ...OPTIONS, stageDir: a.stageDir })).counts.alreadyStaged).toBe(2);
    await expect(prepareStage(b.logDir, { ...OPTIONS, stageDir: a.stageDir })).rejects.toThrow(
      /prepared for the log dir .*logs-a, not .*logs-b/,
    );
    // Naming none (a prepare that died writing it) beside staged segments: whose are they?
    await writeFile(marker, '');
    await expect(prepareStage(a.logDir, { ...OPTIONS, stageDir: a.stageDir })).rejects.toThrow(
      /does not say which log dir it was prepared for, and it holds staged files/,
    );
    // Beside nothing: made this log dir's.
    const fresh = path.join(path.dirname(a.logDir), 'stage-b');
    await mkdir(fresh);
    await writeFile(path.join(fresh, STAGE_DIR_MARKER), '');
    expect((await prepareStage(b.logDir, { ...OPTIONS, stageDir: fresh })).counts.staged).toBe(2);
    expect(JSON.parse(await readFile(path.join(fresh, STAGE_DIR_MARKER), 'utf8'))).toEqual({
      tool: 'seglift',
      kind: 'stage-dir',
      logDir: b.logDir,
    });
  });
});

/** The record of `base` in the stage, edited by `edit` and written back in place (a forger's). */
async function forgeRecord(d: Dir, base: bigint, edit: (r: Record<string, unknown>) => void): Promise<void> {
  const file = staged(d, base, '.seglift-stage.json');
  const r = JSON.parse(await readFile(file, 'utf8'));
  edit(r);
  await writeFile(file, JSON.stringify(r));
}

/** What the record of a staged file would say of it now: size, inode, sha256. */
async function fileEntry(file: string) {
  const st = await stat(file, { bigint: true });
  const sha256 = createHash('sha256')
    .update(await readFile(file))
    .digest('hex');
  return { size: Number(st.size), ino: String(st.ino), sha256 };
}

describe("a commit swaps in only this segment's rewrite, and reports every staged copy it discards (issue 32)", () => {
  it("segment 600's staged files under 0's names, 0's record rewritten to match them (sizes, inodes, sha256, counts): 0 is converted from its source, with a warning", async () => {
    const d = await logDir();
    const sources = await Promise.all(d.logs.map((l) => readFile(l)));
    await prepareStage(d.logDir, { ...OPTIONS, stageDir: d.stageDir });
    const other = JSON.parse(await readFile(staged(d, 600n, '.seglift-stage.json'), 'utf8'));
    const files: Record<string, unknown> = {};
    for (const s of ['.log', '.index', '.timeindex']) {
      await unlink(staged(d, 0n, s));
      await copyFile(staged(d, 600n, s), staged(d, 0n, s));
      files[s] = await fileEntry(staged(d, 0n, s));
    }
    await forgeRecord(d, 0n, (r) => {
      r.files = files;
      r.counts = other.counts;
    });
    const commit = await commitStage(d.logDir, { ...OPTIONS, stageDir: d.stageDir });
    const [first, second] = d.logs.map((l) => commit.reports.find((r) => r.path === l)!);
    expect(first).toMatchObject({ result: 'converted', stage: 'corrupt' });
    expect(first.reason).toBe(
      `staged copy of ${prefix(0n)} discarded (not this segment's rewrite: the staged ${prefix(0n)}.log starts at offset 600, the source at 0 (segment 0)): converted at commit`,
    );
    expect(second).toMatchObject({ result: 'converted', stage: 'committed' });
    expect(commit.counts).toMatchObject({ staged: 1, failedCheck: 1, discarded: 1, convertedAtCommit: 1 });
    // Segment 0 holds its own records again, none of 600's.
    await expectConverted(d, sources);
  });

  it('staged files that are whole but not the ones recorded (a truncated .log, swapped .index files, an .index short of an entry recorded as its own): reported, converted', async () => {
    const cases: [string, (d: Dir) => Promise<void>, (d: Dir) => Promise<string>][] = [
      [
        'truncated .log',
        async (d) => truncate(staged(d, 0n, '.log'), 1000),
        async () => `staged ${prefix(0n)}.log is 1000 bytes, the stage record says `,
      ],
      [
        'swapped .index',
        async (d) => {
          const [a, b] = [staged(d, 0n, '.index'), staged(d, 600n, '.index')];
          await rename(a, `${a}.x`);
          await rename(b, a);
          await rename(`${a}.x`, b);
        },
        async () => `staged ${prefix(0n)}.index is inode `,
      ],
      [
        'an .index short of its last entry, recorded so',
        async (d) => {
          // (600's own .index would do no harm: same batch sizes, same relative offsets.)
          const file = staged(d, 0n, '.index');
          const bytes = await readFile(file);
          await unlink(file);
          await writeFile(file, bytes.subarray(0, bytes.length - 8));
          const entry = await fileEntry(file);
          await forgeRecord(d, 0n, (r) => {
            (r.files as Record<string, unknown>)['.index'] = entry;
          });
        },
        async () =>
          `not this segment's rewrite: the staged ${prefix(0n)}.index is not the index of the staged ${prefix(0n)}.log`,
      ],
    ];
    for (const [what, damage, reason] of cases) {
      const d = await logDir();
      const sources = await Promise.all(d.logs.map((l) => readFile(l)));
      await prepareStage(d.logDir, { ...OPTIONS, stageDir: d.stageDir });
      await damage(d);
      const expected = await reason(d);
      const commit = await commitStage(d.logDir, { ...OPTIONS, stageDir: d.stageDir });
      const first = commit.reports.find((r) => r.path === d.logs[0])!;
      expect(first, what).toMatchObject({ result: 'converted', stage: 'corrupt' });
      expect(first.reason, what).toContain(expected);
      expect(commit.counts.failedCheck, what).toBe(what === 'swapped .index' ? 2 : 1);
      await expectConverted(d, sources);
    }
  });

  it('a record that is not one (not JSON, a field of another type, a FIFO in its place) or that falsely says "already in the target codec": discarded, converted, reported; never a hang', async () => {
    const cases: [string, (d: Dir) => Promise<void>, string][] = [
      [
        'not JSON',
        async (d) => writeFile(staged(d, 0n, '.seglift-stage.json'), '{"tool":"seglift",'),
        'stage record unreadable: ',
      ],
      [
        'files: 5',
        async (d) =>
          forgeRecord(d, 0n, (r) => {
            r.files = 5;
          }),
        'stage record has files that are neither null nor an object',
      ],
      [
        'a FIFO',
        async (d) => {
          await unlink(staged(d, 0n, '.seglift-stage.json'));
          execFileSync('mkfifo', [staged(d, 0n, '.seglift-stage.json')]);
        },
        'stage record is not a regular file (a FIFO)',
      ],
      [
        'files: null (the source is uncompressed, the target zstd)',
        async (d) =>
          forgeRecord(d, 0n, (r) => {
            r.files = null;
          }),
        'stage record says the source is already in the target codec, and it is not',
      ],
    ];
    for (const [what, damage, reason] of cases) {
      const d = await logDir();
      const sources = await Promise.all(d.logs.map((l) => readFile(l)));
      await prepareStage(d.logDir, { ...OPTIONS, stageDir: d.stageDir });
      await damage(d);
      const commit = await commitStage(d.logDir, { ...OPTIONS, stageDir: d.stageDir });
      const first = commit.reports.find((r) => r.path === d.logs[0])!;
      expect(first, what).toMatchObject({ result: 'converted', stage: 'corrupt' });
      expect(first.reason, what).toContain(`staged copy of ${prefix(0n)} discarded (${reason}`);
      expect(first.recordsOut, what).toBe(600);
      expect(commit.counts, what).toMatchObject({ staged: 1, failedCheck: 1 });
      await expectConverted(d, sources);
    }
  }, 60_000);

  it('a FIFO or a /dev/zero link in place of the stage dir marker: a typed error at once, nothing written', async () => {
    for (const put of [(m: string) => execFileSync('mkfifo', [m]), (m: string) => symlink('/dev/zero', m)]) {
      const d = await logDir();
      await prepareStage(d.logDir, { ...OPTIONS, stageDir: d.stageDir });
      const marker = path.join(d.stageDir, STAGE_DIR_MARKER);
      await unlink(marker);
      await put(marker);
      const sources = await Promise.all(d.logs.map((l) => readFile(l)));
      await expect(commitStage(d.logDir, { ...OPTIONS, stageDir: d.stageDir })).rejects.toThrow(
        /stage dir marker \.seglift-stage is not a regular file \(a (FIFO|character device)\)/,
      );
      for (const [i, l] of d.logs.entries()) expect((await readFile(l)).equals(sources[i])).toBe(true);
    }
  }, 30_000);
});
