import type { Command } from '../command.js';
import { EXIT_CODES_HELP, ExitCode } from '../exit-codes.js';

export const configCommand: Command = {
  name: 'config',
  summary: 'TODO',
  help: `Usage: seglift config\n\n${EXIT_CODES_HELP}\n`,
  async run(_argv, ctx) {
    ctx.err.line('not implemented yet');
    return ExitCode.INTERNAL;
  },
};
