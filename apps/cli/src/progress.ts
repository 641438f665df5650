import type { Writable } from 'node:stream';
import { count, formatBytes, formatDuration } from './table.js';

/** A rate or time left measured over less than this is noise: the bar shows neither before. */
const SETTLE_MS = 1000;

/**
 * A one-line progress bar on stderr, redrawn at most 10 times a second, and only when stderr is
 * a terminal (in logs and pipes it would be noise):
 * `[######------------------]  25% 1.2 MiB/4.8 MiB 3/12 segments 2.1 MiB/s, 2 s left`.
 */
export class ProgressBar {
  private last = Number.NEGATIVE_INFINITY;
  private drawn = false;
  private readonly started: number;
  bytesDone = 0;
  bytesTotal = 0;
  segmentsDone = 0;
  segmentsTotal = 0;
  failed = 0;
  /** What is counted (`segment`): singular, the plural adds an s. */
  unit = 'segment';
  /** The I/O limit, shown once it made a read or write wait (`io-courtesy.ts`' ioThrottle). */
  ioLimit: () => { maxBytesPerSecond: number; waitedMs: number } | undefined = () => undefined;

  constructor(
    private readonly stream: Writable,
    private readonly enabled: boolean,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.started = now();
  }

  /** The bar's text at this moment (without the terminal control characters). */
  render(): string {
    const now = this.now();
    const frac = this.bytesTotal > 0 ? Math.min(1, this.bytesDone / this.bytesTotal) : 0;
    const width = 24;
    const filled = Math.round(frac * width);
    const elapsed = now - this.started;
    let speed = '';
    if (elapsed >= SETTLE_MS && this.bytesDone > 0) {
      const rate = this.bytesDone / (elapsed / 1000);
      const left = Math.max(0, this.bytesTotal - this.bytesDone) / rate;
      speed = ` ${formatBytes(rate)}/s${this.bytesDone < this.bytesTotal ? `, ${formatDuration(left * 1000)} left` : ''}`;
    }
    return (
      `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${(frac * 100).toFixed(0).padStart(3)}% ` +
      `${formatBytes(this.bytesDone)}/${formatBytes(this.bytesTotal)} ` +
      `${this.segmentsDone}/${count(this.segmentsTotal, this.unit)}` +
      `${this.failed > 0 ? ` (${this.failed} failed)` : ''}${speed}${this.limitText()}`
    );
  }

  private limitText(): string {
    const t = this.ioLimit();
    return t === undefined || t.waitedMs === 0 ? '' : ` (io limit ${formatBytes(t.maxBytesPerSecond)}/s)`;
  }

  update(force = false): void {
    if (!this.enabled) return;
    const now = this.now();
    if (!force && now - this.last < 100) return;
    this.last = now;
    this.stream.write(`\r\x1b[2K${this.render()}`);
    this.drawn = true;
  }

  /** Clears the bar so the summary starts on a clean line. */
  done(): void {
    if (this.enabled && this.drawn) this.stream.write('\r\x1b[2K');
    this.drawn = false;
  }
}
