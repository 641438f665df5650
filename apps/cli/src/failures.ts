import { LogDirLockedError, type SegmentReport } from '@seglift/segment';
import type { CommandContext } from './command.js';

/** The rendered message of a SegliftError.toJSON(): detail plus file, position, offset. */
export function errorJsonMessage(e: Record<string, unknown>): string {
  const where: string[] = [];
  if (e.file !== undefined) where.push(`file ${String(e.file)}`);
  if (e.position !== undefined) where.push(`position ${String(e.position)}`);
  if (e.offset !== undefined) where.push(`offset ${String(e.offset)}`);
  return where.length === 0 ? String(e.message) : `${String(e.message)} (${where.join(', ')})`;
}

/** `error[CODE]: message (file F, position P, offset O)` for a typed error's JSON. */
export function errorLine(e: Record<string, unknown>): string {
  return `error[${String(e.code)}]: ${errorJsonMessage(e)}`;
}

/** One `error[CODE]: message` line per failed segment, on stderr. */
export function reportFailures(ctx: CommandContext, reports: SegmentReport[]): void {
  for (const r of reports) {
    if (r.result !== 'failed') continue;
    if (r.error) ctx.err.line(errorLine(r.error));
    else ctx.err.line(`error: ${r.path}: ${r.reason ?? 'failed'}`);
  }
}

/**
 * Runs `work`; a log dir a broker holds is reported with `advice`, what fits the command that met
 * it (LogDirLockedError's own suggests --prepare, which only migrate has).
 */
export async function withLockAdvice<T>(advice: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (e) {
    if (e instanceof LogDirLockedError && e.file !== undefined)
      throw new LogDirLockedError(e.logDir, e.file, e.holderPid, advice);
    throw e;
  }
}
