import type { Writable } from 'node:stream';
import { formatBytes } from './table.js';

/**
 * A one-line progress bar on stderr, redrawn at most 10 times a second, and only when stderr is
 * a terminal (in logs and pipes it would be noise).
 */
export class ProgressBar {
  private last = 0;
  private drawn = false;
  private readonly started = performance.now();
  bytesDone = 0;
  bytesTotal = 0;
  segmentsDone = 0;
  segmentsTotal = 0;
  failed = 0;

  constructor(
    private readonly stream: Writable,
    private readonly enabled: boolean,
  ) {}

  update(force = false): void {
    if (!this.enabled) return;
    const now = performance.now();
    if (!force && now - this.last < 100) return;
    this.last = now;
    const frac = this.bytesTotal > 0 ? Math.min(1, this.bytesDone / this.bytesTotal) : 0;
    const width = 24;
    const filled = Math.round(frac * width);
    const secs = (now - this.started) / 1000;
    const rate = secs > 0 ? this.bytesDone / secs : 0;
    const line =
      `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${(frac * 100).toFixed(0).padStart(3)}% ` +
      `${formatBytes(this.bytesDone)}/${formatBytes(this.bytesTotal)} ` +
      `${this.segmentsDone}/${this.segmentsTotal} segments${this.failed > 0 ? ` (${this.failed} failed)` : ''} ` +
      `${formatBytes(rate)}/s`;
    this.stream.write(`\r\x1b[2K${line}`);
    this.drawn = true;
  }

  /** Clears the bar so the summary starts on a clean line. */
  done(): void {
    if (this.enabled && this.drawn) this.stream.write('\r\x1b[2K');
  }
}
