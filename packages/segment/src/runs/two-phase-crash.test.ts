/**
 * Crash at any instant of a commit (docs/reliability.md, "Two-phase migration"): a commit from
 * the stage is crashed right after each of its filesystem changes (fsops.ts), then
 * - a broker starts on the directory as it is (test-support/kafka-model.ts), also beside a
 *   `.cleaned` file: every record served, lookups right;
 * - a second commit completes it: every segment whole and converted once, nothing of seglift's
 *   left in the partition or the stage (test-support/crash-partition.ts's checks).
 */
import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { STAGE_RECORD_SUFFIX } from '../files/names.js';
import { crashAfterOp, killLocks } from '../test-support/crash.js';
import { brokerServes, type Partition, partition, recoverAndRerun } from '../test-support/crash-partition.js';
import { commitStage, prepareStage } from './two-phase.js';

async function filesIn(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const d of await readdir(dir, { recursive: true, withFileTypes: true }))
    if (d.isFile()) out.push(d.name);
  return out.sort();
}

/** The partition with its rolled segments staged (all, or only the first). */
async function staged(onlyFirst: boolean): Promise<{ part: Partition; stageDir: string }> {
  const part = await partition();
  const stageDir = path.join(part.root, 'stage');
  const r = await prepareStage(part.pdir, { codec: 'zstd', stageDir, mode: 'inline' });
  expect(r.counts.staged).toBe(2);
  if (onlyFirst) await rm(path.join(stageDir, 'orders-0', `${part.prefixes[1]}${STAGE_RECORD_SUFFIX}`));
  return { part, stageDir };
}

describe('a crash right after every filesystem change of a commit, then a broker start or a rerun', () => {
  for (const onlyFirst of [false, true]) {
    it(onlyFirst
      ? 'one segment from the stage, one converted at commit'
      : 'both segments from the stage', async () => {
      const targets = (await partition()).prefixes.slice(0, 2);
      const commit = (part: Partition, stageDir: string) =>
        commitStage(part.pdir, { codec: 'zstd', stageDir, mode: 'inline' });
      for (let n = 1; ; n++) {
        expect(n).toBeLessThan(500);
        const { part, stageDir } = await staged(onlyFirst);
        const run = await crashAfterOp(n, () => [commit(part, stageDir)]);
        if (!run.crashed) {
          const result = run.results[0]!;
          expect(result.counts.staged).toBe(onlyFirst ? 1 : 2);
          expect(result.counts.convertedAtCommit).toBe(onlyFirst ? 1 : 0);
          expect(n).toBeGreaterThan(30);
          await brokerServes(part, part.pdir, false);
          await rm(part.root, { recursive: true, force: true });
          break;
        }
        for (const withCleaned of [false, true]) await brokerServes(part, part.pdir, withCleaned);
        await killLocks(part.pdir);
        await killLocks(stageDir);
        const rerun = await commit(part, stageDir);
        expect(rerun.summary.failed).toBe(0);
        // Everything converted, the stage used up; then crash-partition's own checks (the rerun
        // there finds every segment already converted).
        expect(await filesIn(stageDir)).toEqual(['.seglift-stage']);
        await recoverAndRerun(part, targets);
        await rm(part.root, { recursive: true, force: true });
      }
    }, 300_000);
  }
});
