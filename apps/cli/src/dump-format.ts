/**
 * kafka-dump-log output lines (docs/kafka-format.md §8.2, DumpLogSegments.printBatchLevel and dumpLog), built
 * from plain views so the wording is tested independently of the decoders.
 */
import type { ProducerSnapshotEntry } from '@seglift/format';

export type TimestampTypeName = 'NoTimestampType' | 'CreateTime' | 'LogAppendTime';

export interface BatchView {
  position: number;
  /** Whole entry size (Kafka's sizeInBytes). */
  size: number;
  magic: number;
  lastOffset: bigint;
  timestampType: TimestampTypeName;
  maxTimestamp: bigint;
  /** Codec name as Kafka prints it; `unknown(N)` for ids 5-7, which Kafka cannot print. */
  compresscodec: string;
  /** Stored CRC (CRC-32C for v2, CRC-32 for legacy), unsigned. */
  crc: number;
  isValid: boolean;
  /** v2 only. */
  v2?: {
    baseOffset: bigint;
    count: number;
    baseSequence: number;
    lastSequence: number;
    producerId: bigint;
    producerEpoch: number;
    partitionLeaderEpoch: number;
    isTransactional: boolean;
    isControl: boolean;
    /** baseTimestamp when the delete-horizon attribute bit is set, else null. */
    deleteHorizonMs: bigint | null;
  };
}

export interface RecordView {
  offset: bigint;
  timestamp: bigint;
  keySize: number;
  valueSize: number;
  key: Uint8Array | null;
  value: Uint8Array | null;
  /** v2 only. */
  sequence?: number;
  headerKeys?: Uint8Array[];
  /** Legacy only: the message's own CRC-32 check and stored CRC. */
  legacy?: { isValid: boolean; crc: number };
  /** Control batches: what follows the metadata, e.g. `endTxnMarker: COMMIT coordinatorEpoch: 3`. */
  control?: string;
}

// fatal: only valid input is decoded here (valid UTF-8 decodes the same everywhere); ignoreBOM:
// a leading U+FEFF is kept, as Java keeps it.
const validUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Kafka's StringDecoder, `new String(bytes, UTF_8)`: malformed input replaced by U+FFFD, one per
 * malformed sequence as the JDK's String.decodeUTF8_UTF16 counts them, which is not WHATWG's
 * TextDecoder count in every case (an encoded surrogate, ED A0 80, is one U+FFFD in Java, three
 * in a browser). Valid input takes TextDecoder's fast path.
 */
export function decodeUtf8(bytes: Uint8Array): string {
  try {
    return validUtf8.decode(bytes);
  } catch {
    return decodeUtf8AsJava(bytes);
  }
}

const REPL = 0xfffd;
const isCont = (b: number) => (b & 0xc0) === 0x80;

/** The JDK's String.decodeUTF8_UTF16 with replacement, rule for rule (bytes unsigned here). */
export function decodeUtf8AsJava(src: Uint8Array): string {
  const out: number[] = [];
  const sl = src.length;
  let sp = 0;
  while (sp < sl) {
    const b1 = src[sp++] as number;
    if (b1 < 0x80) {
      out.push(b1);
    } else if (b1 >= 0xc2 && b1 <= 0xdf) {
      if (sp < sl) {
        const b2 = src[sp] as number;
        if (isCont(b2)) {
          out.push(((b1 & 0x1f) << 6) | (b2 & 0x3f));
          sp++;
        } else out.push(REPL); // b2 is read again as the next sequence's start
        continue;
      }
      out.push(REPL);
      break;
    } else if (b1 >= 0xe0 && b1 <= 0xef) {
      if (sp + 1 < sl) {
        const b2 = src[sp] as number;
        const b3 = src[sp + 1] as number;
        if ((b1 === 0xe0 && (b2 & 0xe0) === 0x80) || !isCont(b2) || !isCont(b3)) {
          out.push(REPL);
          // malformed3: the lead alone, or the lead and b2 when b2 could continue it.
          sp += (b1 === 0xe0 && (b2 & 0xe0) === 0x80) || !isCont(b2) ? 0 : 1;
        } else {
          const c = ((b1 & 0x0f) << 12) | ((b2 & 0x3f) << 6) | (b3 & 0x3f);
          // An encoded surrogate (ED A0..BF xx) is one malformed sequence of three bytes.
          out.push(c >= 0xd800 && c <= 0xdfff ? REPL : c);
          sp += 2;
        }
        continue;
      }
      if (sp < sl && ((b1 === 0xe0 && ((src[sp] as number) & 0xe0) === 0x80) || !isCont(src[sp] as number))) {
        out.push(REPL);
        continue;
      }
      out.push(REPL); // a truncated sequence at the end: one U+FFFD for what is left
      break;
    } else if (b1 >= 0xf0 && b1 <= 0xf7) {
      if (sp + 2 < sl) {
        const b2 = src[sp] as number;
        const b3 = src[sp + 1] as number;
        const b4 = src[sp + 2] as number;
        const uc = ((b1 & 0x07) << 18) | ((b2 & 0x3f) << 12) | ((b3 & 0x3f) << 6) | (b4 & 0x3f);
        if (!isCont(b2) || !isCont(b3) || !isCont(b4) || uc < 0x10000 || uc > 0x10ffff) {
          out.push(REPL);
          // malformed4: 1, 2 or 3 bytes (the lead included) make the malformed sequence.
          if (
            b1 > 0xf4 ||
            (b1 === 0xf0 && (b2 < 0x90 || b2 > 0xbf)) ||
            (b1 === 0xf4 && (b2 & 0xf0) !== 0x80) ||
            !isCont(b2)
          )
            sp += 0;
          else if (!isCont(b3)) sp += 1;
          else sp += 2;
        } else {
          out.push(0xd800 + ((uc - 0x10000) >> 10), 0xdc00 + ((uc - 0x10000) & 0x3ff));
          sp += 3;
        }
        continue;
      }
      const b2 = src[sp];
      if (
        b1 > 0xf4 ||
        (b2 !== undefined &&
          ((b1 === 0xf0 && (b2 < 0x90 || b2 > 0xbf)) || (b1 === 0xf4 && (b2 & 0xf0) !== 0x80) || !isCont(b2)))
      ) {
        out.push(REPL);
        continue;
      }
      sp++;
      out.push(REPL);
      if (sp < sl && !isCont(src[sp] as number)) continue;
      break;
    } else {
      out.push(REPL); // 80..C1, F8..FF: never a lead
    }
  }
  let s = '';
  for (let i = 0; i < out.length; i += 8192) s += String.fromCharCode(...out.slice(i, i + 8192));
  return s;
}

/** Java's OptionalLong.toString, which is what kafka-dump-log prints for deleteHorizonMs. */
function optionalLong(value: bigint | null): string {
  return value === null ? 'OptionalLong.empty' : `OptionalLong[${value}]`;
}

/** DefaultRecordBatch.decrementSequence: sequences wrap at Integer.MAX_VALUE. */
function decrementSequence(sequence: number, decrement: number): number {
  return sequence < decrement ? (0x7fffffff - ((decrement - sequence) | 0) + 1) | 0 : sequence - decrement;
}

/**
 * One entry as Kafka 4's DumpLogSegments prints a producer snapshot's: the batch fields only when
 * the entry has a batch (lastOffset >= 0, ProducerStateManager.readSnapshot's rule).
 */
export function formatProducerSnapshotEntry(e: ProducerSnapshotEntry): string {
  const txn = optionalLong(e.currentTxnFirstOffset >= 0n ? e.currentTxnFirstOffset : null);
  let line =
    `producerId: ${e.producerId} producerEpoch: ${e.producerEpoch} coordinatorEpoch: ${e.coordinatorEpoch}` +
    ` currentTxnFirstOffset: ${txn} lastTimestamp: ${e.timestamp}`;
  if (e.lastOffset >= 0n)
    line +=
      ` firstSequence: ${decrementSequence(e.lastSequence, e.offsetDelta)} lastSequence: ${e.lastSequence}` +
      ` lastOffset: ${e.lastOffset} offsetDelta: ${e.offsetDelta} timestamp: ${e.timestamp}`;
  return line;
}

export function producerSnapshotEntryJson(file: string, e: ProducerSnapshotEntry): Record<string, unknown> {
  const batch = e.lastOffset >= 0n;
  return {
    type: 'producerSnapshotEntry',
    file,
    producerId: e.producerId.toString(),
    producerEpoch: e.producerEpoch,
    coordinatorEpoch: e.coordinatorEpoch,
    currentTxnFirstOffset: e.currentTxnFirstOffset >= 0n ? e.currentTxnFirstOffset.toString() : null,
    lastTimestamp: e.timestamp.toString(),
    firstSequence: batch ? decrementSequence(e.lastSequence, e.offsetDelta) : null,
    lastSequence: batch ? e.lastSequence : null,
    lastOffset: batch ? e.lastOffset.toString() : null,
    offsetDelta: batch ? e.offsetDelta : null,
  };
}

export function formatBatchLine(b: BatchView): string {
  const head = b.v2
    ? `baseOffset: ${b.v2.baseOffset} lastOffset: ${b.lastOffset} count: ${b.v2.count}` +
      ` baseSequence: ${b.v2.baseSequence} lastSequence: ${b.v2.lastSequence}` +
      ` producerId: ${b.v2.producerId} producerEpoch: ${b.v2.producerEpoch}` +
      ` partitionLeaderEpoch: ${b.v2.partitionLeaderEpoch} isTransactional: ${b.v2.isTransactional}` +
      ` isControl: ${b.v2.isControl} deleteHorizonMs: ${optionalLong(b.v2.deleteHorizonMs)}`
    : `offset: ${b.lastOffset}`;
  return (
    `${head} position: ${b.position} ${b.timestampType}: ${b.maxTimestamp} size: ${b.size}` +
    ` magic: ${b.magic} compresscodec: ${b.compresscodec} crc: ${b.crc >>> 0} isvalid: ${b.isValid}`
  );
}

export interface RecordLineOptions {
  printDataLog: boolean;
  skipRecordMetadata?: boolean;
}

/** A `| offset: ...` line (DumpLogSegments.dumpLog, deep iteration). */
export function formatRecordLine(
  batch: Pick<BatchView, 'timestampType' | 'v2'>,
  r: RecordView,
  opts: RecordLineOptions,
): string {
  let out = '';
  let prefix = '| ';
  if (!opts.skipRecordMetadata) {
    out += `${prefix}offset: ${r.offset} ${batch.timestampType}: ${r.timestamp} keySize: ${r.keySize} valueSize: ${r.valueSize}`;
    prefix = ' ';
    if (r.sequence !== undefined) {
      out += ` sequence: ${r.sequence} headerKeys: [${(r.headerKeys ?? []).map(decodeUtf8).join(',')}]`;
    }
    // The stray '}' after the crc is in Kafka's format string; scripts parse it, so it stays.
    if (r.legacy) out += ` isValid: ${r.legacy.isValid} crc: ${r.legacy.crc >>> 0}}`;
    if (r.control !== undefined) out += ` ${r.control}`;
  }
  if (opts.printDataLog && !batch.v2?.isControl) {
    if (r.key !== null) {
      out += `${prefix}key: ${decodeUtf8(r.key)}`;
      prefix = ' ';
    }
    if (r.value !== null) out += ` payload: ${decodeUtf8(r.value)}`;
  }
  return out;
}

/** Control record text (DumpLogSegments: ABORT/COMMIT markers, other types by name). */
export function formatControl(
  typeId: number,
  typeName: string,
  marker?: { coordinatorEpoch: number } | null,
): string {
  if ((typeId === 0 || typeId === 1) && marker) {
    return `endTxnMarker: ${typeId === 0 ? 'ABORT' : 'COMMIT'} coordinatorEpoch: ${marker.coordinatorEpoch}`;
  }
  return `controlType: ${typeName}(${typeId})`;
}

export function batchJson(file: string, b: BatchView): Record<string, unknown> {
  const o: Record<string, unknown> = { type: 'batch', file };
  if (b.v2) {
    o.baseOffset = b.v2.baseOffset.toString();
    o.lastOffset = b.lastOffset.toString();
    o.count = b.v2.count;
    o.baseSequence = b.v2.baseSequence;
    o.lastSequence = b.v2.lastSequence;
    o.producerId = b.v2.producerId.toString();
    o.producerEpoch = b.v2.producerEpoch;
    o.partitionLeaderEpoch = b.v2.partitionLeaderEpoch;
    o.isTransactional = b.v2.isTransactional;
    o.isControl = b.v2.isControl;
    o.deleteHorizonMs = b.v2.deleteHorizonMs === null ? null : b.v2.deleteHorizonMs.toString();
  } else {
    o.offset = b.lastOffset.toString();
  }
  o.position = b.position;
  o.timestampType = b.timestampType;
  o.maxTimestamp = b.maxTimestamp.toString();
  o.size = b.size;
  o.magic = b.magic;
  o.compresscodec = b.compresscodec;
  o.crc = b.crc >>> 0;
  o.isValid = b.isValid;
  return o;
}

export function recordJson(
  file: string,
  batch: BatchView,
  r: RecordView,
  printDataLog: boolean,
): Record<string, unknown> {
  const o: Record<string, unknown> = {
    type: 'record',
    file,
    batchPosition: batch.position,
    offset: r.offset.toString(),
    timestampType: batch.timestampType,
    timestamp: r.timestamp.toString(),
    keySize: r.keySize,
    valueSize: r.valueSize,
  };
  if (r.sequence !== undefined) {
    o.sequence = r.sequence;
    o.headerKeys = (r.headerKeys ?? []).map(decodeUtf8);
  }
  if (r.legacy) {
    o.isValid = r.legacy.isValid;
    o.crc = r.legacy.crc >>> 0;
  }
  if (r.control !== undefined) o.control = r.control;
  if (printDataLog && !batch.v2?.isControl) {
    o.key = r.key === null ? null : decodeUtf8(r.key);
    o.payload = r.value === null ? null : decodeUtf8(r.value);
  }
  return o;
}
