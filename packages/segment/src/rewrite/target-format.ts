/**
 * Whether a segment is in the target format: whether a conversion with these options would leave
 * every entry as it is. The distributed path's last word (`seglift-watcher --once --wait`): a job
 * that succeeded, a done marker, a job id are all claims about a file; this reads the file.
 */
import type { CodecName } from '@seglift/format';
import { recompressBatch, targetCodec } from './codec.js';
import { codecLabel, inspectEntry, keptAsIs, needsRewrite } from './entry.js';
import { readSegmentEntries } from './reader.js';

export interface TargetFormatOptions {
  codec: CodecName;
  level?: number;
  /** A v2 batch that recompression would grow stays in its codec (convert's onlyIfSmaller). */
  onlyIfSmaller?: boolean;
  /** A recompressed batch over this stays in its codec (convert's maxBatchBytes and its default). */
  maxBatchBytes?: number;
  maxDecompressedBatchBytes?: number;
  maxEntryBytes?: number;
  signal?: AbortSignal;
}

/** In the target format, or the first entry a conversion would rewrite. */
export type TargetFormatVerdict =
  | { inTarget: true }
  | { inTarget: false; position: number; format: string; reason: string };

/**
 * Streams the segment's entries (two read buffers: bounded memory whatever its size) and stops at
 * the first one a conversion would rewrite. Batch headers decide, except for a v2 batch in another
 * codec: convert keeps such a batch when recompressing it would exceed maxBatchBytes (or, with
 * onlyIfSmaller, grow it), so it is recompressed here once to tell (after a conversion those are
 * the only such batches left, and a segment that needs work stops at its first).
 */
export async function targetFormatOf(
  logPath: string,
  options: TargetFormatOptions,
): Promise<TargetFormatVerdict> {
  const target = targetCodec(options);
  const codec = target.id;
  for await (const entry of readSegmentEntries(logPath, {
    maxEntryBytes: options.maxEntryBytes,
    signal: options.signal,
    reuseBuffers: true,
  })) {
    const info = inspectEntry(entry, logPath, false);
    if (!needsRewrite(info, codec)) continue;
    const format = `v${info.magic}/${codecLabel(info.codec)}`;
    if (info.magic < 2) {
      return { inTarget: false, position: entry.position, format, reason: `a magic ${info.magic} entry` };
    }
    const out = recompressBatch(entry.bytes, target, { roundTrip: false, crcChecked: false });
    if (keptAsIs(out.length, entry.bytes.length, options) === undefined) {
      return {
        inTarget: false,
        position: entry.position,
        format,
        reason: `a v2 batch in ${codecLabel(info.codec)}, not ${options.codec}`,
      };
    }
  }
  return { inTarget: true };
}
