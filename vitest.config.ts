import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const src = (p: string) => fileURLToPath(new URL(`${p}/src/index.ts`, import.meta.url));

// Tests import sibling packages from source, so a change in packages/format is seen by
// packages/segment's tests without a rebuild. Tests that spawn processes use dist/ (built first).
export default defineConfig({
  resolve: {
    alias: {
      // Before '@seglift/testkit': a subpath export of that package.
      '@seglift/testkit/independent': fileURLToPath(
        new URL('./packages/testkit/src/independent.ts', import.meta.url),
      ),
      '@seglift/format': src('./packages/format'),
      '@seglift/legacy': src('./packages/legacy'),
      '@seglift/segment': src('./packages/segment'),
      '@seglift/config': src('./config'),
      '@seglift/observability': src('./packages/observability'),
      '@seglift/queue': src('./packages/queue'),
      '@seglift/testkit': src('./packages/testkit'),
    },
  },
  test: {
    include: [
      'packages/*/src/**/*.test.ts',
      'apps/*/src/**/*.test.ts',
      'config/src/**/*.test.ts',
      'deploy/**/*.test.ts',
    ],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Faults for the conversion threads a test starts (inert unless a test's environment names
    // one: packages/testkit/src/fault-preload.mjs); a spawned process gets them from faultEnv.
    execArgv: [
      '--import',
      fileURLToPath(new URL('./packages/testkit/src/fault-preload.mjs', import.meta.url)),
    ],
  },
});
