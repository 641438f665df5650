/**
 * Every compression call the conversion makes goes through here: the target codec is resolved
 * once from the settings (an unknown name fails before anything is read), and the batch
 * recompression and the upconverter get it typed, with the settings' level and limits.
 */
import {
  type CodecName,
  type CompressionId,
  codecId,
  DEFAULT_MAX_BATCH_BYTES,
  recompressRecordBatch,
} from '@seglift/format';
import { DEFAULT_GROUPING, type Grouping, Upconverter } from '@seglift/legacy';

/** The settings that decide how batches are compressed (RewriteSettings' names). */
export interface CodecSettings {
  codec: CodecName;
  level?: number;
  grouping?: Grouping;
  coalesceBytes?: number;
  maxBatchBytes?: number;
  maxDecompressedBatchBytes?: number;
}

export interface TargetCodec {
  id: CompressionId;
  level?: number;
  maxDecompressedBytes?: number;
}

export function targetCodec(settings: CodecSettings): TargetCodec {
  return {
    id: codecId(settings.codec),
    level: settings.level,
    maxDecompressedBytes: settings.maxDecompressedBatchBytes,
  };
}

/**
 * A v2 batch in the target codec. The result lives in a reused buffer: copied (or dropped) before
 * the next call. `roundTrip`: proved in memory (see proofs.ts); `crcChecked`: the caller checked
 * the stored CRC-32C already.
 */
export function recompressBatch(
  batch: Uint8Array,
  target: TargetCodec,
  how: { roundTrip: boolean; crcChecked: boolean },
): Uint8Array {
  return recompressRecordBatch(batch, target.id, {
    level: target.level,
    maxDecompressedBytes: target.maxDecompressedBytes,
    roundTrip: how.roundTrip,
    crcChecked: how.crcChecked,
    transient: true,
  });
}

/** The upconverter of legacy entries to v2 batches in the target codec, proving what it writes. */
export function upconverterFor(
  target: TargetCodec,
  settings: CodecSettings,
  onOversizeBatch: () => void,
): Upconverter {
  return new Upconverter({
    grouping: settings.grouping ?? DEFAULT_GROUPING,
    codec: target.id,
    level: target.level,
    maxBatchBytes: settings.maxBatchBytes ?? DEFAULT_MAX_BATCH_BYTES,
    coalesceBytes: settings.coalesceBytes,
    maxDecompressedBytes: target.maxDecompressedBytes,
    prove: true,
    onOversizeBatch,
  });
}
