// Mutation testing of the safety core (docs/reliability.md, "Mutation testing"). Not part of
// `pnpm test`: `pnpm test:mutation` (scripts/mutation.mjs) runs Stryker once per file, which keeps
// each run bounded on a small machine; SEGLIFT_MUTATE names the one file of a run.
import path from 'node:path';

/**
 * Each file of the safety core and the tests run against its mutants: the in-process tests that
 * exercise it and finish in seconds (vitest.mutation.config.ts). Left out: crash.test.ts and
 * two-phase-crash.test.ts (minutes per run, rerun for every covered mutant), the fuzz suites of
 * the pipeline, and tests of the built dist/ (a mutant of src/ never reaches them).
 */
const seg = (...names) => names.map((n) => `packages/segment/src/${n}.test.ts`);
export const TESTS_FOR = {
  'packages/segment/src/safety/swap.ts': seg(
    'safety/swap',
    'safety/leftovers',
    'safety/durability',
    'placements/convert',
    'safety/concurrency',
  ),
  'packages/segment/src/safety/leftovers.ts': seg(
    'safety/leftovers',
    'safety/durability',
    'placements/convert',
    'placements/convert-edges',
    'safety/concurrency',
  ),
  'packages/segment/src/safety/lock.ts': seg(
    'safety/lock',
    'safety/lock-races',
    'safety/leftovers',
    'safety/concurrency',
    'safety/durability',
  ),
  'packages/segment/src/rewrite/verify.ts': seg('rewrite/verify', 'placements/faults', 'placements/convert'),
  // two-phase.test.ts: the stageDir/fromStage paths (prepare and commit), in about a second.
  'packages/segment/src/placements/convert.ts': seg(
    'placements/convert',
    'placements/convert-edges',
    'placements/faults',
    'safety/leftovers',
    'safety/durability',
    'runs/two-phase',
  ),
  'packages/legacy/src/upconvert.ts': [
    'packages/legacy/src/upconvert.test.ts',
    'packages/legacy/src/upconvert-limits.test.ts',
    'packages/legacy/src/upconvert-fast.test.ts',
    'packages/legacy/src/upconvert-prove.test.ts',
  ],
  'packages/format/src/index-file.ts': [
    'packages/format/src/index-file.test.ts',
    'packages/format/src/index-file.fuzz.test.ts',
    ...seg('rewrite/verify', 'placements/convert'),
  ],
};
export const SAFETY_CORE = Object.keys(TESTS_FOR);

const one = process.env.SEGLIFT_MUTATE;
const name = one ? path.basename(one, '.ts') : 'all';

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  packageManager: 'pnpm',
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.mutation.config.ts', related: false },
  plugins: ['@stryker-mutator/vitest-runner'],
  mutate: one ? [one] : SAFETY_CORE,
  coverageAnalysis: 'perTest',
  // Mutants of module-level constants would need every test rerun per mutant.
  ignoreStatic: true,
  concurrency: 1,
  // A mutant that makes a test hang (a lock wait that never ends) is a timeout: detected.
  timeoutMS: 10_000,
  // Reruns test only the mutants whose code or covering tests changed.
  incremental: true,
  incrementalFile: `reports/mutation/${name}.incremental.json`,
  reporters: ['clear-text', 'progress-append-only', 'json', 'html'],
  jsonReporter: { fileName: `reports/mutation/${name}.json` },
  htmlReporter: { fileName: `reports/mutation/${name}.html` },
  thresholds: { high: 90, low: 85, break: 85 },
  ignorePatterns: ['/e2e', '/bench', '/samples', '/deploy', '/docs', '/apps'],
  tempDirName: `.stryker-tmp`,
};
