// Mutation testing of the safety core (docs/reliability.md, "Mutation testing"). Not part of
// `pnpm test`: `pnpm test:mutation` (scripts/mutation.mjs) runs Stryker once per file, which keeps
// each run bounded on a small machine; SEGLIFT_MUTATE names the one file of a run.
import path from 'node:path';

export const SAFETY_CORE = [
  'packages/segment/src/swap.ts',
  'packages/segment/src/leftovers.ts',
  'packages/segment/src/lock.ts',
  'packages/segment/src/verify.ts',
  'packages/segment/src/convert.ts',
  'packages/legacy/src/upconvert.ts',
  'packages/format/src/index-file.ts',
];

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
  timeoutMS: 60_000,
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
