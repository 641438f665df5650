import type { Command } from '../command.js';
import { EXIT_CODES_HELP, ExitCode } from '../exit-codes.js';

export const auditCommand: Command = {
  name: 'audit',
  summary: 'TODO',
  help: `Usage: seglift audit\n\n${EXIT_CODES_HELP}\n`,
  async run(_argv, ctx) {
    ctx.err.line('not implemented yet');
    return ExitCode.INTERNAL;
  },
};
