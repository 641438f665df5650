import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { ProgressBar } from './progress.js';

function bar(enabled = true) {
  let t = 0;
  const stream = new PassThrough();
  let out = '';
  stream.on('data', (b: Buffer) => {
    out += String(b);
  });
  const b = new ProgressBar(stream, enabled, () => t);
  return { b, tick: (ms: number) => (t += ms), out: () => out };
}

describe('ProgressBar', () => {
  it('shows no rate in its first second (83.534755518115 B/s was the first frame), then a rounded one and the time left', () => {
    const { b, tick } = bar();
    b.bytesTotal = 3 * 1024 * 1024;
    b.segmentsTotal = 12;
    b.bytesDone = 83.5;
    expect(b.render()).toBe('[------------------------]   0% 84 B/3.0 MiB 0/12 segments');
    tick(2000);
    b.bytesDone = 1024 * 1024;
    b.segmentsDone = 4;
    expect(b.render()).toBe(
      '[########----------------]  33% 1.0 MiB/3.0 MiB 4/12 segments 512.0 KiB/s, 4.0 s left',
    );
    b.bytesDone = b.bytesTotal;
    b.segmentsDone = 12;
    b.failed = 1;
    expect(b.render()).toBe(
      '[########################] 100% 3.0 MiB/3.0 MiB 12/12 segments (1 failed) 1.5 MiB/s',
    );
  });

  it('names the I/O limit once it made a read or write wait', () => {
    const { b } = bar();
    b.bytesTotal = 1024;
    b.segmentsTotal = 1;
    let waitedMs = 0;
    b.ioLimit = () => ({ maxBytesPerSecond: 20 * 1024 * 1024, waitedMs });
    expect(b.render()).toBe('[------------------------]   0% 0 B/1.0 KiB 0/1 segment');
    waitedMs = 5;
    expect(b.render()).toBe('[------------------------]   0% 0 B/1.0 KiB 0/1 segment (io limit 20.0 MiB/s)');
  });

  it('counts in words: 1 segment, 3 segments', () => {
    const { b } = bar();
    b.segmentsTotal = 1;
    expect(b.render()).toMatch(/ 0\/1 segment$/);
    b.segmentsTotal = 3;
    expect(b.render()).toMatch(/ 0\/3 segments$/);
  });

  it('redraws at most every 100 ms, on one line, and clears itself; nothing when stderr is no terminal', () => {
    const { b, tick, out } = bar();
    b.update();
    b.update();
    tick(100);
    b.update();
    b.done();
    expect(out().split('\r\x1b[2K')).toHaveLength(4);
    expect(out().endsWith('\r\x1b[2K')).toBe(true);
    const off = bar(false);
    off.b.update(true);
    off.b.done();
    expect(off.out()).toBe('');
  });
});
