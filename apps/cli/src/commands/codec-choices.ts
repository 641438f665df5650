import { type CodecName, codecId, defaultLevel, recompressRecordBatch } from '@seglift/format';
import { Upconverter } from '@seglift/legacy';
import type { ConvertOptions } from '@seglift/segment';

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
export type RewriteSettings = { codec: CodecName } & Pick<
  ConvertOptions,
  'level' | 'grouping' | 'coalesceBytes' | 'maxBatchBytes' | 'onlyIfSmaller' | 'maxDecompressedBatchBytes'
>;

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

/** The size of the sample after a migrate with `s`: as convert rewrites each entry. */
function rewrittenSize(sample: CodecSample, s: RewriteSettings): number {
  const target = codecId(s.codec);
  let out = 0;
  for (const entries of sample.segments) {
    const up = new Upconverter({
      grouping: s.grouping ?? 'coalesce',
      codec: target,
      level: s.level,
      coalesceBytes: s.coalesceBytes,
      maxBatchBytes: s.maxBatchBytes,
      maxDecompressedBytes: s.maxDecompressedBatchBytes,
    });
    for (const e of entries) {
      if (e.legacy) {
        for (const b of up.push(e.bytes)) out += b.length;
        continue;
      }
      for (const b of up.flush()) out += b.length;
      const n = recompressRecordBatch(e.bytes, target, {
        level: s.level,
        maxDecompressedBytes: s.maxDecompressedBatchBytes,
      }).length;
      out += s.onlyIfSmaller && n > e.bytes.length ? e.bytes.length : n;
    }
    for (const b of up.flush()) out += b.length;
  }
  return out;
}
