#!/usr/bin/env -S MALLOC_ARENA_MAX=2 node --max-semi-space-size=8 --single-threaded-gc --no-allocation-site-pretenuring --heap-growing-percent=50
// Why each node flag (memory, GC threads, pretenuring, heap growth): docs/operator-guide.md,
// 'Memory and CPU: how the programs start node'; measured in bench/pipeline.
import { runCli } from './cli.js';

// exitCode rather than exit(): pending stdout writes finish before the process ends.
process.exitCode = await runCli(process.argv.slice(2));
