/**
 * Typed errors for everything that reads or writes Kafka bytes. Each carries the context an
 * operator needs to find the bad bytes: the file, the byte position in it and the Kafka offset.
 * Pure byte functions usually know only a position inside the buffer they were given; callers
 * that know more (the segment reader knows the file and the batch's position in it) add it with
 * `withContext`, which keeps the innermost (most precise) values already set.
 */
export interface ErrorContext {
  file?: string;
  /** Byte position in the file (or in the buffer, when no file is known). */
  position?: number;
  /** Kafka offset of the entry/batch/record concerned. */
  offset?: bigint;
}

export type SegliftErrorCode =
  | 'CORRUPT_RECORD'
  | 'CRC_MISMATCH'
  | 'TRUNCATED'
  | 'UNKNOWN_CODEC'
  | 'UNSUPPORTED_FORMAT'
  | 'DECOMPRESSION_LIMIT'
  | 'DECOMPRESSION_FAILED'
  | 'VERIFY_MISMATCH'
  | 'PATH_OUTSIDE_ROOTS'
  | 'INVALID_ARGUMENT'
  | 'IO'
  // Raised by the file side (@seglift/segment); listed here so every code has one vocabulary.
  | 'NOT_A_SEGMENT'
  | 'LOCKED'
  | 'LOG_DIR_LOCKED'
  | 'LOG_DIR_UNKNOWN'
  | 'KAFKA_LEFTOVERS'
  | 'OWNERSHIP'
  | 'STAGE_DIR'
  | 'SEGMENT_CHANGED';

export class SegliftError extends Error {
  readonly code: SegliftErrorCode;
  /** The message without the appended context, so context can be re-rendered. */
  readonly detail: string;
  file?: string;
  position?: number;
  offset?: bigint;

  constructor(
    code: SegliftErrorCode,
    detail: string,
    context: ErrorContext = {},
    options?: { cause?: unknown },
  ) {
    super(detail, options);
    this.name = new.target.name;
    this.code = code;
    this.detail = detail;
    this.file = context.file;
    this.position = context.position;
    this.offset = context.offset;
    this.message = this.render();
  }

  /**
   * Adds context that is not already known. Positions add up: a pure function reports a
   * position inside the batch it was handed, the caller passes the batch's file position as
   * `basePosition` to turn it into a file position.
   */
  withContext(context: ErrorContext & { basePosition?: number }): this {
    if (this.file === undefined && context.file !== undefined) this.file = context.file;
    if (context.basePosition !== undefined) {
      this.position = context.basePosition + (this.position ?? 0);
    } else if (this.position === undefined && context.position !== undefined) {
      this.position = context.position;
    }
    if (this.offset === undefined && context.offset !== undefined) this.offset = context.offset;
    this.message = this.render();
    return this;
  }

  /** Plain-object form for JSON reports and job failure reasons. */
  toJSON(): Record<string, unknown> {
    return {
      name: this.name,
      code: this.code,
      message: this.detail,
      file: this.file,
      position: this.position,
      offset: this.offset === undefined ? undefined : this.offset.toString(),
    };
  }

  private render(): string {
    const where: string[] = [];
    if (this.file !== undefined) where.push(`file ${this.file}`);
    if (this.position !== undefined) where.push(`position ${this.position}`);
    if (this.offset !== undefined) where.push(`offset ${this.offset}`);
    return where.length === 0 ? this.detail : `${this.detail} (${where.join(', ')})`;
  }
}

/** Bytes that cannot be a valid entry/batch/record (bad sizes, counts, lengths, leftovers). */
export class CorruptRecordError extends SegliftError {
  constructor(detail: string, context?: ErrorContext, options?: { cause?: unknown }) {
    super('CORRUPT_RECORD', detail, context, options);
  }
}

export class CrcMismatchError extends SegliftError {
  readonly expected: number;
  readonly actual: number;
  constructor(kind: 'CRC-32' | 'CRC-32C', expected: number, actual: number, context?: ErrorContext) {
    super(
      'CRC_MISMATCH',
      `${kind} mismatch: stored 0x${hex32(expected)}, computed 0x${hex32(actual)}`,
      context,
    );
    this.expected = expected;
    this.actual = actual;
  }
}

/** The data ends before a declared length does (partial trailing entry, cut-off stream). */
export class TruncatedDataError extends SegliftError {
  constructor(detail: string, context?: ErrorContext) {
    super('TRUNCATED', detail, context);
  }
}

/** Codec ids 5-7 (Kafka's CompressionType.forId throws on them). */
export class UnknownCodecError extends SegliftError {
  readonly codecId: number;
  constructor(codecId: number, context?: ErrorContext) {
    super('UNKNOWN_CODEC', `unknown compression type id ${codecId}`, context);
    this.codecId = codecId;
  }
}

/** Valid-looking bytes that Kafka refuses: zstd in magic 0/1, nested compression, magic > 2. */
export class UnsupportedFormatError extends SegliftError {
  constructor(detail: string, context?: ErrorContext) {
    super('UNSUPPORTED_FORMAT', detail, context);
  }
}

/** Decompressed data would exceed the configured limit (a decompression bomb, or a huge batch). */
export class DecompressionLimitError extends SegliftError {
  readonly limit: number;
  constructor(limit: number, detail?: string, context?: ErrorContext) {
    super('DECOMPRESSION_LIMIT', detail ?? `decompressed size exceeds the limit of ${limit} bytes`, context);
    this.limit = limit;
  }
}

/** The codec library rejected the compressed bytes. */
export class DecompressionError extends SegliftError {
  constructor(detail: string, context?: ErrorContext, options?: { cause?: unknown }) {
    super('DECOMPRESSION_FAILED', detail, context, options);
  }
}

/**
 * A rewrite does not say what the original said: a logical record, a batch header field, the
 * record bytes after a codec round trip, or an index entry differs. Raised before any swap, so
 * the original is untouched.
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

export class InvalidArgumentError extends SegliftError {
  constructor(detail: string, context?: ErrorContext) {
    super('INVALID_ARGUMENT', detail, context);
  }
}

function hex32(n: number): string {
  return (n >>> 0).toString(16).padStart(8, '0');
}
