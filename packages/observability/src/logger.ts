import { writeSync } from 'node:fs';
import { isatty } from 'node:tty';
import { type DestinationStream, type Logger, type LoggerOptions as PinoOptions, pino } from 'pino';
import { redactString, sanitize, serializeError } from './redact.js';

export type { Logger } from 'pino';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export interface CreateLoggerOptions {
  /** Component name, e.g. `seglift-worker`; every line carries it. */
  name: string;
  /** Default `info`. */
  level?: LogLevel;
  /** Human-readable lines instead of JSON. Default: whether the destination is a TTY. */
  pretty?: boolean;
  /** Fields added to every line (e.g. `{ queue: 'seglift' }`). Secrets in them are redacted. */
  bindings?: Record<string, unknown>;
  /**
   * File descriptor (1 stdout, 2 stderr) or a stream with `write(line)`. Default 2: the CLI's
   * stdout carries command output (tables, JSON reports), so logs never mix into it.
   */
  destination?: number | { write(chunk: string): unknown };
}

/** Context a worker binds to a child logger for one job. */
export interface SegmentLogContext {
  jobId?: string;
  /** Path of the `.log` file. */
  segment?: string;
  /** Partition directory name, `<topic>-<partition>`. */
  partition?: string;
  [key: string]: unknown;
}

/**
 * A pino logger: one JSON object per line with level names (`"level":"info"`), ISO timestamps,
 * errors serialized with their typed context (`code`, `file`, `position`, `offset`), bigints as
 * strings and secrets redacted (credentials in URLs, keys named like password/secret/token).
 */
export function createLogger(options: CreateLoggerOptions): Logger {
  const dest = options.destination ?? 2;
  const pretty = options.pretty ?? (typeof dest === 'number' && isatty(dest));
  const pinoOptions: PinoOptions = {
    name: options.name,
    level: options.level ?? 'info',
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: {
      level: (label) => ({ level: label }),
      bindings: (bindings) => sanitize(bindings) as Record<string, unknown>,
      log: (obj) => sanitize(obj) as Record<string, unknown>,
    },
    serializers: {
      err: (err: unknown) => serializeError(err),
      error: (err: unknown) => serializeError(err),
      // The message is not passed through formatters.log; an error's message becomes it.
      msg: (msg: unknown) => (typeof msg === 'string' ? redactString(msg) : msg),
    },
  };
  let stream: DestinationStream;
  if (typeof dest === 'number') {
    // Synchronous writes: a CLI that exits with a code right after logging must not lose lines.
    stream = pretty
      ? { write: (line: string) => writeSync(dest, formatPretty(line, isatty(dest))) }
      : pino.destination({ dest, sync: true });
  } else {
    stream = pretty
      ? { write: (line: string) => dest.write(formatPretty(line, false)) }
      : { write: (line) => dest.write(line) };
  }
  const logger = pino(pinoOptions, stream);
  // pino applies formatters.bindings to the root's bindings only; children (created with
  // Object.create, so they inherit this method) get theirs sanitized here.
  const pinoChild = logger.child;
  logger.child = function (this: Logger, bindings: Record<string, unknown>, childOptions?: unknown) {
    return pinoChild.call(this, sanitize(bindings) as Record<string, unknown>, childOptions as never);
  } as Logger['child'];
  return options.bindings ? logger.child(options.bindings) : logger;
}

/** A child logger bound to one job / segment / partition; undefined fields are left out. */
export function childLogger(logger: Logger, context: SegmentLogContext): Logger {
  const bindings: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(context)) if (value !== undefined) bindings[key] = value;
  return logger.child(bindings);
}

const COLORS: Record<string, string> = {
  fatal: '\x1b[35m',
  error: '\x1b[31m',
  warn: '\x1b[33m',
  info: '\x1b[32m',
  debug: '\x1b[36m',
  trace: '\x1b[90m',
};

const OMITTED = new Set(['level', 'time', 'msg', 'name', 'pid', 'hostname', 'err', 'error']);

/**
 * One JSON log line as `12:34:56.789 INFO  seglift-worker: message key=value ...`, with an
 * error's typed context and stack on the following lines. Not a parser for arbitrary input: a
 * line that is not JSON is returned unchanged.
 */
export function formatPretty(line: string, color = false): string {
  let obj: Record<string, unknown>;
  try {
    obj = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line;
  }
  const level = String(obj.level ?? 'info');
  const time = typeof obj.time === 'string' ? obj.time.slice(11, 23) : '';
  const label = level.toUpperCase().padEnd(5);
  const paint = (s: string) => (color && COLORS[level] ? `${COLORS[level]}${s}\x1b[0m` : s);
  let out = `${time} ${paint(label)} ${obj.name ?? ''}: ${obj.msg ?? ''}`;
  for (const [key, value] of Object.entries(obj)) {
    if (OMITTED.has(key)) continue;
    out += ` ${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`;
  }
  out += '\n';
  for (const key of ['err', 'error']) {
    const err = obj[key] as Record<string, unknown> | undefined;
    if (err === undefined || err === null || typeof err !== 'object') continue;
    const fields = Object.entries(err)
      .filter(([k, v]) => k !== 'stack' && k !== 'message' && k !== 'type' && v !== undefined)
      .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`);
    out += `    ${err.type ?? 'Error'}: ${err.message ?? ''}${fields.length ? ` (${fields.join(' ')})` : ''}\n`;
    if (typeof err.stack === 'string') {
      out += `${err.stack
        .split('\n')
        .slice(1)
        .map((l) => `    ${l.trim()}`)
        .join('\n')}\n`;
    }
  }
  return out;
}
