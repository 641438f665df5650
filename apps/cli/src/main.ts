#!/usr/bin/env -S MALLOC_ARENA_MAX=2 node
// MALLOC_ARENA_MAX=2: glibc gives each thread (V8's GC helpers, worker_threads) its own malloc
// arena; capping them keeps a conversion's peak RSS near its real working set (bench/pipeline).
import { runCli } from './cli.js';

// exitCode rather than exit(): pending stdout writes finish before the process ends.
process.exitCode = await runCli(process.argv.slice(2));
