import { SegliftError } from '@seglift/format';

/** One thing wrong with the configuration: where it is, what it was, what is allowed. */
export interface ConfigProblem {
  /** Dotted field path, e.g. `worker.concurrency` ('' for the whole document). */
  path: string;
  /** The offending value (secrets redacted); undefined when the field is missing. */
  value?: unknown;
  /** What is allowed. */
  message: string;
  /** Where the value came from: `default`, `file <path>`, `env SEGLIFT_X`, `flag`. */
  source?: string;
}

/** Invalid configuration; lists every problem found, not just the first. */
export class ConfigError extends SegliftError {
  readonly problems: ConfigProblem[];
  constructor(problems: ConfigProblem[]) {
    super('INVALID_ARGUMENT', `invalid configuration:\n${problems.map(formatProblem).join('\n')}`);
    this.problems = problems;
  }

  override toJSON(): Record<string, unknown> {
    return { ...super.toJSON(), problems: this.problems };
  }
}

function formatProblem(p: ConfigProblem): string {
  const where = p.path === '' ? '(config)' : p.path;
  const value = p.value === undefined ? '' : ` = ${JSON.stringify(p.value)}`;
  const source = p.source === undefined ? '' : ` (from ${p.source})`;
  return `  - ${where}${value}${source}: ${p.message}`;
}
