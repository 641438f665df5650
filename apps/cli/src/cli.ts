import type { Command, CommandContext } from './command.js';
import { EXIT_CODES_HELP, ExitCode, exitCodeOf, formatError, UsageError } from './exit-codes.js';
import { type CliIO, LineWriter, processIO } from './io.js';
import { cliVersion } from './version.js';

/** A command as the main help lists it; its module is loaded only when it runs or shows its help. */
export interface CommandEntry {
  name: string;
  summary: string;
  load(): Promise<Command>;
}

// Loaded on demand: `seglift --version` and `--help` load none of them, and `seglift inspect`
// does not pay for migrate's pool or audit's settings (issue 26; measured in bench/startup).
export const COMMANDS: readonly CommandEntry[] = [
  {
    name: 'inspect',
    summary: 'dump .log/.index/.timeindex files like kafka-dump-log.sh',
    load: async () => (await import('./commands/inspect.js')).inspectCommand,
  },
  {
    name: 'verify',
    summary: 'check CRCs, structure, offsets and indexes of segments',
    load: async () => (await import('./commands/verify.js')).verifyCommand,
  },
  {
    name: 'convert',
    summary: 'upconvert/recompress segments to a target codec (--out DIR or --in-place)',
    load: async () => (await import('./commands/convert.js')).convertCommand,
  },
  {
    name: 'migrate',
    summary: 'convert every closed segment of log dirs in place, in parallel',
    load: async () => (await import('./commands/migrate.js')).migrateCommand,
  },
  {
    name: 'audit',
    summary: 'Kafka 4 readiness: legacy data, codecs, what a migrate would change and the disk it needs',
    load: async () => (await import('./commands/audit.js')).auditCommand,
  },
  {
    name: 'config',
    summary: 'config print: the effective configuration, secrets redacted',
    load: async () => (await import('./commands/config.js')).configCommand,
  },
  {
    name: 'tier-prepare',
    summary: 'write what tiered storage needs of old segments (producer snapshots, leader epochs)',
    load: async () => (await import('./commands/tier-prepare.js')).tierPrepareCommand,
  },
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
  const entry = COMMANDS.find((c) => c.name === name);
  if (!entry) {
    // Loaded for the mistake only (start-up: bench/startup.bench.mjs).
    const { nearest } = await import('@seglift/config');
    const guess = nearest(
      name,
      COMMANDS.map((c) => c.name),
    );
    throw new UsageError(`unknown command '${name}'${guess ? `; did you mean ${guess}?` : ''}`);
  }
  const command = await entry.load();
  if (rest.includes('--help') || rest.includes('-h')) {
    ctx.out.write(command.help);
    return ExitCode.OK;
  }
  return command.run(rest, ctx);
}
