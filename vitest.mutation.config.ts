import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

// The tests Stryker runs against each mutant of the safety core (stryker.config.mjs): the ones
// that exercise those files in process and finish in seconds. Left out: crash.test.ts (minutes
// per run; it would be rerun for every covered mutant), the fuzz suites of the segment pipeline,
// and tests that run the built dist/ (a mutant of src/ never reaches them). Not mergeConfig: it
// would append this list to the base one instead of replacing it.
export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: [
      'packages/segment/src/{leftovers,lock,verify,convert,faults,concurrency,durability}.test.ts',
      'packages/legacy/src/upconvert.test.ts',
      'packages/format/src/index-file.test.ts',
      'packages/format/src/index-file.fuzz.test.ts',
    ],
  },
});
