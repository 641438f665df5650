import { once } from 'node:events';
import type { Writable } from 'node:stream';

/** Where a command writes: human output and NDJSON on stdout, diagnostics on stderr. */
export interface CliIO {
  stdout: Writable;
  stderr: Writable;
  /** Whether stderr is a terminal (progress bars are drawn only then). */
  stderrIsTTY: boolean;
  env: NodeJS.ProcessEnv;
  cwd: string;
}

export function processIO(): CliIO {
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    stderrIsTTY: process.stderr.isTTY === true,
    env: process.env,
    cwd: process.cwd(),
  };
}

const FLUSH_AT = 64 * 1024;

/**
 * Line output with backpressure: a dump of a 1 GiB segment is millions of lines, so lines are
 * batched into ~64 KiB writes and the writer waits for 'drain' instead of buffering all of it.
 */
export class LineWriter {
  private parts: string[] = [];
  private size = 0;
  /** Set when the reader went away (EPIPE, e.g. `| head`): further output is dropped. */
  closed = false;

  constructor(private readonly stream: Writable) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EPIPE') this.closed = true;
    });
  }

  /** Appends text (callers add '\n'); returns a promise only when a flush is due. */
  write(text: string): Promise<void> | undefined {
    if (this.closed) return undefined;
    this.parts.push(text);
    this.size += text.length;
    return this.size >= FLUSH_AT ? this.flush() : undefined;
  }

  line(text: string): Promise<void> | undefined {
    return this.write(`${text}\n`);
  }

  async flush(): Promise<void> {
    if (this.size === 0 && this.parts.length === 0) return;
    const data = this.parts.join('');
    this.parts = [];
    this.size = 0;
    if (this.closed) return;
    try {
      if (!this.stream.write(data)) {
        // The listeners of the waits that did not win are removed (a long dump waits thousands
        // of times: they would pile up on the stream).
        const done = new AbortController();
        const wait = (event: string) => once(this.stream, event, { signal: done.signal }).catch(() => {});
        try {
          await Promise.race([wait('drain'), wait('close'), wait('error')]);
        } finally {
          done.abort();
        }
      }
    } catch (err) {
      // The reader went away (`seglift inspect ... | head`): not an error of ours.
      if ((err as NodeJS.ErrnoException).code === 'EPIPE') this.closed = true;
      else throw err;
    }
  }
}

/** JSON with bigints as decimal strings (offsets, timestamps, producer ids). */
export function toJsonLine(value: unknown): string {
  return JSON.stringify(value, (_key, v) => (typeof v === 'bigint' ? v.toString() : v));
}
