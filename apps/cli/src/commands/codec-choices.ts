import {
  type CodecName,
  type CompressionId,
  codecId,
  defaultLevel,
  recompressRecordBatch,
} from '@seglift/format';
import { Upconverter } from '@seglift/legacy';
import { type ConversionSettings, keptAsIs } from '@seglift/segment';

/**
 * What audit shows besides its estimate for the chosen codec: the same sample of the data a
 * migrate would rewrite, rewritten with a few other codecs and levels, with the size each gives
 * and the time each costs on one core. Recompression can make data larger (gzip-9 batches to
 * zstd-3 grew 4% on producer-shaped JSON), so the operator chooses before committing to it.
 */
export interface CodecChoice {
  codec: CodecName;
  /** The level used (the codec's default when none was given); undefined for none and snappy. */
  level?: number;
  chosen: boolean;
  bytesIn: number;
  bytesAfter: number;
  /** MB/s of sample input rewritten on this thread (upconversion or recompression, no I/O). */
  mbPerSec: number;
}

/** The alternatives compared with the chosen codec: zstd's fast, default and denser levels, lz4, snappy. */
export const CODEC_ALTERNATIVES: ReadonlyArray<{ codec: CodecName; level?: number }> = [
  { codec: 'zstd', level: 1 },
  { codec: 'zstd', level: 3 },
  { codec: 'zstd', level: 9 },
  { codec: 'lz4' },
  { codec: 'snappy' },
];

export const DEFAULT_COMPARE_BYTES = 16 * 1024 * 1024;

/**
 * Entries taken from the audit's samples (copies: the reader reuses its buffers), grouped by
 * segment so that coalescing sees the runs a migrate would see. At most `budget` bytes.
 */
export class CodecSample {
  readonly segments: { bytes: Uint8Array; legacy: boolean }[][] = [];
  bytes = 0;
  private current: { bytes: Uint8Array; legacy: boolean }[] | undefined;

  constructor(readonly budget: number) {}

  startSegment(): void {
    this.current = undefined;
  }

  offer(entry: Uint8Array, magic: number): void {
    if (this.bytes + entry.length > this.budget) return;
    if (this.current === undefined) {
      this.current = [];
      this.segments.push(this.current);
    }
    this.current.push({ bytes: Uint8Array.prototype.slice.call(entry), legacy: magic < 2 });
    this.bytes += entry.length;
  }
}

/** The settings a migrate rewrites with (the codec and level vary between the choices). */
export type RewriteSettings = ConversionSettings;

/** Rewrites the sample with the chosen settings and with each alternative codec and level. */
export function compareCodecs(sample: CodecSample, chosen: RewriteSettings): CodecChoice[] {
  const levelOf = (codec: CodecName, level?: number) => level ?? defaultLevel(codecId(codec));
  const chosenLevel = levelOf(chosen.codec, chosen.level);
  const choices = [{ codec: chosen.codec, level: chosenLevel }];
  for (const alt of CODEC_ALTERNATIVES) {
    const level = levelOf(alt.codec, alt.level);
    if (!choices.some((c) => c.codec === alt.codec && c.level === level))
      choices.push({ codec: alt.codec, level });
  }
  const measure = (c: { codec: CodecName; level?: number }, chosenOne: boolean): CodecChoice => {
    const started = performance.now();
    const bytesAfter = rewrittenSize(sample, { ...chosen, codec: c.codec, level: c.level });
    const ms = Math.max(performance.now() - started, 0.001);
    return {
      codec: c.codec,
      level: c.level,
      chosen: chosenOne,
      bytesIn: sample.bytes,
      bytesAfter,
      mbPerSec: Math.round((sample.bytes / 1e6 / (ms / 1000)) * 10) / 10,
    };
  };
  // The chosen one is measured last, once the code paths are warm, as the others are.
  const others = choices.slice(1).map((c) => measure(c, false));
  return [measure(choices[0], true), ...others];
}

/** The size of the sample after a migrate with `s`. */
function rewrittenSize(sample: CodecSample, s: RewriteSettings): number {
  let out = 0;
  for (const entries of sample.segments) {
    const segment = new RewrittenSize(s);
    for (const e of entries) segment.add(e.bytes, e.legacy ? 0 : 2);
    out += segment.finish();
  }
  return out;
}

/**
 * The bytes a migrate with `s` writes for the entries of one segment that it rewrites, fed in
 * order: legacy entries upconverted (consecutive ones share batches, as convert groups them),
 * v2 batches recompressed, or kept as they are where migrate keeps them (segment's keptAsIs).
 */
export class RewrittenSize {
  bytes = 0;
  private readonly up: Upconverter;
  private readonly target: CompressionId;

  constructor(private readonly s: RewriteSettings) {
    this.target = codecId(s.codec);
    this.up = new Upconverter({
      grouping: s.grouping,
      codec: this.target,
      level: s.level,
      coalesceBytes: s.coalesceBytes,
      maxBatchBytes: s.maxBatchBytes,
      maxDecompressedBytes: s.maxDecompressedBatchBytes,
    });
  }

  add(entry: Uint8Array, magic: number): void {
    if (magic < 2) {
      for (const b of this.up.push(entry)) this.bytes += b.length;
      return;
    }
    for (const b of this.up.flush()) this.bytes += b.length;
    const n = recompressRecordBatch(entry, this.target, {
      level: this.s.level,
      maxDecompressedBytes: this.s.maxDecompressedBatchBytes,
    }).length;
    // The rule migrate keeps a batch by (over maxBatchBytes, or grown with onlyIfSmaller).
    this.bytes += keptAsIs(n, entry.length, this.s) === undefined ? n : entry.length;
  }

  /** The end of the segment: legacy records still pending are written. */
  finish(): number {
    for (const b of this.up.flush()) this.bytes += b.length;
    return this.bytes;
  }
}
