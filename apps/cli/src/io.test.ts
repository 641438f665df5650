import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { LineWriter } from './io.js';

describe('LineWriter', () => {
  it('waits for drain thousands of times without piling up listeners (MaxListenersExceededWarning on a pipe)', async () => {
    // A reader slower than the writer, as a pipe into `less` or `gzip`: every flush waits.
    const slow = new Writable({
      highWaterMark: 1,
      write(_chunk, _enc, cb) {
        setImmediate(cb);
      },
    });
    const base = { close: slow.listenerCount('close'), error: slow.listenerCount('error') };
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on('warning', onWarning);
    try {
      const out = new LineWriter(slow);
      const line = 'x'.repeat(1000);
      let waits = 0;
      for (let i = 0; i < 200_000 && waits < 2000; i++) {
        const p = out.line(line);
        if (p) {
          await p;
          waits++;
        }
      }
      await out.flush();
      expect(waits).toBe(2000);
      // LineWriter's own EPIPE listener is the only one it adds for good.
      expect(slow.listenerCount('error')).toBe(base.error + 1);
      expect(slow.listenerCount('close')).toBe(base.close);
      expect(slow.listenerCount('drain')).toBe(0);
      await new Promise((r) => setImmediate(r));
      expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });
});
