import { SegliftError } from '@seglift/format';

/** Process exit codes, documented in every --help text and in apps/cli/README.md. */
export const ExitCode = {
  /** Everything read, converted or verified cleanly. */
  OK: 0,
  /** A segment failed: bad CRC, truncation, unknown codec, decompression bomb, not a segment. */
  SEGMENT_FAILED: 1,
  /**
   * The command line or the configuration was wrong (unknown option, missing argument, bad value,
   * a path given that does not exist): nothing was read or written. A typo in a path is the
   * operator's to fix, not a bad segment: a script must not read it as corrupt data (1).
   */
  USAGE: 2,
  /** A bug or an unexpected environment problem inside seglift. */
  INTERNAL: 3,
  /** Stopped by Ctrl-C (128 + SIGINT): what was not done is left as it was; rerun to resume. */
  INTERRUPTED: 130,
  /** Stopped by SIGTERM (128 + SIGTERM), e.g. a Kubernetes pod being stopped. */
  TERMINATED: 143,
} as const;
export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode];

export const EXIT_CODES_HELP = `Exit codes:
  0  ok
  1  a segment failed (bad CRC, truncation, unknown codec, decompression bomb, not a segment,
     a file that could not be read while the command ran); the message names the file, the
     byte position and the offset
  2  usage error or invalid configuration (every problem is listed), a path given that does not
     exist, or a path outside the configured roots: nothing was read or written
  3  internal error
  130/143  stopped by SIGINT/SIGTERM (migrate): the rest is left as it was; rerun to resume`;

/** A command line mistake: printed as `error: ...` with a pointer to --help, exit code 2. */
export class UsageError extends Error {
  readonly command: string | undefined;
  constructor(message: string, command?: string) {
    super(message);
    this.name = 'UsageError';
    this.command = command;
  }
}

/** Node's fs errors carry a code like ENOENT; they are bad input (exit 1), not bugs. */
export function isFsError(err: unknown): err is NodeJS.ErrnoException & { path?: string } {
  return (
    err instanceof Error &&
    typeof (err as NodeJS.ErrnoException).code === 'string' &&
    typeof (err as NodeJS.ErrnoException).syscall === 'string'
  );
}

/** One line for stderr: `error[CODE]: message` for typed errors, plain otherwise. */
export function formatError(err: unknown): string {
  if (err instanceof SegliftError) return `error[${err.code}]: ${err.message}`;
  if (isFsError(err)) return `error[IO]: ${err.message}`;
  if (err instanceof Error) return `error: ${err.message}`;
  return `error: ${String(err)}`;
}

const USAGE_CODES: ReadonlySet<string> = new Set([
  'INVALID_ARGUMENT',
  'STAGE_DIR',
  'LOG_DIR_LOCKED',
  'LOG_DIR_UNKNOWN',
  'PATH_OUTSIDE_ROOTS',
]);

/** Exit code an error stands for when it ends a command. */
export function exitCodeOf(err: unknown): ExitCodeValue {
  if (err instanceof UsageError) return ExitCode.USAGE;
  if (err instanceof SegliftError)
    // A stage dir that cannot be used, a log dir a broker holds, or a path outside the configured
    // roots is a usage problem: nothing was read or written.
    return USAGE_CODES.has(err.code) ? ExitCode.USAGE : ExitCode.SEGMENT_FAILED;
  if (isFsError(err)) return ExitCode.SEGMENT_FAILED;
  return ExitCode.INTERNAL;
}
