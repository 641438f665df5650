/**
 * worker_threads entry of the conversion pool (pool.ts holds the protocol): converts one segment
 * per message. Loaded from dist (`dist/conversion-thread.js`).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { type IoThreadInit, joinThreadInit, lowerPriority, prepareNice } from './files/io-courtesy.js';
import { convertSegment } from './placements/convert.js';
import type { FromThread, ToThread } from './runs/pool.js';
import { swapRefused } from './runs/pool.js';

if (parentPort) {
  const port = parentPort;
  const post = (m: FromThread) => port.postMessage(m);
  const controllers = new Map<number, AbortController>();
  const gates = new Map<number, { go: () => void; refuse: (reason: string) => void }>();
  joinThreadInit(workerData as IoThreadInit | undefined);
  let lowered = false;
  port.on('message', async (m: ToThread) => {
    if (m.type === 'abort') {
      controllers.get(m.id)?.abort(new Error(m.reason));
      return;
    }
    if (m.type === 'swap') {
      const g = gates.get(m.id);
      gates.delete(m.id);
      if (m.go) g?.go();
      else g?.refuse(m.reason ?? 'the caller refused the swap');
      return;
    }
    // A prepare beside a running broker (a worker's prepare job): this thread yields to it from
    // now on (a thread's nice value cannot be raised back without privilege).
    if (m.placement.kind === 'stage' && prepareNice() && !lowered) {
      lowerPriority('thread');
      lowered = true;
    }
    const controller = new AbortController();
    controllers.set(m.id, controller);
    const report = await convertSegment(m.logPath, m.settings, m.placement, {
      signal: controller.signal,
      onProgress: (bytesDone, bytesTotal) => post({ type: 'progress', id: m.id, bytesDone, bytesTotal }),
      beforeSwap: m.gated
        ? () =>
            new Promise<void>((resolve, reject) => {
              gates.set(m.id, { go: resolve, refuse: (reason) => reject(swapRefused(reason, m.logPath)) });
              post({ type: 'swap-ready', id: m.id });
            })
        : undefined,
    });
    controllers.delete(m.id);
    post({ type: 'done', id: m.id, report });
  });
}
