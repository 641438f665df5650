import path from 'node:path';

/** Kafka names segment files by base offset, zero-padded to 20 digits (ref §6.1). */
export const SEGMENT_NAME_RE = /^(\d{20})\.log$/;

/** Our own temp suffix: ignored by Kafka's LogLoader (not .log/.index/.swap/.cleaned/.deleted). */
export const TMP_SUFFIX = '.seglift-tmp';
/** Kafka's swap suffix (LogFileUtils.SWAP_FILE_SUFFIX). */
export const SWAP_SUFFIX = '.swap';
/** Written after verification, before the first .swap rename; see swap.ts. */
export const MARKER_SUFFIX = '.seglift-swap';
export const LOCK_SUFFIX = '.log.seglift.lock';

export function formatBaseOffset(offset: bigint): string {
  return offset.toString().padStart(20, '0');
}

/** The base offset named by `<20 digits>.log`, or undefined for any other name. */
export function parseSegmentName(name: string): bigint | undefined {
  const m = SEGMENT_NAME_RE.exec(name);
  return m ? BigInt(m[1]) : undefined;
}

export interface SegmentPaths {
  dir: string;
  /** The 20-digit prefix. */
  prefix: string;
  baseOffset: bigint;
  log: string;
  index: string;
  timeindex: string;
  txnindex: string;
  snapshot: string;
}

export function segmentPaths(logPath: string): SegmentPaths {
  const dir = path.dirname(logPath);
  const name = path.basename(logPath);
  const prefix = name.endsWith('.log') ? name.slice(0, -4) : name;
  const baseOffset = /^\d+$/.test(prefix) ? BigInt(prefix) : 0n;
  const p = (suffix: string) => path.join(dir, `${prefix}${suffix}`);
  return {
    dir,
    prefix,
    baseOffset,
    log: p('.log'),
    index: p('.index'),
    timeindex: p('.timeindex'),
    txnindex: p('.txnindex'),
    snapshot: p('.snapshot'),
  };
}
