/**
 * Concurrency (issue 6): two runs over the same segments never convert one twice or interleave
 * their writes; the per-segment lock (`<base>.log.seglift.lock`) decides. Checked in process
 * (concurrent acquireSegmentLock / convertSegment, with and without a stale lock left by a
 * crashed run) and with real processes (two `seglift migrate` over one directory at once, and a
 * `seglift migrate` plus a `seglift convert --in-place` of the same segment): there the log dir's
 * `.lock` lets one run at a time and refuses the other at the start. Every segment ends
 * converted exactly once (one 'converted' report across all runs), verified, with the records of
 * the original, and no temp, swap, marker or lock file is left.
 */
import { spawn } from 'node:child_process';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { built, needs } from '@seglift/testkit';
import { describe, expect, it } from 'vitest';
import { convertSegment } from '../placements/convert.js';
import { verifySegment } from '../rewrite/verify.js';
import { mixedSegment, tmpDir } from '../test-support/fixtures.js';
import { independentRecords, repoRoot } from '../test-support/independent.js';
import { acquireSegmentLock, lockPathFor } from './lock.js';

const cli = path.join(repoRoot, 'apps/cli/dist/main.js');
const builtCli = built(cli, path.join(repoRoot, 'packages/segment/dist/conversion-thread.js'));

/** A lock left by a crashed run on this host (its pid no longer exists). */
async function staleLock(log: string): Promise<void> {
  await writeFile(
    lockPathFor(log),
    JSON.stringify({ pid: 2 ** 22 + 11, host: os.hostname(), token: 'crashed-run', startedAt: '2020-01-01' }),
  );
}

/** `n` segments of `parts` mixed segments each, offsets continuing, in `<dir>/topic-0`. */
async function partition(dir: string, n: number, parts: number): Promise<{ pdir: string; logs: string[] }> {
  const pdir = path.join(dir, 'topic-0');
  await mkdir(pdir, { recursive: true });
  const logs: string[] = [];
  let off = 0n;
  for (let s = 0; s < n; s++) {
    const base = off;
    const bytes: Buffer[] = [];
    for (let k = 0; k < parts; k++) {
      const m = mixedSegment(off, s * 100 + k);
      bytes.push(m.bytes);
      off = m.lastOffset + 1n;
    }
    const log = path.join(pdir, `${base.toString().padStart(20, '0')}.log`);
    await writeFile(log, Buffer.concat(bytes));
    logs.push(log);
  }
  return { pdir, logs };
}

function runCli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [cli, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

function segmentReports(stdout: string): { path: string; result: string; reason?: string }[] {
  return stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l))
    .filter((r) => r.type === 'segment');
}

async function checkConvertedOnce(
  pdir: string,
  logs: string[],
  originals: Map<string, unknown>,
  reports: { path: string; result: string; reason?: string }[],
): Promise<void> {
  for (const log of logs) {
    const mine = reports.filter((r) => r.path === log);
    // Exactly one run converted it; any other run skipped it (already converted) or was refused
    // by the lock. Nothing else.
    expect(
      mine.filter((r) => r.result === 'converted'),
      log,
    ).toHaveLength(1);
    for (const r of mine.filter((x) => x.result !== 'converted')) {
      if (r.result === 'skipped') expect(r.reason).toBe('already-target-codec');
      else expect(r.reason).toMatch(/locked by/);
    }
    expect((await verifySegment(log)).problems).toEqual([]);
    expect(await independentRecords(await readFile(log))).toEqual(originals.get(log));
  }
  const names = await readdir(pdir);
  expect(names.filter((n) => !/^\d{20}\.(log|index|timeindex)$/.test(n))).toEqual([]);
}

/**
 * Runs over one log dir: each either ran (exit 0) or was refused by the log dir lock the other
 * held (exit 2, the message, no report). Returns how many ran.
 */
function onlyOneAtATime(runs: { code: number | null; stdout: string; stderr: string }[]): number {
  let ran = 0;
  for (const r of runs) {
    if (r.code === 2) {
      expect(r.stderr).toMatch(
        // The advice is the command's: migrate's --prepare, convert's --out.
        /^error\[LOG_DIR_LOCKED\]: log dir \S+ is locked: a Kafka broker \(or another seglift\) is running on it: stop it first, or (use --prepare|write the result elsewhere with --out DIR)/,
      );
      expect(segmentReports(r.stdout)).toEqual([]);
    } else {
      expect(r.code, r.stderr).toBe(0);
      ran++;
    }
  }
  expect(ran).toBeGreaterThanOrEqual(1);
  return ran;
}

describe('the segment lock, in process', () => {
  it('with a stale lock left by a crashed run, of 2-7 concurrent acquirers exactly one gets it (200 rounds)', async () => {
    const dir = await tmpDir();
    for (let round = 0; round < 200; round++) {
      const d = path.join(dir, `r${round}`);
      await mkdir(d);
      const log = path.join(d, '00000000000000000000.log');
      if (round % 4 !== 3) await staleLock(log);
      const rs = await Promise.allSettled(
        Array.from({ length: 2 + (round % 6) }, () => acquireSegmentLock(log)),
      );
      const held = rs.filter((r) => r.status === 'fulfilled');
      expect(held).toHaveLength(1);
      for (const r of rs)
        if (r.status === 'rejected') expect(String((r.reason as Error).message)).toMatch(/locked by/);
      // Only the lock itself remains: no pending or takeover file.
      expect(await readdir(d)).toEqual(['00000000000000000000.log.seglift.lock']);
      await (
        held[0] as PromiseFulfilledResult<Awaited<ReturnType<typeof acquireSegmentLock>>>
      ).value.release();
      expect(await readdir(d)).toEqual([]);
    }
    await rm(dir, { recursive: true, force: true });
  });

  it('four concurrent in-place conversions of one segment (fresh, and after a crash): converted once, verified', async () => {
    for (const crashed of [false, true]) {
      const dir = await tmpDir();
      const { pdir, logs } = await partition(dir, 1, 8);
      const originals = new Map([[logs[0], await independentRecords(await readFile(logs[0]))]]);
      if (crashed) await staleLock(logs[0]);
      const reports = await Promise.all(
        Array.from({ length: 4 }, () => convertSegment(logs[0], { codec: 'zstd' }, { kind: 'inPlace' })),
      );
      await checkConvertedOnce(pdir, logs, originals, reports);
      await rm(dir, { recursive: true, force: true });
    }
  });
});

needs(builtCli).describe('concurrent processes on one directory', () => {
  it('two `seglift migrate` runs at once over the same 6 segments (two of them with stale locks): one at a time, the other refused at the start (exit 2)', async () => {
    const dir = await tmpDir();
    const { pdir, logs } = await partition(dir, 6, 12);
    const originals = new Map<string, unknown>();
    for (const l of logs) originals.set(l, await independentRecords(await readFile(l)));
    await staleLock(logs[1]);
    await staleLock(logs[4]);
    const args = ['migrate', '--codec', 'zstd', '--include-active', '--json', '--concurrency', '2', pdir];
    const [a, b] = await Promise.all([runCli(args), runCli(args)]);
    const reports = [...segmentReports(a.stdout), ...segmentReports(b.stdout)];
    // The log dir's .lock: a run that finds the other one at work is refused at the start (exit 2,
    // no segment failed LOCKED); one that starts after it has ended skips every segment.
    const ran = onlyOneAtATime([a, b]);
    expect(reports).toHaveLength(6 * ran);
    await checkConvertedOnce(pdir, logs, originals, reports);
    await rm(dir, { recursive: true, force: true });
  }, 60_000);

  it('`seglift migrate` and `seglift convert --in-place` of the same segments at once: one at a time, the other refused at the start (exit 2)', async () => {
    const dir = await tmpDir();
    const { pdir, logs } = await partition(dir, 3, 20);
    const originals = new Map<string, unknown>();
    for (const l of logs) originals.set(l, await independentRecords(await readFile(l)));
    const [m, c] = await Promise.all([
      runCli(['migrate', '--codec', 'zstd', '--include-active', '--json', '--concurrency', '1', pdir]),
      runCli(['convert', '--in-place', '--codec', 'zstd', '--json', ...[...logs].reverse()]),
    ]);
    const reports = [...segmentReports(m.stdout), ...segmentReports(c.stdout)];
    expect(reports).toHaveLength(3 * onlyOneAtATime([m, c]));
    await checkConvertedOnce(pdir, logs, originals, reports);
    await rm(dir, { recursive: true, force: true });
  }, 60_000);
});
