/**
 * Whether a segment is in the target format: whether a conversion with these settings would leave
 * every entry as it is. The distributed path's last word (`seglift-watcher --once --wait`): a job
 * that succeeded, a done marker, a job id are all claims about a file; this reads the file.
 */
import type { CodecName } from '@seglift/format';
import { recompressBatch, targetCodec } from './codec.js';
import {
  codecLabel,
  type EntryInfo,
  inspectEntry,
  keptAsIs,
  needsRewrite,
  withEntryContext,
} from './entry.js';
import { readSegmentEntries, type SegmentEntry } from './reader.js';

/** The settings the rule reads. */
export interface TargetFormatSettings {
  codec: CodecName;
  level?: number;
  /** A v2 batch that recompression would grow stays in its codec (convert's onlyIfSmaller). */
  onlyIfSmaller?: boolean;
  /** A recompressed batch over this stays in its codec (convert's maxBatchBytes and its default). */
  maxBatchBytes?: number;
  maxDecompressedBatchBytes?: number;
}

export interface TargetFormatOptions extends TargetFormatSettings {
  maxEntryBytes?: number;
  signal?: AbortSignal;
}

/** In the target format, or the first entry a conversion would rewrite. */
export type TargetFormatVerdict =
  | { inTarget: true }
  | { inTarget: false; position: number; format: string; reason: string };

/**
 * Whether a rewrite with these settings leaves the segment as it is: the one rule for convert's
 * skip (rewrite.ts, `alreadyConverted`) and for the read-back of `targetFormatOf`. Streams
 * `entries` and stops at the first one a rewrite would change: a legacy entry (upconverted), or a
 * v2 batch in another codec that the rewrite does not keep (keptAsIs: its recompression over
 * maxBatchBytes, or, with onlyIfSmaller, larger), so such a batch is recompressed once here to
 * tell (after a conversion those are the only such batches left, and a segment that needs work
 * stops at its first). `inspected` sees every entry read, `kept` each one left as it is, before
 * the next is read.
 */
export async function firstRewritten(
  entries: AsyncIterable<SegmentEntry>,
  file: string,
  settings: TargetFormatSettings,
  how: {
    checkCrcs: boolean;
    inspected?: (entry: SegmentEntry, info: EntryInfo) => void;
    kept?: (entry: SegmentEntry, info: EntryInfo) => void;
  },
): Promise<TargetFormatVerdict> {
  const target = targetCodec(settings);
  for await (const entry of entries) {
    const info = inspectEntry(entry, file, how.checkCrcs);
    how.inspected?.(entry, info);
    if (needsRewrite(info, target.id)) {
      const format = `v${info.magic}/${codecLabel(info.codec)}`;
      if (info.magic < 2) {
        return { inTarget: false, position: entry.position, format, reason: `a magic ${info.magic} entry` };
      }
      let out: Uint8Array;
      try {
        out = recompressBatch(entry.bytes, target, { roundTrip: false, crcChecked: how.checkCrcs });
      } catch (err) {
        throw withEntryContext(err, file, entry);
      }
      if (keptAsIs(out.length, entry.bytes.length, settings) === undefined) {
        return {
          inTarget: false,
          position: entry.position,
          format,
          reason: `a v2 batch in ${codecLabel(info.codec)}, not ${settings.codec}`,
        };
      }
    }
    how.kept?.(entry, info);
  }
  return { inTarget: true };
}

/** Reads the segment's entries (two read buffers: bounded memory whatever its size) for `firstRewritten`. */
export function targetFormatOf(logPath: string, options: TargetFormatOptions): Promise<TargetFormatVerdict> {
  const entries = readSegmentEntries(logPath, {
    maxEntryBytes: options.maxEntryBytes,
    signal: options.signal,
    reuseBuffers: true,
  });
  return firstRewritten(entries, logPath, options, { checkCrcs: false });
}
