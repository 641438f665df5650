import type { CliIO, LineWriter } from './io.js';

export interface CommandContext {
  io: CliIO;
  /** stdout, line-buffered with backpressure. */
  out: LineWriter;
  /** stderr, line-buffered with backpressure. */
  err: LineWriter;
}

export interface Command {
  name: string;
  help: string;
  run(argv: string[], ctx: CommandContext): Promise<number>;
}
