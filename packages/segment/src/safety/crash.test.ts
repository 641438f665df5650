/**
 * Crash safety (docs/reliability.md, "Crash at any instant"), in process: a crash right after
 * EVERY filesystem change (create, write, fsync, rename, unlink, utimes, chown, chmod) of a
 * conversion, in place and with backups, of one segment and of two segments of one partition
 * converting at once. After each crash, two recoveries (test-support/crash-partition.ts):
 * - a broker starting on the directory as it is (kafka-model.ts: Kafka's swap completion with ONE
 *   offset range over all .log.swap files, the .cleaned rule, recovery of a segment without
 *   .index, trusted indexes otherwise), also with a leftover `.cleaned` file of the cleaner:
 *   every record served, offset and timestamp lookups answered as the log holds them;
 * - ours: recoverLeftovers, then a rerun: each segment whole (the original with its indexes, or
 *   the verified conversion with recovery-rule indexes), converted exactly once, backups equal to
 *   the originals, no temp/swap/marker/lock files left.
 * Real processes killed inside swaps: kill.test.ts.
 */

import { existsSync, readFileSync } from 'node:fs';
import { rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { convertSegment } from '../placements/convert.js';
import { crashAfterOp, killLocks, stepOf } from '../test-support/crash.js';
import { brokerServes, type Partition, partition, recoverAndRerun } from '../test-support/crash-partition.js';
import { recoverLeftovers } from './leftovers.js';

/** The changes of a swap (swap.ts), each a crash point. */
const SWAP_STEPS = [
  'rename .seglift-swap',
  'rename .txnindex.swap',
  'rename .snapshot.swap',
  'unlink .index',
  'rename .timeindex.swap',
  'rename .log.swap',
  'rename .index.swap',
  'rename .log',
  'rename .timeindex',
  'rename .index',
  'rename .txnindex',
  'unlink .seglift-swap',
];

describe('(a) a crash right after every filesystem change, then a broker start or our recovery', () => {
  for (const pair of [false, true]) {
    for (const backup of [false, true]) {
      const what = `${pair ? 'two segments of one partition at once' : 'one segment'}${backup ? ', with backups' : ''}`;
      it(what, async () => {
        const targets = pair ? (await partition()).prefixes.slice(0, 2) : [(await partition()).prefixes[0]];
        const convertAll = (part: Partition, backupDir?: string) => () =>
          targets.map((p) =>
            convertSegment(
              path.join(part.pdir, `${p}.log`),
              { codec: 'zstd' },
              { kind: 'inPlace', backupDir },
            ),
          );
        const check = async (part: Partition, backupDir: string | undefined) => {
          for (const withCleaned of [false, true]) await brokerServes(part, part.pdir, withCleaned);
          await recoverAndRerun(part, targets, backupDir);
          await rm(part.root, { recursive: true, force: true });
        };
        // Crash after change 1, 2, 3, ... until a run makes fewer changes than that and finishes.
        // (Two segments with backups: the swaps are the same as without; only by name below.)
        for (let n = 1; !(pair && backup); n++) {
          expect(n).toBeLessThan(500);
          const part = await partition();
          const backupDir = backup ? path.join(part.root, 'backup') : undefined;
          const run = await crashAfterOp(n, convertAll(part, backupDir));
          if (!run.crashed) {
            expect(run.results.map((r) => r?.reason ?? r?.result)).toEqual(targets.map(() => 'converted'));
            expect(n).toBeGreaterThan(20);
            await brokerServes(part, part.pdir, false);
            await rm(part.root, { recursive: true, force: true });
            break;
          }
          await check(part, backupDir);
        }
        // Concurrent runs interleave differently each time: every step of every swap once more,
        // by name.
        for (const step of SWAP_STEPS) {
          for (let k = 1; k <= targets.length; k++) {
            const part = await partition();
            const backupDir = backup ? path.join(part.root, 'backup') : undefined;
            let seen = 0;
            const run = await crashAfterOp(
              (op) => stepOf(op) === step && ++seen === k,
              convertAll(part, backupDir),
            );
            // Only the first segment has a .txnindex/.snapshot to copy.
            if (k === 1) expect(run.crashed).toBe(true);
            await check(part, backupDir);
          }
        }
      }, 300_000);
    }
  }
});

/**
 * Power loss: renames and unlinks in one directory between two of its fsyncs may reach the disk
 * in any subset. Where the swap lets two changes share one fsync (swap.ts, steps 6-7 and 9), the
 * subsets a process crash never shows are built here by undoing the later change's partner, and
 * checked with both recoveries.
 */
describe('(b) a power loss between two directory fsyncs that several changes share', () => {
  const target = async () => (await partition()).prefixes[0];
  const convert = (part: Partition, p: string) => () => [
    convertSegment(path.join(part.pdir, `${p}.log`), { codec: 'zstd' }, { kind: 'inPlace' }),
  ];

  it('the new .log on disk without the .index.swap before it (steps 6-7)', async () => {
    const p = await target();
    const part = await partition();
    const run = await crashAfterOp((op) => stepOf(op) === 'rename .log', convert(part, p));
    expect(run.crashed).toBe(true);
    const at = (s: string) => path.join(part.pdir, `${p}${s}`);
    // The .index.swap rename did not reach the disk: the new index is under its temp name still.
    await rename(at('.index.swap'), at('.index.seglift-tmp'));
    for (const withCleaned of [false, true]) await brokerServes(part, part.pdir, withCleaned);
    await recoverAndRerun(part, [p]);
    await rm(part.root, { recursive: true, force: true });
  }, 60_000);

  it('the marker back after the swap completed (step 9, its removal never fsynced)', async () => {
    const p = await target();
    const part = await partition();
    const marker = path.join(part.pdir, `${p}.seglift-swap`);
    let bytes: Buffer | undefined;
    // The marker's bytes, read as its removal comes (never crashes).
    const run = await crashAfterOp(
      (op) => {
        if (stepOf(op) === 'rename .log') bytes = readFileSync(marker);
        return false;
      },
      convert(part, p),
    );
    expect(run.crashed).toBe(false);
    expect(run.results[0]?.result).toBe('converted');
    expect(bytes).toBeDefined();
    await writeFile(marker, bytes!);
    for (const withCleaned of [false, true]) await brokerServes(part, part.pdir, withCleaned);
    // recoverAndRerun: our recovery removes it (nothing to rename) and the segment is converted once.
    await killLocks(part.pdir);
    const report = await recoverLeftovers(part.pdir);
    expect(report.foreignSwaps).toEqual([]);
    expect(existsSync(marker)).toBe(false);
    const again = await convertSegment(
      path.join(part.pdir, `${p}.log`),
      { codec: 'zstd' },
      { kind: 'inPlace' },
    );
    expect(again.reason).toBe('already-target-codec');
    await brokerServes(part, part.pdir, false);
    await rm(part.root, { recursive: true, force: true });
  }, 60_000);
});
