import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// The Kafka oracle suite runs on its own, after the unit suite (scripts/test.mjs): its JVMs take
// both cores for minutes, which would stretch the unit tests' timeouts if they ran side by side.
export default defineConfig({
  root: fileURLToPath(new URL('../..', import.meta.url)),
  test: {
    include: ['e2e/kafka/**/*.test.ts'],
    testTimeout: 300_000,
    hookTimeout: 900_000,
    pool: 'forks',
    fileParallelism: false,
  },
});
