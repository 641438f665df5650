/**
 * The conversion threads of the service: `migrate` and the queue worker convert through one pool
 * with one message protocol. Codec calls are synchronous, so threads are what gives parallelism
 * and keeps a caller's event loop (progress bars, Redis lock renewal) responsive. A thread runs
 * one conversion at a time and is reused (loading the native codecs costs ~0.2 s).
 *
 * Protocol (conversion-thread.ts is the other end):
 *   to a thread:   convert {id, logPath, settings, placement, gated} | abort {id, reason} | swap {id, go, reason}
 *   from a thread: progress {id, bytesDone, bytesTotal} | swap-ready {id} | done {id, report}
 * Only the settings (the declared ones, picked by name: rewriteSettingsOf) and the placement
 * cross; the hooks stay with the caller, and the protocol stands in for them: `gated`, the thread
 * asks before its swap (swap-ready) and swaps only on `go` (the caller's beforeSwap hook, e.g.
 * the worker checking that it still holds its partition's lease).
 */
import { getMaxListeners, setMaxListeners } from 'node:events';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { LockedError, SegmentIoError } from '../files/errors.js';
import { threadInit } from '../files/io-courtesy.js';
import type { ConvertHooks, ConvertSettings, Placement } from '../placements/conversion.js';
import { emptyReport, type SegmentReport } from '../rewrite/report.js';
import { rewriteSettingsOf } from '../rewrite/rewrite.js';

/**
 * V8 limits for each thread of a pool of `threads` conversion threads. The young generation (V8
 * counts three semi-spaces in it) is 24 MiB for one or two threads, as the pipeline was tuned on
 * 2 cores (bench/pipeline), and shrinks as the threads are more, to 48 MiB for all of them
 * together and at least 6 (2 MiB semi-spaces) from 8 threads on: each thread's heap then stays
 * near its working set, and at 16 threads the process peaked 50-60 MiB lower at the same CPU per
 * MB (docs/benchmarks.md, "Each thread's young generation"). The programs pass no
 * --max-semi-space-size (node-flags.ts): V8 would take that over these limits in every thread.
 */
export function pipelineThreadResourceLimits(threads: number): { maxYoungGenerationSizeMb: number } {
  return { maxYoungGenerationSizeMb: Math.max(6, Math.min(24, Math.floor(48 / Math.max(1, threads)))) };
}

export type ToThread =
  | {
      type: 'convert';
      id: number;
      logPath: string;
      settings: ConvertSettings;
      placement: Placement;
      gated: boolean;
    }
  | { type: 'abort'; id: number; reason: string }
  | { type: 'swap'; id: number; go: boolean; reason?: string };

export type FromThread =
  | { type: 'progress'; id: number; bytesDone: number; bytesTotal: number }
  | { type: 'swap-ready'; id: number }
  | { type: 'done'; id: number; report: SegmentReport };

/**
 * dist/conversion-thread.js: one level up from this module (built: dist/runs/pool.js), beside
 * the chunk of a program's bundle holding it or one level up (`dist/chunks/`, scripts/bundle.mjs),
 * or the package's dist/ when running from sources (src/runs/pool.ts).
 */
export function conversionThreadPath(): string | undefined {
  const here = path.dirname(fileURLToPath(import.meta.url));
  for (const p of [
    path.join(here, 'conversion-thread.js'),
    path.join(here, '..', 'conversion-thread.js'),
    path.join(here, '..', '..', 'dist', 'conversion-thread.js'),
  ]) {
    if (existsSync(p)) return p;
  }
  return undefined;
}

/**
 * conversionThreadPath, or the error of a build without it: every run that would use the pool
 * refuses before converting anything, rather than converting in process one segment at a time.
 */
export function conversionThreadScript(): string {
  const script = conversionThreadPath();
  if (!script) throw new Error('dist/conversion-thread.js is missing: run `pnpm build`');
  return script;
}

export interface ConversionPoolOptions {
  /** Threads at most; more calls wait for a free one. */
  size: number;
  /** After an abort, how long a conversion gets to clean up before its thread is terminated. */
  abortTimeoutMs?: number;
}

interface Running {
  id: number;
  logPath: string;
  hooks: ConvertHooks;
  resolve: (r: SegmentReport) => void;
}

interface PoolThread {
  worker: Worker;
  running?: Running;
}

/** A conversion that never got a report from its thread fails with this reason. */
function threadFailure(logPath: string, why: string): SegmentReport {
  const r = emptyReport(logPath);
  const e = new SegmentIoError(`conversion thread died: ${why}`, { file: logPath });
  r.error = e.toJSON();
  r.reason = e.detail;
  return r;
}

export class ConversionPool {
  private readonly script: string;
  private readonly threads = new Set<PoolThread>();
  private readonly waiting: Array<() => void> = [];
  private nextId = 1;
  private closed = false;

  constructor(private readonly options: ConversionPoolOptions) {
    this.script = conversionThreadScript();
  }

  /**
   * Converts one segment in a thread. Never rejects for a bad segment: the report says 'failed'
   * (a thread that dies fails only the segment it held, with the reason, and is replaced).
   */
  async convert(
    logPath: string,
    settings: ConvertSettings,
    placement: Placement,
    hooks: ConvertHooks = {},
  ): Promise<SegmentReport> {
    const { signal } = hooks;
    const id = this.nextId++;
    let settle: (r: SegmentReport) => void = () => {};
    const running: Running = { id, logPath, hooks, resolve: (r) => settle(r) };
    const thread = await this.acquire(running);
    return new Promise<SegmentReport>((resolve) => {
      let killTimer: NodeJS.Timeout | undefined;
      const onAbort = () => {
        const reason = signal?.reason instanceof Error ? signal.reason.message : 'aborted';
        thread.worker.postMessage({ type: 'abort', id, reason } satisfies ToThread);
        // A thread stuck in a synchronous call: terminated (the next run recovers its leftovers).
        killTimer = setTimeout(() => void thread.worker.terminate(), this.options.abortTimeoutMs ?? 10_000);
      };
      settle = (r) => {
        signal?.removeEventListener('abort', onAbort);
        clearTimeout(killTimer);
        resolve(r);
      };
      if (signal?.aborted) onAbort();
      else if (signal !== undefined) {
        // One listener per conversion in flight, so up to the pool's size on the run's signal:
        // past Node's default of 10 (a 16-core host) that is no leak, only the size asked for.
        const wanted = this.options.size + 10;
        if (getMaxListeners(signal) < wanted) setMaxListeners(wanted, signal);
        signal.addEventListener('abort', onAbort, { once: true });
      }
      thread.worker.postMessage({
        type: 'convert',
        id,
        logPath,
        settings: rewriteSettingsOf(settings),
        placement,
        gated: hooks.beforeSwap !== undefined,
      } satisfies ToThread);
    });
  }

  /** Terminates every thread; conversions still running fail (call once they are done). */
  async close(): Promise<void> {
    this.closed = true;
    for (const w of this.waiting.splice(0)) w();
    await Promise.all([...this.threads].map((t) => t.worker.terminate()));
  }

  /** A free thread, taken for `running` before anything else can see it free. */
  private async acquire(running: Running): Promise<PoolThread> {
    for (;;) {
      if (this.closed) throw new Error('conversion pool closed');
      let t = [...this.threads].find((x) => x.running === undefined);
      if (t === undefined && this.threads.size < this.options.size) t = this.spawn();
      if (t !== undefined) {
        t.running = running;
        return t;
      }
      await new Promise<void>((r) => this.waiting.push(r));
    }
  }

  private spawn(): PoolThread {
    const t: PoolThread = {
      worker: new Worker(this.script, {
        resourceLimits: pipelineThreadResourceLimits(this.options.size),
        // The process's one I/O budget and its prepare priority rule (io-courtesy.ts).
        workerData: threadInit(),
      }),
    };
    const finish = (r: SegmentReport) => {
      const running = t.running;
      t.running = undefined;
      running?.resolve(r);
      this.waiting.shift()?.();
    };
    t.worker.on('message', (m: FromThread) => {
      const running = t.running;
      if (running === undefined || m.id !== running.id) return;
      if (m.type === 'progress') running.hooks.onProgress?.(m.bytesDone, m.bytesTotal);
      else if (m.type === 'swap-ready') void this.gate(t, running);
      else finish(m.report);
    });
    const dead = (why: string) => {
      if (!this.threads.delete(t)) return;
      if (t.running) finish(threadFailure(t.running.logPath, why));
    };
    t.worker.on('error', (err) => dead(err.message));
    t.worker.on('exit', (code) => dead(`exit code ${code}`));
    this.threads.add(t);
    return t;
  }

  /** Asks the caller's beforeSwap hook and answers the thread. */
  private async gate(t: PoolThread, running: Running): Promise<void> {
    let answer: ToThread;
    try {
      await running.hooks.beforeSwap?.();
      answer = { type: 'swap', id: running.id, go: true };
    } catch (err) {
      answer = { type: 'swap', id: running.id, go: false, reason: (err as Error)?.message ?? String(err) };
    }
    if (t.running === running) t.worker.postMessage(answer);
  }
}

/** The error a thread raises when the caller refused its swap. */
export function swapRefused(reason: string, file: string): LockedError {
  return new LockedError(`not swapped: ${reason}`, { file });
}
