#!/usr/bin/env -S MALLOC_ARENA_MAX=2 node --max-semi-space-size=8 --single-threaded-gc --no-allocation-site-pretenuring --heap-growing-percent=50
// Memory and threads (bench/pipeline): glibc gives each thread its own malloc arena unless
// capped; V8 grows the young generation to 48 MiB under the pipeline's allocation rate (with both
// capped a 1 GiB segment converts in well under 200 MiB RSS); and V8's GC helper threads compete
// with the conversion threads for cores (single-threaded GC: migrate on 2 cores ~1.7x, not ~1.55x);
// and V8's allocation-site pretenuring, when it kicks in, sends short-lived decoded records to the
// old generation, where the Buffers they view outlive them: ~45% slower legacy upconversion and
// 190 MiB instead of 100 MiB RSS in the runs where it happened; and the old generation may grow
// by half its live size before a full GC (V8 lets it grow up to 4x, which made RSS follow the
// segment size when millions of tiny messages are upconverted: 278 vs 154 MiB for 256 MiB).
import { runCli } from './cli.js';

// exitCode rather than exit(): pending stdout writes finish before the process ends.
process.exitCode = await runCli(process.argv.slice(2));
