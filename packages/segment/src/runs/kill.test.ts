/**
 * Crash safety with real processes (docs/reliability.md, "Crash at any instant"): `seglift
 * convert --in-place` and `seglift migrate --concurrency 2` killed with SIGKILL right after each
 * step of a swap (SEGLIFT_TEST_KILL_AFTER, @seglift/testkit's fault-preload.mjs), then a broker start (the model) and our
 * recovery and rerun, as in crash.test.ts.
 */
import { spawn } from 'node:child_process';
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { built, faultEnv, needs } from '@seglift/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { brokerServes, partition, recoverAndRerun } from '../test-support/crash-partition.js';
import { mixedSegment, tmpDir } from '../test-support/fixtures.js';
import { ls } from '../test-support/helpers.js';
import { independentRecords, recoveryIndexes, repoRoot } from '../test-support/independent.js';
import { migrate } from './migrate.js';

const cli = path.join(repoRoot, 'apps/cli/dist/main.js');
const builtCli = built(cli, path.join(repoRoot, 'packages/segment/dist/conversion-thread.js'));

function runKilled(
  args: string[],
  killAfter: string,
): Promise<{ code: number | null; signal: string | null }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [cli, ...args], {
      stdio: 'ignore',
      env: { ...process.env, ...faultEnv({ SEGLIFT_TEST_KILL_AFTER: killAfter }) },
    });
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
}

needs(builtCli).describe(
  '(b) seglift killed with SIGKILL inside a swap, then a broker start or our recovery',
  () => {
    let root: string;
    beforeAll(async () => {
      root = await tmpDir('seglift-kill-');
    });
    afterAll(async () => {
      if (root) await rm(root, { recursive: true, force: true });
    });
    const STEPS = [
      'rename:.seglift-swap',
      'rename:.txnindex.swap',
      'unlink:.index',
      'rename:.timeindex.swap',
      'rename:.log.swap',
      'rename:.index.swap',
      'rename:.log',
      'rename:.timeindex',
      'rename:.index',
      'unlink:.seglift-swap',
    ];
    for (const how of ['convert', 'migrate'] as const) {
      for (const step of STEPS) {
        {
          const k = 1;
          it(`${how}, killed right after ${step}`, async () => {
            const part = await partition();
            const targets = part.prefixes.slice(0, 2);
            const args =
              how === 'convert'
                ? [
                    'convert',
                    '--in-place',
                    '--codec',
                    'zstd',
                    ...targets.map((p) => path.join(part.pdir, `${p}.log`)),
                  ]
                : ['migrate', '--codec', 'zstd', '--quiet', '--concurrency', '2', part.pdir];
            const r = await runKilled(args, `${step}@${k}`);
            expect(r.signal).toBe('SIGKILL');
            for (const withCleaned of [false, true]) await brokerServes(part, part.pdir, withCleaned);
            await recoverAndRerun(part, targets);
            await rm(part.root, { recursive: true, force: true });
          });
        }
      }
    }

    it('the kill hook counts: #N kills right after the Nth filesystem change', async () => {
      const part = await partition();
      const r = await runKilled(
        ['convert', '--in-place', '--codec', 'zstd', path.join(part.pdir, `${part.prefixes[0]}.log`)],
        '#1',
      );
      expect(r.signal).toBe('SIGKILL');
      // The first change is the lock's pending file: nothing else was written.
      expect((await ls(part.pdir)).filter((n) => n.includes('seglift'))).toHaveLength(1);
      await recoverAndRerun(part, [part.prefixes[0]]);
      await rm(part.root, { recursive: true, force: true });
    });
  },
);

describe('migrate keeps every record when its threads convert segments of one partition', () => {
  it('four threads, six segments of one partition: converted once each, a broker serves them', async () => {
    const part = await partition();
    for (let s = 3; s < 6; s++) {
      const last = (
        await independentRecords(await readFile(path.join(part.pdir, `${part.prefixes.at(-1)}.log`)))
      ).at(-1)!;
      const base = BigInt(last.offset) + 1n;
      const seg = mixedSegment(base, 40 + s);
      const prefix = base.toString().padStart(20, '0');
      await writeFile(path.join(part.pdir, `${prefix}.log`), seg.bytes);
      const idx = recoveryIndexes(seg.bytes, base);
      await writeFile(path.join(part.pdir, `${prefix}.index`), idx.index);
      await writeFile(path.join(part.pdir, `${prefix}.timeindex`), idx.timeindex);
      part.prefixes.push(prefix);
      part.expected.push(...(await independentRecords(seg.bytes)));
    }
    const r = await migrate([part.pdir], { codec: 'zstd', concurrency: 4 });
    expect(r.reports.filter((x) => x.result !== 'converted').map((x) => x.reason)).toEqual([
      'active-segment',
    ]);
    expect(r.summary.converted).toBe(5);
    expect(r.summary.failed).toBe(0);
    await brokerServes(part, part.pdir, false);
    await rm(part.root, { recursive: true, force: true });
  });
});
