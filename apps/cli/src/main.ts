#!/usr/bin/env -S MALLOC_ARENA_MAX=2 node --max-semi-space-size=8
// Memory bound (bench/pipeline): glibc gives each thread (V8's GC helpers, worker_threads) its
// own malloc arena unless capped, and V8 grows the young generation to 48 MiB under the
// pipeline's allocation rate; with both capped a 1 GiB segment converts in under 100 MiB RSS.
import { runCli } from './cli.js';

// exitCode rather than exit(): pending stdout writes finish before the process ends.
process.exitCode = await runCli(process.argv.slice(2));
