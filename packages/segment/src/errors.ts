import { type ErrorContext, SegliftError } from '@seglift/format';

/**
 * The rewritten segment does not say what the original said: a logical record, a batch header
 * field or an index entry differs. Raised before any swap, so the original is untouched.
 */
export class VerifyMismatchError extends SegliftError {
  /** The field that differs (e.g. `value`, `lastOffsetDelta`, `.index entry 3`). */
  readonly field: string;
  constructor(field: string, detail: string, context?: ErrorContext) {
    super('VERIFY_MISMATCH', `verify mismatch in ${field}: ${detail}`, context);
    this.field = field;
  }

  override toJSON(): Record<string, unknown> {
    return { ...super.toJSON(), field: this.field };
  }
}

/** A filesystem step failed (rename, fsync, lock); wraps the Node error with the file. */
export class SegmentIoError extends SegliftError {
  constructor(detail: string, context?: ErrorContext, options?: { cause?: unknown }) {
    super('IO', detail, context, options);
  }
}
