/**
 * worker_threads entry: runs convertSegment calls off the main thread, because codec calls are
 * synchronous and would otherwise starve BullMQ's lock renewal and the other jobs. One thread
 * runs one conversion at a time and is reused (loading the native codecs costs ~0.2 s).
 * From the parent: { type: 'convert', id, logPath, options } | { type: 'abort', id }.
 * To the parent: { type: 'progress', id, done, total } | { type: 'done', id, report } |
 * { type: 'error', id, error }.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { errorJson } from './classify.js';
import { loadSegmentApi } from './segment-api.js';
import type { ConvertOptions } from './types.js';

const { progressIntervalMs } = (workerData ?? {}) as { progressIntervalMs?: number };
const api = loadSegmentApi();
const controllers = new Map<number, AbortController>();

type Message =
  | { type: 'convert'; id: number; logPath: string; options: Omit<ConvertOptions, 'signal' | 'onProgress'> }
  | { type: 'abort'; id: number };

parentPort!.on('message', (m: Message) => {
  if (m.type === 'abort') {
    controllers.get(m.id)?.abort(new Error('conversion aborted (worker shutting down)'));
    return;
  }
  if (m.type !== 'convert') return;
  const controller = new AbortController();
  controllers.set(m.id, controller);
  let last = 0;
  api
    .then(({ convertSegment }) =>
      convertSegment(m.logPath, {
        ...m.options,
        signal: controller.signal,
        onProgress: (done: number, total?: number) => {
          const now = Date.now();
          if (now - last < (progressIntervalMs ?? 250) && done !== total) return;
          last = now;
          parentPort!.postMessage({ type: 'progress', id: m.id, done, total });
        },
      }),
    )
    .then(
      (report) => parentPort!.postMessage({ type: 'done', id: m.id, report: serializeReport(report) }),
      (err) => parentPort!.postMessage({ type: 'error', id: m.id, error: serializeError(err) }),
    )
    .finally(() => controllers.delete(m.id));
});

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
