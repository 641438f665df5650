import { Worker } from 'node:worker_threads';
import type { ConvertFn, ConvertOptions, SegmentReportLike } from './types.js';

/**
 * @seglift/segment's PIPELINE_THREAD_RESOURCE_LIMITS, repeated here so this main thread does not
 * load the segment package (and its native codecs) just for a constant; a test keeps them equal.
 */
export const THREAD_RESOURCE_LIMITS = { maxYoungGenerationSizeMb: 24 } as const;

/** An error rebuilt from the thread's message, keeping code and the typed JSON. */
export class ThreadError extends Error {
  readonly code?: string;
  readonly json: Record<string, unknown>;
  override readonly cause?: { code?: string };
  constructor(e: {
    name?: string;
    message?: string;
    code?: unknown;
    causeCode?: unknown;
    stack?: string;
    json?: unknown;
  }) {
    super(e.message ?? 'conversion failed');
    this.name = e.name ?? 'Error';
    if (typeof e.code === 'string') this.code = e.code;
    if (typeof e.causeCode === 'string') this.cause = { code: e.causeCode };
    this.json = (e.json as Record<string, unknown>) ?? { name: this.name, message: this.message };
    if (e.stack) this.stack = e.stack;
  }
}

export interface ThreadPoolOptions {
  /** Threads at most (the worker's concurrency). */
  size: number;
  /** Compiled thread entry (dist/thread.js). */
  threadUrl?: URL;
  progressIntervalMs?: number;
  /** After an abort, how long the pipeline gets to clean up before the thread is terminated. */
  abortTimeoutMs?: number;
}

export interface ThreadPool {
  convert: ConvertFn;
  /** Terminates every thread (call after the last conversion finished). */
  close(): Promise<void>;
}

interface PoolThread {
  worker: Worker;
  busy?: {
    id: number;
    resolve: (r: SegmentReportLike) => void;
    reject: (e: Error) => void;
    onProgress?: (done: number, total?: number) => void;
  };
}

/**
 * Conversions in worker threads: one conversion per thread at a time, threads reused, at most
 * `size` of them (extra calls wait for a free thread). A thread that does not stop after an abort
 * within `abortTimeoutMs`, or dies, is replaced.
 */
export function threadPool(opts: ThreadPoolOptions): ThreadPool {
  const threadUrl = opts.threadUrl ?? new URL('./thread.js', import.meta.url);
  const threads = new Set<PoolThread>();
  const waiting: Array<() => void> = [];
  let nextId = 1;
  let closed = false;

  const spawnThread = (): PoolThread => {
    const t: PoolThread = {
      worker: new Worker(threadUrl, {
        workerData: { progressIntervalMs: opts.progressIntervalMs ?? 250 },
        resourceLimits: THREAD_RESOURCE_LIMITS,
      }),
    };
    t.worker.on(
      'message',
      (m: { type: string; id: number; done?: number; total?: number; report?: unknown; error?: never }) => {
        const job = t.busy;
        if (job === undefined || m.id !== job.id) return;
        if (m.type === 'progress') {
          job.onProgress?.(m.done ?? 0, m.total);
          return;
        }
        t.busy = undefined;
        if (m.type === 'done') job.resolve(m.report as SegmentReportLike);
        else job.reject(new ThreadError(m.error ?? {}));
        waiting.shift()?.();
      },
    );
    const dead = (err: Error) => {
      threads.delete(t);
      const job = t.busy;
      t.busy = undefined;
      job?.reject(err);
      waiting.shift()?.();
    };
    t.worker.on('error', dead);
    t.worker.on('exit', (code) => dead(new Error(`conversion thread exited with code ${code}`)));
    threads.add(t);
    return t;
  };

  const acquire = async (): Promise<PoolThread> => {
    for (;;) {
      if (closed) throw new Error('thread pool closed');
      for (const t of threads) if (t.busy === undefined) return t;
      if (threads.size < opts.size) return spawnThread();
      await new Promise<void>((r) => waiting.push(r));
    }
  };

  const convert: ConvertFn = async (logPath: string, options: ConvertOptions) => {
    const { signal, onProgress, ...plain } = options;
    signal?.throwIfAborted();
    const t = await acquire();
    const id = nextId++;
    return new Promise<SegmentReportLike>((resolve, reject) => {
      let killTimer: NodeJS.Timeout | undefined;
      const onAbort = () => {
        t.worker.postMessage({ type: 'abort', id });
        killTimer = setTimeout(() => {
          // The thread is stuck in a synchronous call: kill it (leftovers are recovered later).
          void t.worker.terminate();
        }, opts.abortTimeoutMs ?? 10_000);
      };
      const done = () => {
        signal?.removeEventListener('abort', onAbort);
        clearTimeout(killTimer);
      };
      t.busy = {
        id,
        onProgress,
        resolve: (r) => {
          done();
          resolve(r);
        },
        reject: (e) => {
          done();
          reject(e);
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      t.worker.postMessage({ type: 'convert', id, logPath, options: plain });
    });
  };

  return {
    convert,
    async close() {
      closed = true;
      for (const w of waiting.splice(0)) w();
      await Promise.all([...threads].map((t) => t.worker.terminate()));
    },
  };
}
