import type { Command, CommandContext } from './command.js';
import { auditCommand } from './commands/audit.js';
import { configCommand } from './commands/config.js';
import { convertCommand } from './commands/convert.js';
import { inspectCommand } from './commands/inspect.js';
import { migrateCommand } from './commands/migrate.js';
import { tierPrepareCommand } from './commands/tier-prepare.js';
import { verifyCommand } from './commands/verify.js';
import { EXIT_CODES_HELP, ExitCode, exitCodeOf, formatError, UsageError } from './exit-codes.js';
import { type CliIO, LineWriter, processIO } from './io.js';
import { cliVersion } from './version.js';

export const COMMANDS: readonly Command[] = [
  inspectCommand,
  verifyCommand,
  convertCommand,
  migrateCommand,
  auditCommand,
  configCommand,
  tierPrepareCommand,
];

export function mainHelp(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return `seglift ${cliVersion()}: rewrite Apache Kafka log segments offline

Usage: seglift <command> [options]

Commands:
${COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`).join('\n')}

Run 'seglift <command> --help' for the options of a command.
Global options: --help, --version.
Output: human-readable text on stdout, diagnostics on stderr; --json gives NDJSON for scripts.

${EXIT_CODES_HELP}
`;
}

/**
 * Runs one seglift command line in-process and returns the exit code; never calls
 * process.exit, so tests and other apps can call it.
 */
export async function runCli(argv: string[], io: CliIO = processIO()): Promise<number> {
  const ctx: CommandContext = { io, out: new LineWriter(io.stdout), err: new LineWriter(io.stderr) };
  let code: number;
  try {
    code = await dispatch(argv, ctx);
  } catch (err) {
    code = exitCodeOf(err);
    ctx.err.line(formatError(err));
    if (err instanceof UsageError) {
      const cmd = err.command;
      ctx.err.line(cmd ? `Run 'seglift ${cmd} --help' for usage.` : `Run 'seglift --help' for usage.`);
    } else if (code === ExitCode.INTERNAL && err instanceof Error && err.stack) {
      ctx.err.line(err.stack);
    }
  }
  await ctx.out.flush();
  await ctx.err.flush();
  return code;
}

async function dispatch(argv: string[], ctx: CommandContext): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    if (name === 'help' && rest[0]) return dispatch([rest[0], '--help'], ctx);
    ctx.out.write(mainHelp());
    return name === undefined ? ExitCode.USAGE : ExitCode.OK;
  }
  if (name === '--version' || name === '-V' || name === 'version') {
    ctx.out.line(cliVersion());
    return ExitCode.OK;
  }
  const command = COMMANDS.find((c) => c.name === name);
  if (!command) throw new UsageError(`unknown command '${name}'`);
  if (rest.includes('--help') || rest.includes('-h')) {
    ctx.out.write(command.help);
    return ExitCode.OK;
  }
  return command.run(rest, ctx);
}
