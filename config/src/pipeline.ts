import type { ConvertOptions } from '@seglift/segment';
import type { Config } from './schema.js';

/** What the settings say about a conversion: the options every front door passes on. */
export type PipelineOptions = Required<
  Pick<
    ConvertOptions,
    | 'codec'
    | 'grouping'
    | 'coalesceBytes'
    | 'maxBatchBytes'
    | 'onlyIfSmaller'
    | 'indexIntervalBytes'
    | 'segmentIndexBytes'
    | 'maxDecompressedBatchBytes'
  >
> &
  Pick<ConvertOptions, 'level' | 'backupDir'>;

/** The settings -> conversion options mapping, written once for the CLI, the worker and audit. */
export function pipelineOptions(config: Config): PipelineOptions {
  return {
    codec: config.codec,
    level: config.level,
    grouping: config.grouping,
    coalesceBytes: config.coalesceBytes,
    maxBatchBytes: config.maxBatchBytes,
    onlyIfSmaller: config.onlyIfSmaller,
    indexIntervalBytes: config.indexIntervalBytes,
    segmentIndexBytes: config.segmentIndexBytes,
    maxDecompressedBatchBytes: config.limits.maxDecompressedBatchBytes,
    backupDir: config.backupDir,
  };
}
