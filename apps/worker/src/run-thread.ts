import { Worker } from 'node:worker_threads';
import type { ConvertFn, ConvertOptions, SegmentReportLike } from './types.js';

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

export interface ThreadConvertOptions {
  /** Compiled thread entry (dist/thread.js). */
  threadUrl?: URL;
  progressIntervalMs?: number;
  /** After an abort, how long the pipeline gets to clean up before the thread is terminated. */
  abortTimeoutMs?: number;
}

/** A ConvertFn running each conversion in a fresh worker thread (isolated memory, abortable). */
export function threadConvert(opts: ThreadConvertOptions = {}): ConvertFn {
  const threadUrl = opts.threadUrl ?? new URL('./thread.js', import.meta.url);
  return (logPath: string, options: ConvertOptions): Promise<SegmentReportLike> => {
    const { signal, onProgress, ...plain } = options;
    return new Promise((resolve, reject) => {
      const worker = new Worker(threadUrl, {
        workerData: { logPath, options: plain, progressIntervalMs: opts.progressIntervalMs ?? 250 },
      });
      let settled = false;
      let killTimer: NodeJS.Timeout | undefined;
      const settle = (fn: () => void) => {
        if (settled) return;
        settled = true;
        signal?.removeEventListener('abort', onAbort);
        clearTimeout(killTimer);
        fn();
      };
      const onAbort = () => {
        worker.postMessage({ type: 'abort' });
        killTimer = setTimeout(() => {
          void worker.terminate();
          settle(() => reject(new Error('conversion thread did not stop after abort; terminated')));
        }, opts.abortTimeoutMs ?? 10_000);
      };
      if (signal?.aborted) onAbort();
      else signal?.addEventListener('abort', onAbort, { once: true });
      worker.on(
        'message',
        (m: { type: string; done?: number; total?: number; report?: unknown; error?: never }) => {
          if (m.type === 'progress') onProgress?.(m.done ?? 0, m.total);
          else if (m.type === 'done') settle(() => resolve(m.report as SegmentReportLike));
          else if (m.type === 'error') settle(() => reject(new ThreadError(m.error ?? {})));
        },
      );
      worker.on('error', (err) => settle(() => reject(err)));
      worker.on('exit', (code) =>
        settle(() => reject(new Error(`conversion thread exited with code ${code}`))),
      );
    });
  };
}
