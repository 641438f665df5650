/**
 * The slice of @seglift/segment's convertSegment contract the worker relies on (kept structural so
 * tests can inject a fake converter).
 */
export type CodecName = 'none' | 'gzip' | 'snappy' | 'lz4' | 'zstd';

export interface ConvertOptions {
  codec: CodecName;
  level?: number;
  grouping?: 'kafka' | 'coalesce';
  coalesceBytes?: number;
  maxBatchBytes?: number;
  onlyIfSmaller?: boolean;
  maxDecompressedBatchBytes?: number;
  indexIntervalBytes?: number;
  force?: boolean;
  acceptTruncatedTail?: boolean;
  inPlace: true;
  backupDir?: string;
  signal?: AbortSignal;
  onProgress?: (bytesDone: number, bytesTotal?: number) => void;
}

export interface SegmentReportLike {
  path: string;
  result: 'converted' | 'skipped' | 'failed' | string;
  reason?: string;
  error?: unknown;
  bytesIn: number;
  bytesOut: number;
  [key: string]: unknown;
}

export type ConvertFn = (logPath: string, options: ConvertOptions) => Promise<SegmentReportLike>;
