/**
 * How node runs the pipeline: the one place that says it. Every program (`seglift`,
 * `seglift-worker`, `seglift-watcher`) is started by a launcher that scripts/stamp-bin.mjs
 * generates from this at build time (`apps/<app>/dist/<program>`, the package's `bin`); the
 * image's entrypoint, `pnpm seglift`, the demo and the end-to-end tests run those launchers, and
 * the benchmarks read this module. Why each value (measured in bench/pipeline):
 * docs/operator-guide.md, "Memory and CPU: how the programs start node". The conversion threads'
 * own V8 limits are pipelineThreadResourceLimits (pool.ts).
 *
 * Not NODE_OPTIONS: it refuses --single-threaded-gc. Not a shebang: Linux before 5.1 (RHEL 8,
 * Debian 10) cuts `#!` lines at 127 bytes, and these flags need more.
 */
export const PIPELINE_NODE = {
  /** Set in the environment before node starts (glibc reads it once, at the first malloc). */
  env: { MALLOC_ARENA_MAX: '2' },
  /** node's own command-line flags, before the script. */
  flags: [
    // The programs are bundles (scripts/bundle.mjs): their source maps make a stack trace name
    // our .ts files and lines. It costs about 5-9 ms of start-up (bench/startup.bench.mjs).
    '--enable-source-maps',
    // No --max-semi-space-size: V8 would take it over each conversion thread's own young
    // generation (pool.ts, smaller as the threads are more). The main thread keeps V8's default:
    // bench/whole-process measured it equal to 8 (2026-12-05).
    '--single-threaded-gc',
    '--no-allocation-site-pretenuring',
    '--heap-growing-percent=50',
  ],
} as const satisfies { env: Record<string, string>; flags: readonly string[] };
