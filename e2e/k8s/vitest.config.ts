import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// The Kubernetes suite runs on its own, after the Kafka oracle suite (scripts/test.mjs): one
// cluster, its scenario's steps in order, the broker's JVM and seglift's pods sharing the cores.
export default defineConfig({
  root: fileURLToPath(new URL('../..', import.meta.url)),
  test: {
    include: ['e2e/k8s/**/*.test.ts'],
    testTimeout: 600_000,
    hookTimeout: 1_800_000,
    pool: 'forks',
    fileParallelism: false,
  },
});
