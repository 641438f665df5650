/**
 * worker_threads entry of the migrate pool: converts one segment per message. Loaded from dist
 * (`dist/worker.js`); every codec call is synchronous, so threads are what gives parallelism.
 */
import { parentPort } from 'node:worker_threads';
import { type ConvertOptions, convertSegment } from './convert.js';

export interface WorkerRequest {
  type: 'convert';
  id: number;
  logPath: string;
  options: Omit<ConvertOptions, 'signal' | 'onProgress' | 'testHooks'>;
}

export type WorkerMessage =
  | { type: 'progress'; id: number; bytesDone: number; bytesTotal: number }
  | { type: 'done'; id: number; report: import('./report.js').SegmentReport };

if (parentPort) {
  const port = parentPort;
  let controller = new AbortController();
  port.on('message', async (msg: WorkerRequest | { type: 'abort' }) => {
    if (msg.type === 'abort') {
      controller.abort();
      return;
    }
    if (controller.signal.aborted) controller = new AbortController();
    // Test hook: end this thread abruptly (as an out-of-memory or native crash would) on the
    // segment named by the variable, so the pool's handling of a dead thread can be tested.
    if (
      process.env.SEGLIFT_TEST_THREAD_CRASH &&
      msg.logPath.endsWith(process.env.SEGLIFT_TEST_THREAD_CRASH)
    ) {
      process.exit(70);
    }
    const report = await convertSegment(msg.logPath, {
      ...msg.options,
      signal: controller.signal,
      onProgress: (bytesDone, bytesTotal) =>
        port.postMessage({ type: 'progress', id: msg.id, bytesDone, bytesTotal }),
    });
    port.postMessage({ type: 'done', id: msg.id, report } satisfies WorkerMessage);
  });
}
