import { defineConfig } from 'vitest/config';
import { SAFETY_CORE, TESTS_FOR } from './stryker.config.mjs';
import base from './vitest.config.js';

// The tests Stryker runs against the mutants of one file (SEGLIFT_MUTATE, set by
// scripts/mutation.mjs), or of all of them. Not mergeConfig: it would append this list to the
// base one instead of replacing it.
const one = process.env.SEGLIFT_MUTATE as keyof typeof TESTS_FOR | undefined;
const include = [
  ...new Set((one ? [one] : SAFETY_CORE).flatMap((f) => TESTS_FOR[f as keyof typeof TESTS_FOR])),
];

export default defineConfig({
  ...base,
  // A mutant that makes a test wait forever fails it here, not after the suite's minute.
  test: { ...base.test, include, testTimeout: 20_000, hookTimeout: 20_000 },
});
