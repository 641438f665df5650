/**
 * worker_threads entry: runs one convertSegment off the main thread, because codec calls are
 * synchronous and would otherwise starve BullMQ's lock renewal and the other jobs.
 * Messages to the parent: { type: 'progress', done, total } | { type: 'done', report } |
 * { type: 'error', error }. From the parent: { type: 'abort' }.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { errorJson } from './classify.js';
import { loadSegmentApi } from './segment-api.js';
import type { ConvertOptions } from './types.js';

const { logPath, options, progressIntervalMs } = workerData as {
  logPath: string;
  options: Omit<ConvertOptions, 'signal' | 'onProgress'>;
  progressIntervalMs: number;
};
const controller = new AbortController();
parentPort!.on('message', (m: { type?: string }) => {
  if (m?.type === 'abort') controller.abort(new Error('conversion aborted (worker shutting down)'));
});

let last = 0;
const { convertSegment } = await loadSegmentApi();
convertSegment(logPath, {
  ...options,
  signal: controller.signal,
  onProgress: (done: number, total?: number) => {
    const now = Date.now();
    if (now - last < progressIntervalMs && done !== total) return;
    last = now;
    parentPort!.postMessage({ type: 'progress', done, total });
  },
}).then(
  (report) => parentPort!.postMessage({ type: 'done', report: serializeReport(report) }),
  (err) => parentPort!.postMessage({ type: 'error', error: serializeError(err) }),
);

function serializeError(err: unknown): Record<string, unknown> {
  const e = err as {
    name?: string;
    message?: string;
    code?: unknown;
    stack?: string;
    cause?: { code?: unknown };
  };
  return {
    name: e?.name,
    message: e?.message ?? String(err),
    code: e?.code,
    causeCode: e?.cause?.code,
    stack: e?.stack,
    json: errorJson(err),
  };
}

/** Structured clone drops class identity; errors inside the report become their JSON. */
function serializeReport(report: unknown): unknown {
  if (report === null || typeof report !== 'object') return report;
  const r = { ...(report as Record<string, unknown>) };
  if (r.error !== undefined && r.error !== null) r.error = errorJson(r.error);
  return JSON.parse(JSON.stringify(r, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)));
}
