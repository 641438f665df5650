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

import { rm } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { convertSegment } from './convert.js';
import { crashAfterOp, stepOf } from './test-support/crash.js';
import { brokerServes, type Partition, partition, recoverAndRerun } from './test-support/crash-partition.js';

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
            convertSegment(path.join(part.pdir, `${p}.log`), { codec: 'zstd', inPlace: true, backupDir }),
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
