import { type ErrorContext, SegliftError } from '@seglift/format';

// Raised by verify here and by recompressRecordBatch's round trip in format: one class.
export { VerifyMismatchError } from '@seglift/format';

/** A filesystem step failed (rename, fsync, lock); wraps the Node error with the file. */
export class SegmentIoError extends SegliftError {
  constructor(detail: string, context?: ErrorContext, options?: { cause?: unknown }) {
    super('IO', detail, context, options);
  }
}
