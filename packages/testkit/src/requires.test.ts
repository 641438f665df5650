import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from './requires.js';

const requires = fileURLToPath(new URL('./requires.ts', import.meta.url));

interface Result {
  numFailedTests: number;
  numPassedTests: number;
  numPendingTests: number;
  testResults: {
    assertionResults: {
      title: string;
      status: string;
      failureMessages: string[];
      meta: { skipReason?: string };
    }[];
  }[];
}

/** Runs a small suite gated on one missing and one present requirement, with or without CI. */
function runGated(ci: string | undefined): { result: Result; output: string } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'seglift-gate-'));
  try {
    writeFileSync(
      path.join(dir, 'gate.test.ts'),
      `import { needs, requirement } from ${JSON.stringify(requires)};
const absent = requirement('frobnicator', 'the frob checks need it', () => 'not on PATH');
const here = requirement('always', 'nothing', () => undefined);
needs(absent).describe('suite', () => { needs(here).it('inner', () => {}); });
needs(absent).it('single', () => {});
needs(here).it('present', () => {});
`,
    );
    const out = path.join(dir, 'out.json');
    // Not this run's vitest variables: the child is a run of its own.
    const env: NodeJS.ProcessEnv = Object.fromEntries(
      Object.entries(process.env).filter(([k]) => !k.startsWith('VITEST') && k !== 'SEGLIFT_SKIP_SUMMARY'),
    );
    if (ci === undefined) delete env.CI;
    else env.CI = ci;
    const r = spawnSync(
      process.execPath,
      [
        path.join(REPO_ROOT, 'node_modules/vitest/vitest.mjs'),
        'run',
        '--root',
        dir,
        '--reporter=default',
        '--reporter=json',
        `--outputFile=${out}`,
      ],
      { env, encoding: 'utf8' },
    );
    return { result: JSON.parse(readFileSync(out, 'utf8')) as Result, output: r.stdout + r.stderr };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('needs(): require or skip', () => {
  it('under CI a missing requirement fails, naming what is missing and why', () => {
    const { result } = runGated('true');
    expect([result.numFailedTests, result.numPassedTests, result.numPendingTests]).toEqual([2, 1, 0]);
    const failed = result.testResults[0].assertionResults.filter((t) => t.status === 'failed');
    for (const t of failed) {
      expect(t.title).toMatch(/\[requires frobnicator\]$/);
      expect(t.failureMessages[0]).toContain(
        'CI requires frobnicator is missing (not on PATH); needed because the frob checks need it',
      );
    }
  });

  it('without CI it skips, with the reason in the meta and printed once', () => {
    const { result, output } = runGated(undefined);
    expect([result.numFailedTests, result.numPassedTests, result.numPendingTests]).toEqual([0, 1, 2]);
    const skipped = result.testResults[0].assertionResults.filter((t) => t.status !== 'passed');
    expect(skipped.map((t) => t.meta.skipReason)).toEqual([
      'frobnicator is missing (not on PATH); needed because the frob checks need it',
      'frobnicator is missing (not on PATH); needed because the frob checks need it',
    ]);
    expect(output.match(/skipped: frobnicator is missing/g), output).toHaveLength(1);
  });

  it('CI=false is not CI', () => {
    expect(runGated('false').result.numFailedTests).toBe(0);
  });
});
