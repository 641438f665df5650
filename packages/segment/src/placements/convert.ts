/**
 * A segment conversion: the one rewrite (rewrite.ts) composed with one of four placements
 * (placements.ts): into an out dir, in place (swap.ts), into a stage (prepare), or in place from a
 * stage (commit). `convertSegment` picks the placement its options name; the conversion's state
 * (report, locks, files to remove on failure) is a `Conversion`.
 */
import { type CodecName, InvalidArgumentError } from '@seglift/format';
import type { Grouping } from '@seglift/legacy';
import { targetCodec } from '../rewrite/codec.js';
import type { SegmentReport } from '../rewrite/report.js';
import type { ConvertTestHooks } from '../rewrite/rewrite.js';
import type { PartitionLocks } from '../safety/lock.js';
import { Conversion } from './conversion.js';
import { inPlace, inPlaceFromStage, intoOutDir, intoStage } from './placements.js';

export interface ConvertOptions {
  codec: CodecName;
  level?: number;
  /** How legacy entries become v2 batches (default coalesce; see @seglift/legacy's Upconverter). */
  grouping?: Grouping;
  coalesceBytes?: number;
  /** Largest batch written (default 1048588, Kafka's max.message.bytes default). */
  maxBatchBytes?: number;
  /**
   * Keep a v2 batch in its codec (byte for byte) when recompressing it would make it larger.
   * Off by default: a target codec is also chosen for consumers' CPU, and a segment where every
   * batch is kept is left as it is (see docs/benchmarks.md, "Recompression that grows data").
   */
  onlyIfSmaller?: boolean;
  maxDecompressedBatchBytes?: number;
  /** Largest source entry accepted by the reader (default 64 MiB). */
  maxEntryBytes?: number;
  indexIntervalBytes?: number;
  /** Recompress batches already in the target codec, and never skip. */
  force?: boolean;
  acceptTruncatedTail?: boolean;
  /** Write DIR/<base>.log/.index/.timeindex; the input is never touched. */
  outDir?: string;
  inPlace?: boolean;
  /**
   * Prepare of a two-phase migration (stage.ts): write the verified conversion into this
   * directory (the partition's directory in a stage dir) and a StageRecord of the source. As with
   * outDir, nothing beside the source is written, renamed or locked. A source that vanished or
   * was replaced while it was read is reported skipped ('source-gone', 'source-changed'), with
   * nothing staged.
   */
  stageDir?: string;
  /**
   * Commit of a two-phase migration, in place: the segment staged in this directory is swapped in
   * (the same swap) when its record still matches the source and these options; otherwise the
   * staged files are discarded and the segment is converted as usual.
   */
  fromStage?: string;
  /** In place only: copy the originals to backupDir/<partition dir name>/ first. */
  backupDir?: string;
  /** In place only: take `<base>.log.seglift.lock` (default true). */
  lock?: boolean;
  /**
   * The topic's segment.index.bytes (default 10 MiB): a broker resizes the active (last)
   * segment's indexes to it when it loads a log, and fails when they hold more entries.
   */
  segmentIndexBytes?: number;
  signal?: AbortSignal;
  onProgress?: (bytesDone: number, bytesTotal: number) => void;
  /**
   * In place: called right before the swap's first change, under the partition lock; throwing
   * refuses the swap (the conversion fails, the original untouched). The queue worker checks
   * here that it still holds its partition's lease.
   */
  beforeSwap?: () => Promise<void>;
  /**
   * In place, in an archive (readiness.requireRolled false): a source whose `.log` was written
   * less than this many ms ago when its conversion starts is skipped ('still-changing'): a copy
   * may have resumed since the plan judged it quiet.
   */
  quietMs?: number;
}

/** Test seams a conversion accepts besides its options (not part of the package's API). */
export interface ConvertTestSeams {
  testHooks?: ConvertTestHooks;
}

/** What the main thread's conversions of one run share (never sent to a conversion thread). */
export interface ConvertRunShared {
  /** A commit: each partition's lock held over its run of swaps (lock.ts). */
  partitionLocks?: PartitionLocks;
}

export type ConversionOptions = ConvertOptions & ConvertTestSeams & ConvertRunShared;

function validate(options: ConvertOptions): void {
  if ([options.outDir, options.stageDir, options.inPlace].filter(Boolean).length !== 1) {
    throw new InvalidArgumentError('convertSegment needs exactly one of outDir, stageDir or inPlace: true');
  }
  if (options.backupDir && !options.inPlace) throw new InvalidArgumentError('backupDir needs inPlace');
  if (options.fromStage && !options.inPlace) throw new InvalidArgumentError('fromStage needs inPlace');
  // An unknown codec name fails here, before anything is read.
  targetCodec(options);
}

/**
 * Converts one segment: rewrites it (legacy entries upconverted, v2 batches recompressed, the
 * written files verified from disk) and places the result as the options say. Never throws for a
 * bad segment: the report says 'failed' with the typed error.
 */
export async function convertSegment(logPath: string, options: ConversionOptions): Promise<SegmentReport> {
  return new Conversion(logPath, options).run(async (c) => {
    validate(options);
    options.signal?.throwIfAborted();
    if (options.outDir) await intoOutDir(c, options.outDir);
    else if (options.stageDir) await intoStage(c, options.stageDir);
    else if (options.fromStage) await inPlaceFromStage(c, options.fromStage);
    else await inPlace(c);
  });
}
