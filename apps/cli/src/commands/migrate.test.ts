import { execFileSync, spawn } from 'node:child_process';
import {
  closeSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import path from 'node:path';
import { CompressionType } from '@seglift/format';
import { acquireLogDirLock } from '@seglift/segment';
import { built, faultEnv, holdLockAsABroker, needs, python3 } from '@seglift/testkit';
import { describe, expect, it } from 'vitest';
import { lines, run } from '../test-support/run.js';
import { encodeLegacyEntry, tmpDir, utf8, v2Batch, writeSegment } from '../test-support/segments.js';

function legacy(from: number, n: number) {
  return Array.from({ length: n }, (_, i) =>
    encodeLegacyEntry(BigInt(from + i), {
      magic: 0,
      key: utf8(`k${from + i}`),
      value: utf8('payload '.repeat(30)),
    }),
  );
}

/** Two partitions with two closed segments and an active one each. */
function logDir(): string {
  const dir = tmpDir();
  for (const part of ['orders-0', 'orders-1']) {
    const p = path.join(dir, part);
    writeSegment(p, 0n, legacy(0, 10));
    writeSegment(p, 10n, [v2Batch(10n, 10, CompressionType.GZIP)]);
    writeSegment(p, 20n, legacy(20, 3));
  }
  return dir;
}

describe('seglift migrate', () => {
  it('converts the closed segments of two partitions in place and leaves the active ones untouched', async () => {
    const dir = logDir();
    const active0 = path.join(dir, 'orders-0', '00000000000000000020.log');
    const activeBefore = readFileSync(active0);
    const activeMtime = statSync(active0).mtimeMs;
    const r = await run(['migrate', dir, '--codec', 'zstd', '--concurrency', '2', '--json']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const objs = lines(r.stdout).map((l) => JSON.parse(l));
    const summary = objs.at(-1);
    expect(summary).toMatchObject({
      type: 'summary',
      partitions: 2,
      segments: 6,
      converted: 4,
      skipped: 2,
      failed: 0,
    });
    expect(readFileSync(active0).equals(activeBefore)).toBe(true);
    expect(statSync(active0).mtimeMs).toBe(activeMtime);
    for (const part of ['orders-0', 'orders-1']) {
      for (const base of ['00000000000000000000', '00000000000000000010']) {
        const seg = path.join(dir, part, `${base}.log`);
        const v = await run(['verify', seg]);
        expect(v.code, v.stdout).toBe(0);
        const dump = await run(['inspect', seg]);
        const batches = lines(dump.stdout).filter((l) => l.startsWith('baseOffset: '));
        expect(batches.length).toBeGreaterThan(0);
        expect(batches.every((l) => l.includes(' magic: 2 compresscodec: zstd '))).toBe(true);
      }
    }
    // A second run finds nothing left to do.
    const again = await run(['migrate', dir, '--codec', 'zstd', '--quiet']);
    expect(again.code).toBe(0);
    expect(lines(again.stdout).at(-1)).toMatch(/^converted 0 segments, skipped 6, failed 0: /);
  });

  it('prints a table and a summary line; --include-active converts the active segments too', async () => {
    const dir = logDir();
    const r = await run(['migrate', path.join(dir, 'orders-1'), '--codec', 'gzip', '--include-active']);
    expect(r.code).toBe(0);
    const out = lines(r.stdout);
    expect(out[0]).toMatch(/^segment\s+result\s+in\s+out\s+ratio/);
    // The gzip segment is already in the target codec: skipped, not rewritten.
    expect(out.some((l) => /00000000000000000010\.log\s+skipped\s.*already-target-codec/.test(l))).toBe(true);
    expect(out.at(-1)).toMatch(
      /^converted 2 segments, skipped 1, failed 0: .* -> .* \(ratio \d\.\d{3}\) in /,
    );
  });

  it('follows the archive switch (readiness.requireRolled false): each segment, older ones too, once unchanged for quietMs', async () => {
    const dir = logDir();
    const config = path.join(tmpDir(), 'archive.yaml');
    writeFileSync(config, 'readiness:\n  requireRolled: false\n  quietMs: 600000\n');
    const seg = (p: string, base: string) => path.join(dir, p, `000000000000000000${base}.log`);
    const old = new Date(Date.now() - 3_600_000);
    for (const base of ['00', '10', '20']) utimesSync(seg('orders-0', base), old, old);
    // orders-1: a copy that wrote the files out of order is still writing an older segment.
    for (const base of ['00', '20']) utimesSync(seg('orders-1', base), old, old);
    const r = await run(['migrate', dir, '--config', config, '--concurrency', '1', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const reports = lines(r.stdout)
      .map((l) => JSON.parse(l))
      .filter((o) => o.type === 'segment');
    const result = (p: string, base: string) => {
      const o = reports.find((x) => x.path === seg(p, base));
      return `${o?.result} ${o?.reason ?? ''}`.trim();
    };
    // Quiet for an hour: converted, the newest segment included.
    expect(['00', '10', '20'].map((b) => result('orders-0', b))).toEqual([
      'converted',
      'converted',
      'converted',
    ]);
    // Just written (a copy may still be writing it): left alone, and the report says why.
    expect(['00', '10', '20'].map((b) => result('orders-1', b))).toEqual([
      'converted',
      'skipped still-changing',
      'converted',
    ]);
    const text = await run(['migrate', dir, '--config', config, '--quiet']);
    expect(text.stdout).toMatch(
      /settings: .*archive: newest segments once unchanged for 600000 ms \(readiness\.requireRolled false, file .*archive\.yaml\)/,
    );
  });

  it('a corrupt segment fails the run with exit 1 and its reason', async () => {
    const dir = logDir();
    const bad = path.join(dir, 'orders-0', '00000000000000000030.log');
    const b = Buffer.from(v2Batch(30n, 2));
    b[b.length - 1] ^= 1;
    writeSegment(path.join(dir, 'orders-0'), 30n, [b]);
    writeSegment(path.join(dir, 'orders-0'), 40n, [v2Batch(40n, 1)]);
    const r = await run(['migrate', path.join(dir, 'orders-0'), '--codec', 'zstd', '--quiet']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`error[CRC_MISMATCH]: `);
    expect(r.stderr).toContain(bad);
  });

  it('usage errors exit 2', async () => {
    const dir = logDir();
    expect((await run(['migrate'])).code).toBe(2);
    expect((await run(['migrate', '--codec', 'zstd'])).code).toBe(2);
    expect((await run(['migrate', dir, '--codec', 'zstd', '--concurrency', '0'])).code).toBe(2);
    expect((await run(['migrate', tmpDir(), '--codec', 'zstd'])).code).toBe(2);
    const missing = await run(['migrate', '/nonexistent-seglift-dir', '--codec', 'zstd']);
    expect(missing.code).toBe(2);
    expect(missing.stderr.split('\n')[0]).toBe('error: /nonexistent-seglift-dir: no such file or directory');
  });
});

/** Every file under `dir` by relative path, with its bytes. */
function snapshot(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  // Partition dirs only: a log dir's `.lock` is the broker's (seglift takes it too).
  for (const part of readdirSync(dir).filter((d) => statSync(path.join(dir, d)).isDirectory())) {
    for (const f of readdirSync(path.join(dir, part)))
      out.set(`${part}/${f}`, readFileSync(path.join(dir, part, f)).toString('base64'));
  }
  return out;
}

describe('seglift migrate --prepare / --commit', () => {
  it('--max-io-bytes-per-second: the summary names the limit once it throttled (JSON: ioLimit)', async () => {
    const dir = logDir();
    const stage = path.join(tmpDir(), 'stage');
    const args = ['migrate', dir, '--prepare', '--stage-dir', stage, '--codec', 'zstd', '--no-nice'];
    const r = await run([...args, '--max-io-bytes-per-second', '16k', '--quiet']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(lines(r.stdout).at(-1)).toMatch(
      /^io limit 16\.0 KiB\/s: \d+(\.\d)? KiB read and written, threads waited \d+(\.\d)? m?s in all$/,
    );
    const j = await run([...args, '--json'], { SEGLIFT_IO_MAX_BYTES_PER_SECOND: '1000' });
    expect(j.code).toBe(0);
    const summary = JSON.parse(lines(j.stdout).at(-1)!);
    // Everything was staged by the first run: only the stage records and samples were read.
    expect(summary.ioLimit).toMatchObject({ maxBytesPerSecond: 1000 });
    expect((await run([...args, '--max-io-bytes-per-second', '0'])).stderr).toMatch(
      /--max-io-bytes-per-second must be between 1 and/,
    );
  });
  it('prepare leaves the log dir as it was; commit swaps in from the stage and says so', async () => {
    const dir = logDir();
    const stage = path.join(tmpDir(), 'stage');
    const before = snapshot(dir);
    const prep = await run(['migrate', dir, '--prepare', '--stage-dir', stage, '--codec', 'zstd', '--json']);
    expect(prep.stderr).toBe('');
    expect(prep.code).toBe(0);
    const prepSummary = lines(prep.stdout)
      .map((l) => JSON.parse(l))
      .at(-1);
    expect(prepSummary).toMatchObject({ phase: 'prepare', stage: { staged: 4, changed: 0, discarded: 0 } });
    expect(snapshot(dir)).toEqual(before);
    const again = await run(['migrate', dir, '--prepare', '--stage-dir', stage, '--codec', 'zstd']);
    expect(again.code).toBe(0);
    expect(lines(again.stdout).at(-1)).toBe(
      'stage: staged 0, already staged 4, changed while read 0, discarded 0',
    );
    const commit = await run(['migrate', dir, '--commit', '--codec', 'zstd'], { SEGLIFT_STAGE_DIR: stage });
    expect(commit.stderr).toBe('');
    expect(commit.code).toBe(0);
    expect(lines(commit.stdout).at(-1)).toBe(
      'stage: committed from stage 4, converted at commit 0, discarded 0',
    );
    for (const part of ['orders-0', 'orders-1']) {
      for (const base of ['00000000000000000000', '00000000000000000010']) {
        const v = await run(['verify', path.join(dir, part, `${base}.log`)]);
        expect(v.code, v.stdout).toBe(0);
      }
      expect(readdirSync(path.join(dir, part)).filter((n) => n.includes('seglift'))).toEqual([]);
      // The active segment is untouched.
      const active = `${part}/00000000000000000020.log`;
      expect(snapshot(dir).get(active)).toBe(before.get(active));
    }
  });

  it('usage: one step at a time, a stage dir given, outside the log dir, one dir', async () => {
    const dir = logDir();
    const both = await run(['migrate', dir, '--prepare', '--commit', '--stage-dir', '/tmp/x']);
    expect(both.code).toBe(2);
    expect((await run(['migrate', dir, '--prepare'])).stderr).toMatch(/needs --stage-dir/);
    expect((await run(['migrate', dir, '--stage-dir', '/tmp/x'])).code).toBe(2);
    const inside = await run(['migrate', dir, '--prepare', '--stage-dir', path.join(dir, 'stage')]);
    expect(inside.code).toBe(2);
    expect(inside.stderr).toMatch(/error\[STAGE_DIR\].*is inside the log dir/);
    expect((await run(['migrate', dir, dir, '--commit', '--stage-dir', '/tmp/x'])).stderr).toMatch(
      /one <dir>/,
    );
    expect(
      (await run(['migrate', dir, '--commit', '--stage-dir', path.join(tmpDir(), 'none')])).stderr,
    ).toMatch(/run --prepare first/);
  });
});

/** Gives `file` the mtime `ns` (nanoseconds) with touch(1): Node's utimes keeps microseconds at best. */
function touchNs(file: string, ns: bigint): void {
  const frac = String(ns % 1_000_000_000n).padStart(9, '0');
  execFileSync('touch', ['-m', '-d', `@${ns / 1_000_000_000n}.${frac}`, file]);
  expect(statSync(file, { bigint: true }).mtimeNs).toBe(ns);
}

const mtimeNs = (file: string) => statSync(file, { bigint: true }).mtimeNs;
const SEGMENTS = ['00000000000000000000', '00000000000000000010'];
/** Sources' mtimes with sub-millisecond parts, per closed segment. */
const NS = [1_600_000_000_123_456_789n, 1_600_000_050_000_000_001n];

/** The records a v2 segment holds, by the count of each batch `inspect` prints (as kafka-dump-log). */
async function recordCount(log: string): Promise<number> {
  const dump = await run(['inspect', log]);
  return lines(dump.stdout)
    .map((l) => /^baseOffset: \d+ lastOffset: \d+ count: (\d+) /.exec(l))
    .reduce((n, m) => n + (m ? Number(m[1]) : 0), 0);
}

/** Every file under `dir` (recursively) with its bytes and mtime. */
function tree(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const e of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!e.isFile()) continue;
    const f = path.join(e.parentPath, e.name);
    out.set(path.relative(dir, f), `${readFileSync(f).toString('base64')} ${mtimeNs(f)}`);
  }
  return out;
}

describe('seglift migrate: what a commit checks, and mtimes to the nanosecond', () => {
  it('a FIFO in place of a stage record: the commit never waits on it (it held the log dir lock for ever): converted, a warning; exit 0', async () => {
    const dir = logDir();
    const stage = path.join(tmpDir(), 'stage');
    const prep = await run(['migrate', dir, '--prepare', '--stage-dir', stage, '--codec', 'zstd', '--quiet']);
    expect(prep.code).toBe(0);
    const record = path.join(stage, 'orders-0', `${SEGMENTS[0]}.seglift-stage.json`);
    rmSync(record);
    execFileSync('mkfifo', [record]);
    const commit = await run([
      'migrate',
      dir,
      '--commit',
      '--stage-dir',
      stage,
      '--codec',
      'zstd',
      '--quiet',
    ]);
    expect(commit.code, commit.stderr).toBe(0);
    const log0 = path.join(dir, 'orders-0', `${SEGMENTS[0]}.log`);
    expect(lines(commit.stderr)).toEqual([
      `warning: ${log0}: staged copy of ${SEGMENTS[0]} discarded (stage record is not a regular file (a FIFO)): converted at commit; the stage dir holds what prepare did not leave there (its disk, or someone writing there)`,
    ]);
    expect(lines(commit.stdout).at(-1)).toBe(
      'stage: committed from stage 3, converted at commit 1, discarded 1 (1 failed its check)',
    );
    expect((await run(['verify', log0])).code).toBe(0);
  }, 60_000);

  it('a staged .log with a byte flipped in the middle is not swapped in: converted at commit, said in the table, the stage line and stderr; exit 0', async () => {
    const dir = logDir();
    const stage = path.join(tmpDir(), 'stage');
    for (const part of ['orders-0', 'orders-1'])
      for (const [i, base] of SEGMENTS.entries()) touchNs(path.join(dir, part, `${base}.log`), NS[i]);
    const prep = await run(['migrate', dir, '--prepare', '--stage-dir', stage, '--codec', 'zstd', '--quiet']);
    expect(prep.code).toBe(0);
    // Same size, same inode: only its bytes tell.
    const bad = path.join(stage, 'orders-0', `${SEGMENTS[0]}.log`);
    const before = statSync(bad);
    const fd = openSync(bad, 'r+');
    const b = Buffer.alloc(1);
    const at = Math.floor(before.size / 2);
    readSync(fd, b, 0, 1, at);
    b[0] ^= 0x20;
    writeSync(fd, b, 0, 1, at);
    closeSync(fd);
    expect([statSync(bad).ino, statSync(bad).size]).toEqual([before.ino, before.size]);

    const commit = await run(['migrate', dir, '--commit', '--stage-dir', stage, '--codec', 'zstd']);
    expect(commit.code, commit.stderr).toBe(0);
    const out = lines(commit.stdout);
    const log0 = path.join(dir, 'orders-0', `${SEGMENTS[0]}.log`);
    const note = `staged copy failed its check (sha256 of ${SEGMENTS[0]}.log differs from the stage record): converted at commit`;
    const row = out.find((l) => l.startsWith(`${log0} `)) ?? '';
    expect(row).toMatch(/^\S+\s+converted\s/);
    expect(row.endsWith(note)).toBe(true);
    expect(out.at(-1)).toBe(
      'stage: committed from stage 3, converted at commit 1, discarded 1 (1 failed its check)',
    );
    expect(lines(commit.stderr)).toEqual([
      `warning: ${log0}: ${note}; the stage dir holds what prepare did not leave there (its disk, or someone writing there)`,
    ]);
    for (const part of ['orders-0', 'orders-1']) {
      for (const [i, base] of SEGMENTS.entries()) {
        const log = path.join(dir, part, `${base}.log`);
        const v = await run(['verify', log]);
        expect(v.code, v.stdout).toBe(0);
        // logDir(): ten records in each closed segment.
        expect(await recordCount(log)).toBe(10);
        for (const s of ['.log', '.index', '.timeindex'])
          expect(mtimeNs(path.join(dir, part, `${base}${s}`)), `${part}/${base}${s}`).toBe(NS[i]);
      }
    }
  });

  it("prepare of log dir B into A's stage dir is refused with exit 2, naming both; nothing written", async () => {
    const a = logDir();
    const b = logDir();
    const stage = path.join(tmpDir(), 'stage');
    expect(
      (await run(['migrate', a, '--prepare', '--stage-dir', stage, '--codec', 'zstd', '--quiet'])).code,
    ).toBe(0);
    const [stageBefore, bBefore] = [tree(stage), tree(b)];
    for (const step of ['--prepare', '--commit']) {
      const r = await run(['migrate', b, step, '--stage-dir', stage, '--codec', 'zstd']);
      expect(r.code).toBe(2);
      expect(r.stderr.split('\n')[0]).toBe(
        `error[STAGE_DIR]: stage dir ${stage} was prepared for the log dir ${realpathSync(a)}, not ${realpathSync(b)} (${b}): one stage dir serves one log dir; give each its own (file ${stage})`,
      );
      expect(r.stdout).toBe('');
    }
    expect(tree(stage)).toEqual(stageBefore);
    expect(tree(b)).toEqual(bBefore);
  });

  it('migrate and convert --out give the new files the source .log mtime to the nanosecond', async () => {
    const dir = logDir();
    for (const [i, base] of SEGMENTS.entries()) touchNs(path.join(dir, 'orders-0', `${base}.log`), NS[i]);
    const out = path.join(tmpDir(), 'out');
    const c = await run([
      'convert',
      path.join(dir, 'orders-0', `${SEGMENTS[0]}.log`),
      '--out',
      out,
      '--codec',
      'zstd',
    ]);
    expect(c.code, c.stderr).toBe(0);
    for (const s of ['.log', '.index', '.timeindex'])
      expect(mtimeNs(path.join(out, `${SEGMENTS[0]}${s}`))).toBe(NS[0]);
    const m = await run(['migrate', path.join(dir, 'orders-0'), '--codec', 'zstd', '--quiet']);
    expect(m.code, m.stderr).toBe(0);
    for (const [i, base] of SEGMENTS.entries())
      for (const s of ['.log', '.index', '.timeindex'])
        expect(mtimeNs(path.join(dir, 'orders-0', `${base}${s}`)), `${base}${s}`).toBe(NS[i]);
  });
});

describe('seglift migrate, interrupted', () => {
  const cli = path.resolve(import.meta.dirname, '../../dist/seglift');
  /** 24 partitions, each with a closed ~1 MiB segment of v0 messages and an active one. */
  function bigDir(): string {
    const dir = tmpDir();
    const closed = Buffer.concat(legacy(0, 4000));
    for (let i = 0; i < 24; i++) {
      const p = path.join(dir, `big-${i}`);
      writeSegment(p, 0n, [closed]);
      writeSegment(p, 4000n, legacy(4000, 2));
    }
    return dir;
  }
  needs(built(cli)).it(
    'SIGTERM ends a two-phase commit within seconds, a FIFO in place of a stage record included (it hung on it, holding the log dir lock)',
    async () => {
      const dir = bigDir();
      const stage = path.join(tmpDir(), 'stage');
      expect(
        (await run(['migrate', dir, '--prepare', '--stage-dir', stage, '--codec', 'zstd', '--quiet'])).code,
      ).toBe(0);
      const record = path.join(stage, 'big-0', '00000000000000000000.seglift-stage.json');
      rmSync(record);
      execFileSync('mkfifo', [record]);
      const child = spawn(cli, [
        'migrate',
        dir,
        '--commit',
        '--stage-dir',
        stage,
        '--codec',
        'zstd',
        '--json',
      ]);
      let out = '';
      child.stdout.on('data', (b: Buffer) => {
        out += b.toString();
        if (out.includes('"type":"segment"')) child.kill('SIGTERM');
      });
      const started = Date.now();
      const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
      // Stopped by the signal (143), or its work done (the summary written) before the signal
      // landed: never waiting on the FIFO.
      expect(code === 143 || out.includes('"type":"summary"'), `exit ${code}: ${out.slice(-300)}`).toBe(true);
      expect(Date.now() - started).toBeLessThan(30_000);
    },
    60_000,
  );

  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    needs(built(cli)).it(
      `${signal} stops handing out segments: the rest are not started, exit ${signal === 'SIGINT' ? 130 : 143}, no temp files, a rerun resumes`,
      async () => {
        const dir = bigDir();
        // The second conversion is held (testkit's fault-preload.mjs) until the signal has been taken in,
        // so the run is stopped mid-way whatever the speed of this machine.
        const holdFile = path.join(tmpDir(), 'hold');
        writeFileSync(holdFile, '');
        const child = spawn(cli, ['migrate', dir, '--codec', 'zstd', '--concurrency', '1', '--json'], {
          env: {
            ...process.env,
            ...faultEnv({
              SEGLIFT_TEST_HOLD_AFTER: 'create:.log.seglift-tmp@2',
              SEGLIFT_TEST_HOLD_WHILE: holdFile,
            }),
          },
        });
        let out = '';
        let err = '';
        let sent = false;
        child.stderr.on('data', (b: Buffer) => {
          err += b.toString();
          if (err.includes('letting the segments in flight')) rmSync(holdFile, { force: true });
        });
        child.stdout.on('data', (b: Buffer) => {
          out += b.toString();
          if (!sent && /"result":"converted"/.test(out)) {
            sent = true;
            child.kill(signal);
          }
        });
        const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
        expect(code).toBe(signal === 'SIGINT' ? 130 : 143);
        const summary = lines(out)
          .map((l) => JSON.parse(l))
          .at(-1);
        expect(summary).toMatchObject({ type: 'summary', interrupted: true, failed: 0 });
        expect(summary.notStarted).toBeGreaterThan(0);
        // The held (second) conversion was stopped mid-way: rolled back, not 'not started'.
        expect(summary.rolledBack).toBe(1);
        expect(summary.converted + summary.rolledBack + summary.notStarted).toBe(24);
        const reports = lines(out)
          .map((l) => JSON.parse(l))
          .filter((r) => r.type === 'segment');
        const rolledBack = reports.filter((r) => r.result === 'rolled-back');
        expect(rolledBack).toHaveLength(1);
        expect(rolledBack[0]).toMatchObject({
          reason: 'interrupted mid-conversion: its output removed, the original left as it was',
          bytesOut: 0,
        });
        expect(reports.filter((r) => r.result === 'failed')).toEqual([]);
        // The summary's bytes are those of the converted segments alone.
        const converted = reports.filter((r) => r.result === 'converted');
        expect(summary.writtenBytesIn).toBe(converted.reduce((n, r) => n + r.bytesIn, 0));
        expect(summary.writtenBytesOut).toBe(converted.reduce((n, r) => n + r.bytesOut, 0));
        expect(lines(err).at(-1)).toBe(
          `${signal === 'SIGINT' ? 'interrupted' : 'terminated'}: ${summary.converted} converted; 1 rolled back and ${summary.notStarted} not started, left as they were; run the same command again to resume`,
        );
        expect(err).not.toMatch(/error/);
        const leftovers = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((n) =>
          /seglift|\.swap$/.test(n),
        );
        expect(leftovers).toEqual([]);
        const again = await run(['migrate', dir, '--codec', 'zstd', '--json']);
        expect(again.code).toBe(0);
        expect(
          lines(again.stdout)
            .map((l) => JSON.parse(l))
            .at(-1),
        ).toMatchObject({
          converted: summary.notStarted + summary.rolledBack,
          skipped: 24 + summary.converted,
          failed: 0,
        });
      },
      60_000,
    );
  }
});

/** Every file under `dir` with its bytes and mtime: what "nothing changed" compares. */
function listing(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .map((e) => {
      const p = path.join(e.parentPath, e.name);
      return e.isFile()
        ? `${path.relative(dir, p)} ${statSync(p).mtimeMs} ${readFileSync(p).toString('base64')}`
        : path.relative(dir, p);
    })
    .sort();
}

describe('a log dir whose .lock someone else holds (a broker, another seglift)', () => {
  // The advice fits the command: only migrate has --prepare.
  const advice = {
    migrate: 'stop it first, or use --prepare',
    commit: 'stop it first: the commit swaps in what --prepare staged',
    convert: 'stop it first, or write the result elsewhere with --out DIR',
    tierPrepare: 'stop it first (--dry-run reads without the lock)',
  };
  const refused = (dir: string, pid?: number, says = advice.migrate) =>
    `error[LOG_DIR_LOCKED]: log dir ${dir} is locked${pid === undefined ? '' : ` by pid ${pid}`}: a Kafka broker (or another seglift) is running on it: ${says} (file ${path.join(dir, '.lock')})\n`;

  it('migrate, migrate --commit, convert --in-place and tier-prepare exit 2 with nothing touched, each with its advice; --prepare works', async () => {
    const dir = logDir();
    const stage = path.join(tmpDir(), 'stage');
    const other = acquireLogDirLock(dir);
    try {
      const before = listing(dir);
      const m = await run(['migrate', dir, '--codec', 'zstd']);
      expect(m).toEqual({ code: 2, stdout: '', stderr: refused(dir) });
      const inPlace = await run([
        'convert',
        path.join(dir, 'orders-0', '00000000000000000000.log'),
        '--in-place',
      ]);
      expect(inPlace).toEqual({ code: 2, stdout: '', stderr: refused(dir, undefined, advice.convert) });
      const tier = await run(['tier-prepare', dir]);
      expect(tier).toEqual({ code: 2, stdout: '', stderr: refused(dir, undefined, advice.tierPrepare) });
      expect(listing(dir)).toEqual(before);
      // Beside a running broker: prepare writes only the stage dir.
      const prep = await run([
        'migrate',
        dir,
        '--prepare',
        '--stage-dir',
        stage,
        '--codec',
        'zstd',
        '--json',
      ]);
      expect(prep.code, prep.stderr).toBe(0);
      expect(JSON.parse(lines(prep.stdout).at(-1)!)).toMatchObject({
        phase: 'prepare',
        stage: { staged: 4 },
      });
      expect(listing(dir)).toEqual(before);
      const commit = await run(['migrate', dir, '--commit', '--stage-dir', stage, '--codec', 'zstd']);
      expect(commit).toEqual({ code: 2, stdout: '', stderr: refused(dir, undefined, advice.commit) });
      expect(listing(dir)).toEqual(before);
    } finally {
      other.release();
    }
    const commit = await run(['migrate', dir, '--commit', '--stage-dir', stage, '--codec', 'zstd', '--json']);
    expect(commit.code, commit.stderr).toBe(0);
    expect(JSON.parse(lines(commit.stdout).at(-1)!)).toMatchObject({ converted: 4, failed: 0 });
  });

  needs(python3).it(
    'held by a process (the F_SETLK lock a JVM takes): the message names its pid',
    async () => {
      const dir = logDir();
      const holder = await holdLockAsABroker(path.join(dir, '.lock'));
      try {
        const before = listing(dir);
        const m = await run(['migrate', dir, '--codec', 'zstd', '--include-active']);
        expect(m).toEqual({ code: 2, stdout: '', stderr: refused(dir, holder.pid) });
        expect(listing(dir)).toEqual(before);
      } finally {
        holder.stdin.end();
        await new Promise((resolve) => holder.once('exit', resolve));
      }
    },
  );

  needs(python3).it(
    'a partition linked in from another disk (t-0 -> OTHER/t-0): the log dir holding the link is locked, however the partition is named within the roots',
    async () => {
      const root = tmpDir();
      const dir = path.join(root, 'kafka-logs');
      const other = path.join(root, 'disk2');
      const part = path.join(other, 't-0');
      writeSegment(part, 0n, legacy(0, 10));
      writeSegment(part, 10n, legacy(10, 3));
      mkdirSync(dir);
      symlinkSync(part, path.join(dir, 't-0'));
      const holder = await holdLockAsABroker(path.join(dir, '.lock'));
      try {
        const before = listing(other);
        const m = await run(['migrate', dir, '--codec', 'zstd']);
        expect(m).toEqual({ code: 2, stdout: '', stderr: refused(dir, holder.pid) });
        // A segment named through the link: the path as given names the log dir.
        const c = await run(['convert', path.join(dir, 't-0', '00000000000000000000.log'), '--in-place']);
        expect(c).toEqual({ code: 2, stdout: '', stderr: refused(dir, holder.pid, advice.convert) });
        // Named by its real location: with roots configured, their walk finds the link.
        const env = { SEGLIFT_ROOTS: root };
        const real = await run(['convert', path.join(part, '00000000000000000000.log'), '--in-place'], env);
        expect(real).toEqual({ code: 2, stdout: '', stderr: refused(dir, holder.pid, advice.convert) });
        const m2 = await run(['migrate', part, '--codec', 'zstd'], env);
        expect(m2).toEqual({ code: 2, stdout: '', stderr: refused(dir, holder.pid) });
        expect(listing(other)).toEqual(before);
      } finally {
        holder.stdin.end();
        await new Promise((resolve) => holder.once('exit', resolve));
      }
      const m = await run(['migrate', dir, '--codec', 'zstd', '--json']);
      expect(m.code, m.stderr).toBe(0);
      expect(JSON.parse(lines(m.stdout).at(-1)!)).toMatchObject({ converted: 1, failed: 0 });
    },
  );

  needs(python3).it(
    "a broker's log dir reached through a link (lk/t-0 -> ld2/t-0, lkdir -> ld2): migrate, convert --in-place and tier-prepare exit 2 naming ld2, nothing touched",
    async () => {
      const root = tmpDir();
      const ld2 = path.join(root, 'ld2');
      for (const part of ['idem-0', 'orders-0', 'clicks-0']) {
        writeSegment(path.join(ld2, part), 0n, legacy(0, 10));
        writeSegment(path.join(ld2, part), 10n, legacy(10, 3));
      }
      const lk = path.join(root, 'lk');
      mkdirSync(lk);
      for (const part of ['idem-0', 'orders-0', 'clicks-0'])
        symlinkSync(path.join(ld2, part), path.join(lk, part));
      const lkdir = path.join(root, 'lkdir');
      symlinkSync(ld2, lkdir);
      const holder = await holdLockAsABroker(path.join(ld2, '.lock'));
      try {
        const before = listing(ld2);
        const tier = await run(['tier-prepare', path.join(lk, 'idem-0')]);
        expect(tier).toEqual({ code: 2, stdout: '', stderr: refused(ld2, holder.pid, advice.tierPrepare) });
        const m = await run(['migrate', path.join(lk, 'orders-0'), '--codec', 'zstd']);
        expect(m).toEqual({ code: 2, stdout: '', stderr: refused(ld2, holder.pid) });
        const seg = (dir: string) => path.join(dir, 'clicks-0', '00000000000000000000.log');
        const c = await run(['convert', seg(lk), '--in-place', '--codec', 'zstd']);
        expect(c).toEqual({ code: 2, stdout: '', stderr: refused(ld2, holder.pid, advice.convert) });
        // Through the symlinked log dir: its .lock is ld2's (one file), named as given.
        const viaDir = await run(['convert', seg(lkdir), '--in-place', '--codec', 'zstd']);
        expect(viaDir).toEqual({ code: 2, stdout: '', stderr: refused(lkdir, holder.pid, advice.convert) });
        expect(listing(ld2)).toEqual(before);
      } finally {
        holder.stdin.end();
        await new Promise((resolve) => holder.once('exit', resolve));
      }
    },
  );
});
