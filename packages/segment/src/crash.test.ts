/**
 * Crash safety (issue 6, docs/reliability.md §4).
 * (a) Injected: testHooks.crashAfter at every step (write, verify, every SwapStep), in place and
 *     with a backup dir, then a rerun (convertSegment again, or recoverLeftovers), and a broker's
 *     swap completion on a copy of the crashed directory.
 * (b) Real: a seeded loop of SIGKILLs of `seglift convert --in-place` / `seglift migrate` child
 *     processes at random instants (timers, and the first appearance of a temp, marker or swap
 *     file), then recovery and a rerun.
 * Invariants each time: every segment is either the untouched original (sha256 of .log/.index/
 * .timeindex equal) or the verified conversion, with the same logical records (an independent
 * kafkajs decode), no missing or duplicated offsets, .txnindex/.snapshot kept, backups equal to
 * the originals, and no temp, .swap, marker or lock file left behind.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, watch } from 'node:fs';
import { cp, mkdir, readdir, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { convertSegment } from './convert.js';
import { recoverLeftovers } from './leftovers.js';
import { migrate } from './migrate.js';
import { SimulatedCrash, type SwapStep } from './swap.js';
import { mixedSegment, prng, tmpDir, writeSegment } from './test-support/fixtures.js';
import { ls, mtime, sha256 } from './test-support/helpers.js';
import {
  independentRecords,
  kafkaCompleteSwaps,
  recoveryIndexes,
  repoRoot,
} from './test-support/independent.js';
import { verifySegment } from './verify.js';

const OLD = new Date('2019-05-06T07:08:09.000Z');
const BASE = '00000000000000000000';
const TXN = Buffer.alloc(34, 1);
const SNAP = Buffer.alloc(20, 2);
const STEPS: ('write' | 'verify' | SwapStep)[] = [
  'write',
  'verify',
  'marker',
  'extras',
  'log-swap',
  'index-swaps',
  'log-renamed',
  'renamed',
];
const ROLLED_BACK = new Set(['write', 'verify', 'marker', 'extras']);

function offsetsStrictlyIncrease(records: { offset: string }[]): boolean {
  for (let i = 1; i < records.length; i++)
    if (BigInt(records[i].offset) <= BigInt(records[i - 1].offset)) return false;
  return true;
}

async function setupOne() {
  const seg = mixedSegment();
  const dir = await tmpDir('seglift-crash-');
  const log = await writeSegment(dir, seg.bytes);
  const pdir = path.dirname(log);
  await writeFile(path.join(pdir, `${BASE}.index`), Buffer.alloc(8, 9));
  await writeFile(path.join(pdir, `${BASE}.timeindex`), Buffer.alloc(12, 9));
  await writeFile(path.join(pdir, `${BASE}.txnindex`), TXN);
  await writeFile(path.join(pdir, `${BASE}.snapshot`), SNAP);
  await utimes(log, OLD, OLD);
  return { seg, dir, log, pdir };
}

describe('injected crash at every step, then a rerun', () => {
  let expectedRecords: Awaited<ReturnType<typeof independentRecords>>;
  beforeAll(async () => {
    expectedRecords = await independentRecords(mixedSegment().bytes);
    expect(expectedRecords.length).toBeGreaterThan(200);
    expect(offsetsStrictlyIncrease(expectedRecords)).toBe(true);
  });

  for (const backup of [false, true]) {
    for (const rerun of ['convertSegment', 'recoverLeftovers'] as const) {
      for (const step of STEPS) {
        it(`${backup ? 'with backup' : 'in place'}, crash after ${step}, rerun with ${rerun}`, async () => {
          const { dir, log, pdir } = await setupOne();
          const original = await sha256(log);
          const backupDir = backup ? path.join(dir, 'backup') : undefined;
          const opts = { codec: 'zstd' as const, inPlace: true, backupDir };
          await expect(
            convertSegment(log, { ...opts, testHooks: { crashAfter: step } }),
          ).rejects.toBeInstanceOf(SimulatedCrash);
          const brokerCopy = path.join(dir, 'broker');
          await cp(pdir, brokerCopy, { recursive: true });

          if (rerun === 'convertSegment') {
            const r = await convertSegment(log, opts);
            // Rolled back -> converted now; rolled forward -> already converted, skipped.
            expect(r.result).toBe(ROLLED_BACK.has(step) ? 'converted' : 'skipped');
          } else {
            const r = await recoverLeftovers(pdir);
            expect(r.completed).toEqual(ROLLED_BACK.has(step) ? [] : [BASE]);
          }
          expect(await ls(pdir)).toEqual([
            `${BASE}.index`,
            `${BASE}.log`,
            `${BASE}.snapshot`,
            `${BASE}.timeindex`,
            `${BASE}.txnindex`,
          ]);
          expect(await readFile(path.join(pdir, `${BASE}.txnindex`))).toEqual(TXN);
          expect(await readFile(path.join(pdir, `${BASE}.snapshot`))).toEqual(SNAP);
          const bytes = await readFile(log);
          const converted = (await sha256(log)) !== original;
          expect(converted).toBe(rerun === 'convertSegment' || !ROLLED_BACK.has(step));
          const records = await independentRecords(bytes);
          expect(records).toEqual(expectedRecords);
          expect(offsetsStrictlyIncrease(records)).toBe(true);
          if (converted) {
            expect((await verifySegment(log)).problems).toEqual([]);
            const idx = recoveryIndexes(bytes, 0n);
            expect(await readFile(path.join(pdir, `${BASE}.index`))).toEqual(idx.index);
            expect(await readFile(path.join(pdir, `${BASE}.timeindex`))).toEqual(idx.timeindex);
          } else {
            expect(await readFile(path.join(pdir, `${BASE}.index`))).toEqual(Buffer.alloc(8, 9));
          }
          expect(await mtime(log)).toBe(OLD.getTime());
          if (backupDir && existsSync(backupDir)) {
            // Backups are written after verify: a crash before that leaves none until the rerun.
            const b = path.join(backupDir, 'topic-0');
            for (const n of await readdir(b)) {
              if (n.endsWith('.log')) expect(await sha256(path.join(b, n))).toBe(original);
              if (n.endsWith('.index')) expect(await readFile(path.join(b, n))).toEqual(Buffer.alloc(8, 9));
            }
          }
          // Nothing left to do.
          expect(await recoverLeftovers(pdir)).toMatchObject({ removed: [], completed: [], rolledBack: [] });

          // A broker started on the crashed directory instead: one consistent segment, txnindex kept.
          await kafkaCompleteSwaps(brokerCopy);
          const blog = path.join(brokerCopy, `${BASE}.log`);
          expect(await independentRecords(await readFile(blog))).toEqual(expectedRecords);
          expect(await readFile(path.join(brokerCopy, `${BASE}.txnindex`))).toEqual(TXN);
          expect((await ls(brokerCopy)).filter((n) => n.endsWith('.swap'))).toEqual([]);
          await rm(dir, { recursive: true, force: true });
        });
      }
    }
  }
});

// ---------------------------------------------------------------------------------------------
// (b) real SIGKILLs

const cli = path.join(repoRoot, 'apps/cli/dist/main.js');
const haveCli = existsSync(cli) && existsSync(path.join(repoRoot, 'packages/segment/dist/worker.js'));
const KILLS = Number(process.env.SEGLIFT_CRASH_KILLS ?? 50);
const SEGMENTS = 3;

interface Expected {
  name: string;
  log: string;
  index: string;
  timeindex: string;
}

/** A 0.8 MiB segment: 30 mixed segments back to back (every magic and codec, control, empty). */
function bigSegment(base: bigint, seed: number): { bytes: Buffer; next: bigint } {
  const parts: Buffer[] = [];
  let off = base;
  for (let k = 0; k < 30; k++) {
    const m = mixedSegment(off, seed * 1000 + k);
    parts.push(m.bytes);
    off = m.lastOffset + 1n;
  }
  return { bytes: Buffer.concat(parts), next: off };
}

function run(args: string[]): ChildProcess {
  return spawn(process.execPath, [cli, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
}

function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode);
    else child.once('exit', (code) => resolve(code));
  });
}

describe.skipIf(!haveCli)(
  'SIGKILL at random instants (seglift convert --in-place / migrate), then rerun',
  () => {
    let template: string;
    let root: string;
    const originals: Expected[] = [];
    const converted: Expected[] = [];
    beforeAll(async () => {
      root = await tmpDir('seglift-kill-');
      template = path.join(root, 'template');
      await mkdir(template, { recursive: true });
      let off = 0n;
      for (let s = 0; s < SEGMENTS; s++) {
        const { bytes, next } = bigSegment(off, s + 1);
        const name = off.toString().padStart(20, '0');
        await writeFile(path.join(template, `${name}.log`), bytes);
        await writeFile(path.join(template, `${name}.index`), Buffer.alloc(0));
        await writeFile(path.join(template, `${name}.timeindex`), Buffer.alloc(0));
        off = next;
      }
      await writeFile(path.join(template, `${BASE}.txnindex`), TXN);
      await writeFile(path.join(template, `${BASE}.snapshot`), SNAP);
      // Reference run (no kill): gives the converted bytes; checked once against an independent decode.
      const ref = path.join(root, 'ref');
      await cp(template, ref, { recursive: true });
      const names = (await readdir(template)).filter((n) => n.endsWith('.log')).sort();
      const code = await exited(
        run(['convert', '--in-place', '--codec', 'zstd', ...names.map((n) => path.join(ref, n))]),
      );
      expect(code).toBe(0);
      for (const n of names) {
        const p = n.slice(0, 20);
        const o = path.join(template, n);
        const c = path.join(ref, n);
        originals.push({
          name: p,
          log: await sha256(o),
          index: await sha256(path.join(template, `${p}.index`)),
          timeindex: await sha256(path.join(template, `${p}.timeindex`)),
        });
        converted.push({
          name: p,
          log: await sha256(c),
          index: await sha256(path.join(ref, `${p}.index`)),
          timeindex: await sha256(path.join(ref, `${p}.timeindex`)),
        });
        expect((await verifySegment(c)).problems).toEqual([]);
        expect(await independentRecords(await readFile(c))).toEqual(
          await independentRecords(await readFile(o)),
        );
      }
    });
    afterAll(async () => {
      if (root) await rm(root, { recursive: true, force: true });
    });

    /** Each segment is the original or the conversion, whole (log and both indexes). */
    async function states(pdir: string): Promise<('original' | 'converted')[]> {
      const out: ('original' | 'converted')[] = [];
      for (let i = 0; i < originals.length; i++) {
        const p = originals[i].name;
        const got = {
          log: await sha256(path.join(pdir, `${p}.log`)),
          index: await sha256(path.join(pdir, `${p}.index`)),
          timeindex: await sha256(path.join(pdir, `${p}.timeindex`)),
        };
        if (got.log === originals[i].log) {
          expect({ name: p, ...got }).toEqual(originals[i]);
          out.push('original');
        } else {
          expect({ name: p, ...got }).toEqual(converted[i]);
          out.push('converted');
        }
      }
      return out;
    }

    function phaseOf(names: string[], p: string): string {
      const mine = names.filter((n) => n.startsWith(`${p}.`));
      if (mine.some((n) => n.endsWith('.seglift-swap'))) {
        return mine.some((n) => n.endsWith('.log.swap')) ? 'swap:log-swapped' : 'swap:marker';
      }
      if (mine.some((n) => n.endsWith('.seglift-tmp'))) return 'write/verify';
      if (mine.some((n) => n.endsWith('.seglift.lock'))) return 'locked';
      return 'idle';
    }

    it(`at least ${KILLS} kills; after each, recovery and a rerun leave every segment converted once, verified`, async () => {
      const rand = prng(0x6b111);
      const phases: Record<string, number> = {};
      let kills = 0;
      let completedBeforeKill = 0;
      const started = Date.now();
      for (let i = 0; kills < KILLS && i < KILLS * 3; i++) {
        const dir = path.join(root, `k${i}`);
        const pdir = path.join(dir, 'topic-0');
        const backupDir = path.join(dir, 'backup');
        await cp(template, pdir, { recursive: true });
        const useMigrate = i % 2 === 1;
        const useBackup = i % 3 === 0;
        const args = useMigrate
          ? ['migrate', '--codec', 'zstd', '--include-active', '--quiet', '--concurrency', '2', pdir]
          : [
              'convert',
              '--in-place',
              '--codec',
              'zstd',
              ...originals.map((o) => path.join(pdir, `${o.name}.log`)),
            ];
        if (useBackup) args.push('--backup-dir', backupDir);
        const child = run(args);
        const done = exited(child);
        // Half the kills on a seeded timer, half on the first sight of a temp, marker or swap file.
        const trigger =
          rand() < 0.5
            ? 'timer'
            : ['.seglift-tmp', '.seglift-swap', '.log.swap', '.index.swap'][Math.floor(rand() * 4)];
        const delay = trigger === 'timer' ? Math.floor(rand() * 700) : Math.floor(rand() * 3);
        let watcher: ReturnType<typeof watch> | undefined;
        const killer = new Promise<void>((resolve) => {
          const fire = () =>
            setTimeout(() => {
              child.kill('SIGKILL');
              resolve();
            }, delay);
          if (trigger === 'timer') fire();
          else {
            let fired = false;
            watcher = watch(pdir, (_e, name) => {
              if (!fired && name?.endsWith(trigger)) {
                fired = true;
                fire();
              }
            });
          }
          void done.then(() => resolve());
        });
        await killer;
        watcher?.close();
        await done;
        if (child.signalCode === 'SIGKILL') kills++;
        else completedBeforeKill++;

        const names = await readdir(pdir);
        for (const o of originals) {
          const ph = child.signalCode === 'SIGKILL' ? phaseOf(names, o.name) : 'exited';
          phases[ph] = (phases[ph] ?? 0) + 1;
        }
        // A broker started on the killed directory completes or ignores each swap consistently.
        if (names.some((n) => n.endsWith('.swap'))) {
          const copy = path.join(dir, 'broker');
          await cp(pdir, copy, { recursive: true });
          await kafkaCompleteSwaps(copy);
          for (const [k, o] of originals.entries()) {
            const l = await sha256(path.join(copy, `${o.name}.log`));
            expect([o.log, converted[k].log]).toContain(l);
          }
          expect(await readFile(path.join(copy, `${BASE}.txnindex`))).toEqual(TXN);
        }
        // Recovery alone: each segment whole, old or new.
        await recoverLeftovers(pdir);
        await states(pdir);
        expect((await readdir(pdir)).filter((n) => /seglift-tmp$|\.swap$|seglift-swap$/.test(n))).toEqual([]);

        // Rerun to completion.
        if (useMigrate) {
          const r = await migrate([pdir], {
            codec: 'zstd',
            includeActive: true,
            mode: 'inline',
            backupDir: useBackup ? backupDir : undefined,
          });
          expect(r.summary.failed).toBe(0);
        } else {
          for (const o of originals) {
            const r = await convertSegment(path.join(pdir, `${o.name}.log`), {
              codec: 'zstd',
              inPlace: true,
              backupDir: useBackup ? backupDir : undefined,
            });
            expect(r.error).toBeUndefined();
          }
        }
        expect(await states(pdir)).toEqual(originals.map(() => 'converted'));
        expect(await ls(pdir)).toEqual(
          [
            ...originals.flatMap((o) => ['.index', '.log', '.timeindex'].map((s) => `${o.name}${s}`)),
            `${BASE}.snapshot`,
            `${BASE}.txnindex`,
          ].sort(),
        );
        expect(await readFile(path.join(pdir, `${BASE}.txnindex`))).toEqual(TXN);
        expect(await readFile(path.join(pdir, `${BASE}.snapshot`))).toEqual(SNAP);
        if (useBackup && existsSync(backupDir)) {
          for (const n of await readdir(path.join(backupDir, 'topic-0'))) {
            const o = originals.find((x) => n.startsWith(x.name))!;
            const want = n.endsWith('.log') ? o.log : n.endsWith('.index') ? o.index : o.timeindex;
            expect(await sha256(path.join(backupDir, 'topic-0', n))).toBe(want);
          }
        }
        await rm(dir, { recursive: true, force: true });
      }
      const summary = { kills, completedBeforeKill, seconds: (Date.now() - started) / 1000, phases };
      if (process.env.SEGLIFT_FUZZ_STATS || process.env.CRASH_DEBUG) console.log(JSON.stringify(summary));
      expect(kills).toBeGreaterThanOrEqual(KILLS);
      // Kills landed before any file was written, while writing/verifying, and inside swaps.
      expect(phases['write/verify'] ?? 0).toBeGreaterThan(0);
      expect((phases['swap:marker'] ?? 0) + (phases['swap:log-swapped'] ?? 0)).toBeGreaterThan(0);
    }, 180_000);
  },
);
