import { CorruptRecordError, InvalidArgumentError } from './errors.js';

/**
 * Big-endian integers and protobuf-style zigzag varints as Kafka writes them
 * (org.apache.kafka.common.utils.ByteUtils). Varints are at most 5 bytes, varlongs at most 10;
 * like ByteUtils, the bits of the last allowed byte beyond the 32/64-bit width are dropped.
 */

/** Java's Integer.MAX_VALUE: the largest relative offset, sequence or size an int32 field holds. */
export const INT32_MAX = 0x7fffffff;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
/** Largest magnitude whose zigzag value (2|n|) is still exact in a double. */
const ZIGZAG_SAFE = 2 ** 52 - 1;

export function zigzagEncode32(n: number): number {
  return ((n << 1) ^ (n >> 31)) >>> 0;
}

export function zigzagDecode32(n: number): number {
  return (n >>> 1) ^ -(n & 1);
}

export function zigzagEncode64(n: bigint): bigint {
  return BigInt.asUintN(64, (n << 1n) ^ (n >> 63n));
}

export function zigzagDecode64(n: bigint): bigint {
  return BigInt.asIntN(64, (n >> 1n) ^ -(n & 1n));
}

/** Bytes taken by a zigzag varint of the int32 `n`. */
export function sizeOfVarint(n: number): number {
  return sizeOfUnsignedVarint(zigzagEncode32(n));
}

/** Bytes taken by an unsigned varint of the int32 `n` (-1 takes 5 bytes). */
export function sizeOfUnsignedVarint(n: number): number {
  const v = n >>> 0;
  if (v < 0x80) return 1;
  if (v < 0x4000) return 2;
  if (v < 0x20_0000) return 3;
  if (v < 0x1000_0000) return 4;
  return 5;
}

/** Bytes taken by a zigzag varlong of the int64 `n`. */
export function sizeOfVarlong(n: number | bigint): number {
  if (typeof n === 'number') {
    if ((n | 0) === n) return sizeOfUnsignedVarint(zigzagEncode32(n));
    if (n <= ZIGZAG_SAFE && n >= -ZIGZAG_SAFE) {
      let z = n >= 0 ? n * 2 : -n * 2 - 1;
      let size = 1;
      while (z >= 128) {
        z = Math.floor(z / 128);
        size++;
      }
      return size;
    }
    n = toInt64(n);
  }
  let z = zigzagEncode64(n);
  let size = 1;
  while (z >= 128n) {
    z >>= 7n;
    size++;
  }
  return size;
}

function toInt64(n: number | bigint): bigint {
  if (typeof n === 'number') {
    if (!Number.isInteger(n)) throw new InvalidArgumentError(`not an integer: ${n}`);
    n = BigInt(n);
  }
  if (n < INT64_MIN || n > INT64_MAX) throw new InvalidArgumentError(`out of int64 range: ${n}`);
  return n;
}

/**
 * The unsigned varint of the uint32 `u` at `pos` of a buffer with room for it (5 bytes); returns
 * the end. With putVarint and putVarlong, the one varint encoder: ByteWriter and the hot paths
 * that write records into a buffer sized beforehand (record.ts, the upconverter) call them.
 */
export function putUnsignedVarint(buf: Uint8Array, pos: number, u: number): number {
  u >>>= 0;
  while (u >= 0x80) {
    buf[pos++] = (u & 0x7f) | 0x80;
    u >>>= 7;
  }
  buf[pos++] = u;
  return pos;
}

/** The zigzag varint of the int32 `n` at `pos` (at most 5 bytes); returns the end. */
export function putVarint(buf: Uint8Array, pos: number, n: number): number {
  return putUnsignedVarint(buf, pos, zigzagEncode32(n));
}

/** The zigzag varlong of the int64 `v` at `pos` (at most 10 bytes); returns the end. */
export function putVarlong(buf: Uint8Array, pos: number, v: number | bigint): number {
  if (typeof v === 'number') {
    if ((v | 0) === v) return putUnsignedVarint(buf, pos, zigzagEncode32(v));
    if (Number.isInteger(v) && v <= ZIGZAG_SAFE && v >= -ZIGZAG_SAFE) {
      let z = v >= 0 ? v * 2 : -v * 2 - 1;
      while (z >= 128) {
        buf[pos++] = (z % 128) | 0x80;
        z = Math.floor(z / 128);
      }
      buf[pos++] = z;
      return pos;
    }
  }
  let z = zigzagEncode64(toInt64(v));
  while (z >= 128n) {
    buf[pos++] = Number(z & 0x7fn) | 0x80;
    z >>= 7n;
  }
  buf[pos++] = Number(z);
  return pos;
}

function eofIn(what: string, position: number): CorruptRecordError {
  return new CorruptRecordError(`unexpected end of data in ${what}`, { position });
}

/** A cursor over a Uint8Array reading Kafka's big-endian integers and varints. */
export class ByteReader {
  readonly buf: Uint8Array;
  /** Current position in `buf`. */
  pos: number;
  /** End (exclusive) of the readable range. */
  readonly end: number;
  private readonly view: DataView;
  private readonly ab: ArrayBufferLike;
  private readonly base: number;

  constructor(buf: Uint8Array, pos = 0, end = buf.length) {
    if (pos < 0 || end > buf.length || pos > end) {
      throw new InvalidArgumentError(`bad reader range [${pos}, ${end}) over ${buf.length} bytes`);
    }
    this.buf = buf;
    this.pos = pos;
    this.end = end;
    this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    this.ab = buf.buffer;
    this.base = buf.byteOffset;
  }

  get remaining(): number {
    return this.end - this.pos;
  }

  private need(n: number, what: string): void {
    if (this.end - this.pos < n) {
      throw new CorruptRecordError(
        `unexpected end of data reading ${what}: need ${n} bytes, ${this.end - this.pos} left`,
        { position: this.pos },
      );
    }
  }

  int8(): number {
    this.need(1, 'int8');
    return this.view.getInt8(this.pos++);
  }

  int16(): number {
    this.need(2, 'int16');
    const v = this.view.getInt16(this.pos);
    this.pos += 2;
    return v;
  }

  int32(): number {
    this.need(4, 'int32');
    const v = this.view.getInt32(this.pos);
    this.pos += 4;
    return v;
  }

  uint32(): number {
    this.need(4, 'uint32');
    const v = this.view.getUint32(this.pos);
    this.pos += 4;
    return v;
  }

  int64(): bigint {
    this.need(8, 'int64');
    const v = this.view.getBigInt64(this.pos);
    this.pos += 8;
    return v;
  }

  /** Zigzag varint (int32), at most 5 bytes. */
  varint(): number {
    const pos = this.pos;
    if (pos < this.end) {
      const b = this.buf[pos];
      if (b < 0x80) {
        this.pos = pos + 1;
        return (b >>> 1) ^ -(b & 1);
      }
    }
    return zigzagDecode32(this.unsignedVarintSlow());
  }

  /** Unsigned varint as Kafka's ByteUtils.readUnsignedVarint: an int32 (5-byte -1 gives -1). */
  unsignedVarint(): number {
    const pos = this.pos;
    if (pos < this.end) {
      const b = this.buf[pos];
      if (b < 0x80) {
        this.pos = pos + 1;
        return b;
      }
    }
    return this.unsignedVarintSlow();
  }

  private unsignedVarintSlow(): number {
    const buf = this.buf;
    const end = this.end;
    const start = this.pos;
    let pos = start;
    let value = 0;
    let shift = 0;
    for (;;) {
      if (pos >= end) throw eofIn('varint', start);
      const b = buf[pos++];
      if ((b & 0x80) === 0) {
        value |= b << shift;
        break;
      }
      value |= (b & 0x7f) << shift;
      shift += 7;
      if (shift > 28) throw new CorruptRecordError('varint longer than 5 bytes', { position: start });
    }
    this.pos = pos;
    return value;
  }

  /**
   * Zigzag varlong (int64), at most 10 bytes: a number when the value is a safe integer,
   * a bigint otherwise (exact over the whole int64 range).
   */
  varlong(): number | bigint {
    const buf = this.buf;
    const end = this.end;
    const start = this.pos;
    let pos = start;
    // Up to 7 bytes (49 bits) accumulate exactly in a double.
    let raw = 0;
    let mul = 1;
    for (let i = 0; i < 7; i++) {
      if (pos >= end) throw new CorruptRecordError('unexpected end of data in varlong', { position: start });
      const b = buf[pos++];
      raw += (b & 0x7f) * mul;
      if ((b & 0x80) === 0) {
        this.pos = pos;
        // raw < 2^49: zigzag decode with plain arithmetic.
        return raw % 2 === 0 ? raw / 2 : -(raw + 1) / 2;
      }
      mul *= 128;
    }
    let big = BigInt(raw);
    let shift = 49n;
    for (;;) {
      if (pos >= end) throw new CorruptRecordError('unexpected end of data in varlong', { position: start });
      const b = buf[pos++];
      big |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) break;
      shift += 7n;
      if (shift > 63n) throw new CorruptRecordError('varlong longer than 10 bytes', { position: start });
    }
    this.pos = pos;
    const v = zigzagDecode64(BigInt.asUintN(64, big));
    return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
  }

  /** `n` bytes as a plain Uint8Array view into the underlying buffer (no copy). */
  bytes(n: number): Uint8Array {
    if (n < 0) throw new CorruptRecordError(`negative length ${n}`, { position: this.pos });
    this.need(n, `${n} bytes`);
    const start = this.pos;
    this.pos += n;
    // A plain Uint8Array view: cheaper than subarray (no species lookup), never a Buffer.
    return new Uint8Array(this.ab, this.base + start, n);
  }

  /** Varint length then bytes; length -1 means null, other negative lengths are corrupt. */
  nullableBytes(): Uint8Array | null {
    const at = this.pos;
    const n = this.varint();
    if (n === -1) return null;
    if (n < 0) throw new CorruptRecordError(`invalid length ${n}`, { position: at });
    if (this.end - this.pos < n) {
      throw new CorruptRecordError(`length ${n} runs past the end (${this.end - this.pos} bytes left)`, {
        position: at,
      });
    }
    const start = this.pos;
    this.pos += n;
    return new Uint8Array(this.ab, this.base + start, n);
  }

  skip(n: number): void {
    this.need(n, `${n} bytes`);
    this.pos += n;
  }
}

/** A growable big-endian writer. `finish()` returns the written bytes. */
export class ByteWriter {
  private buf: Uint8Array;
  private view: DataView;
  pos = 0;

  constructor(initialCapacity = 256) {
    this.buf = new Uint8Array(Math.max(16, initialCapacity));
    this.view = new DataView(this.buf.buffer);
  }

  /** Makes room for `n` more bytes. */
  ensure(n: number): void {
    const need = this.pos + n;
    if (need <= this.buf.length) return;
    let cap = this.buf.length * 2;
    while (cap < need) cap *= 2;
    const next = new Uint8Array(cap);
    next.set(this.buf.subarray(0, this.pos));
    this.buf = next;
    this.view = new DataView(next.buffer);
  }

  int8(v: number): this {
    this.ensure(1);
    this.view.setInt8(this.pos++, v);
    return this;
  }

  int16(v: number): this {
    this.ensure(2);
    this.view.setInt16(this.pos, v);
    this.pos += 2;
    return this;
  }

  int32(v: number): this {
    this.ensure(4);
    this.view.setInt32(this.pos, v);
    this.pos += 4;
    return this;
  }

  uint32(v: number): this {
    this.ensure(4);
    this.view.setUint32(this.pos, v);
    this.pos += 4;
    return this;
  }

  int64(v: bigint | number): this {
    this.ensure(8);
    this.view.setBigInt64(this.pos, toInt64(v));
    this.pos += 8;
    return this;
  }

  /** Overwrites an int32 already written at `at` (lengths known only at the end). */
  setInt32At(at: number, v: number): void {
    this.view.setInt32(at, v);
  }

  setUint32At(at: number, v: number): void {
    this.view.setUint32(at, v);
  }

  unsignedVarint(v: number): this {
    this.ensure(5);
    this.pos = putUnsignedVarint(this.buf, this.pos, v);
    return this;
  }

  varint(v: number): this {
    this.ensure(5);
    this.pos = putVarint(this.buf, this.pos, v);
    return this;
  }

  varlong(v: number | bigint): this {
    this.ensure(10);
    this.pos = putVarlong(this.buf, this.pos, v);
    return this;
  }

  bytes(data: Uint8Array): this {
    this.ensure(data.length);
    this.buf.set(data, this.pos);
    this.pos += data.length;
    return this;
  }

  /** Varint length (-1 for null) then the bytes. */
  nullableBytes(data: Uint8Array | null): this {
    if (data === null) return this.varint(-1);
    this.varint(data.length);
    return this.bytes(data);
  }

  /** The written bytes, a view of the internal buffer (the writer should not be reused). */
  finish(): Uint8Array {
    return this.buf.subarray(0, this.pos);
  }
}
