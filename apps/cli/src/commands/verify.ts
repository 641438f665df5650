import type { Command } from '../command.js';
import { EXIT_CODES_HELP, ExitCode } from '../exit-codes.js';

export const verifyCommand: Command = {
  name: 'verify',
  summary: 'TODO',
  help: `Usage: seglift verify\n\n${EXIT_CODES_HELP}\n`,
  async run(_argv, ctx) {
    ctx.err.line('not implemented yet');
    return ExitCode.INTERNAL;
  },
};
