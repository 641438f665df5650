/**
 * An independent view of a segment for tests: kafkajs's own decoders (node_modules/kafkajs/src/
 * protocol/...) with codecs registered from the raw libraries, Kafka's legacy timestamp rules
 * applied on top, and a hand-written reimplementation of LogSegment.recover's index rule.
 * Nothing here uses @seglift/format or @seglift/legacy.
 */

import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, '../../../..');
const rootRequire = createRequire(path.join(repoRoot, 'package.json'));
const formatRequire = createRequire(path.join(repoRoot, 'packages/format/package.json'));
const Decoder = rootRequire('kafkajs/src/protocol/decoder');
const RecordBatchDecoder = rootRequire('kafkajs/src/protocol/recordBatch/v0/decoder');
const MessageSetDecoder = rootRequire('kafkajs/src/protocol/messageSet/decoder');
const compression = rootRequire('kafkajs/src/protocol/message/compression');
const zstd = formatRequire('zstd-napi');
const snappy = formatRequire('snappy');

export { repoRoot };

function xerialUnframe(buf: Buffer): Buffer {
  const magic = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00]);
  if (buf.length < 16 || !buf.subarray(0, 8).equals(magic)) return snappy.uncompressSync(buf) as Buffer;
  const parts: Buffer[] = [];
  let p = 16;
  while (p + 4 <= buf.length) {
    const n = buf.readInt32BE(p);
    parts.push(snappy.uncompressSync(buf.subarray(p + 4, p + 4 + n)) as Buffer);
    p += 4 + n;
  }
  return Buffer.concat(parts);
}

/** LZ4 block format decoder (the frame's header checksum is not checked: v0 frames have it wrong). */
function lz4Block(src: Buffer, out: number[]): void {
  let i = 0;
  while (i < src.length) {
    const token = src[i++];
    let lit = token >> 4;
    if (lit === 15) for (let b = 255; b === 255; ) lit += b = src[i++];
    for (let k = 0; k < lit; k++) out.push(src[i++]);
    if (i >= src.length) break;
    const off = src[i] | (src[i + 1] << 8);
    i += 2;
    let len = token & 15;
    if (len === 15) for (let b = 255; b === 255; ) len += b = src[i++];
    len += 4;
    const start = out.length - off;
    for (let k = 0; k < len; k++) out.push(out[start + k]);
  }
}

function lz4Frame(buf: Buffer): Buffer {
  const flg = buf[4];
  let p = 7 + ((flg & 0x08) !== 0 ? 8 : 0);
  const out: number[] = [];
  for (;;) {
    const n = buf.readUInt32LE(p);
    p += 4;
    if (n === 0) break;
    const size = n & 0x7fffffff;
    const block = buf.subarray(p, p + size);
    if (n & 0x80000000) for (const b of block) out.push(b);
    else lz4Block(block, out);
    p += size + ((flg & 0x10) !== 0 ? 4 : 0);
  }
  return Buffer.from(out);
}

compression.Codecs[compression.Types.GZIP] = () => ({ decompress: async (b: Buffer) => gunzipSync(b) });
compression.Codecs[compression.Types.Snappy] = () => ({ decompress: async (b: Buffer) => xerialUnframe(b) });
compression.Codecs[compression.Types.LZ4] = () => ({ decompress: async (b: Buffer) => lz4Frame(b) });
compression.Codecs[compression.Types.ZSTD] = () => ({ decompress: async (b: Buffer) => zstd.decompress(b) });

export interface PlainRecord {
  offset: string;
  timestamp: string;
  timestampType: 'CreateTime' | 'LogAppendTime';
  key: string | null;
  value: string | null;
  headers: string;
  producerId: string;
  producerEpoch: number;
  sequence: number;
  isTransactional: boolean;
  isControl: boolean;
}

const hex = (b: Buffer | null | undefined) => (b == null ? null : Buffer.from(b).toString('hex'));

export interface Entry {
  position: number;
  size: number;
  magic: number;
  bytes: Buffer;
  lastOffset: bigint;
  maxTimestamp: bigint;
}

/** Shallow entries of a whole (small) file. */
export function shallowEntries(file: Buffer): Entry[] {
  const out: Entry[] = [];
  let p = 0;
  while (p + 17 <= file.length) {
    const size = file.readInt32BE(p + 8) + 12;
    const magic = file.readInt8(p + 16);
    const bytes = file.subarray(p, p + size);
    let lastOffset: bigint;
    let maxTimestamp: bigint;
    if (magic === 2) {
      lastOffset = bytes.readBigInt64BE(0) + BigInt(bytes.readInt32BE(23));
      maxTimestamp = bytes.readBigInt64BE(35);
    } else {
      lastOffset = bytes.readBigInt64BE(0);
      maxTimestamp = magic === 1 ? bytes.readBigInt64BE(18) : -1n;
    }
    out.push({ position: p, size, magic, bytes, lastOffset, maxTimestamp });
    p += size;
  }
  return out;
}

/** Every record of a segment file as a consumer sees it, decoded by kafkajs. */
export async function independentRecords(file: Buffer): Promise<PlainRecord[]> {
  const out: PlainRecord[] = [];
  for (const e of shallowEntries(file)) {
    if (e.magic === 2) {
      const batch = await RecordBatchDecoder(new Decoder(e.bytes));
      for (const r of batch.records) {
        const delta = Number(BigInt(r.offset) - BigInt(batch.firstOffset));
        out.push({
          offset: r.offset,
          timestamp: r.timestamp,
          timestampType: batch.timestampType === 1 ? 'LogAppendTime' : 'CreateTime',
          key: hex(r.key),
          value: hex(r.value),
          headers: JSON.stringify(r.headers, (_k, v) =>
            v?.type === 'Buffer' ? Buffer.from(v.data).toString('hex') : v,
          ),
          producerId: batch.producerId,
          producerEpoch: batch.producerEpoch,
          sequence: batch.firstSequence >= 0 ? batch.firstSequence + delta : -1,
          isTransactional: batch.inTransaction,
          isControl: batch.isControlBatch,
        });
      }
    } else {
      const wrapperLat = e.magic === 1 && (e.bytes[17] & 0x08) !== 0;
      const wrapperTs = e.magic === 1 ? e.bytes.readBigInt64BE(18) : -1n;
      const messages = await MessageSetDecoder(new Decoder(e.bytes), e.bytes.length);
      for (const m of messages) {
        const ts = m.magicByte === 0 ? '-1' : wrapperLat ? wrapperTs.toString() : String(m.timestamp);
        out.push({
          offset: String(m.offset),
          timestamp: ts,
          timestampType: m.magicByte === 1 && wrapperLat ? 'LogAppendTime' : 'CreateTime',
          key: hex(m.key),
          value: hex(m.value),
          headers: '{}',
          producerId: '-1',
          producerEpoch: -1,
          sequence: -1,
          isTransactional: false,
          isControl: false,
        });
      }
    }
  }
  return out;
}

/** LogSegment.recover's index rule, written out again from ref §6.4 without @seglift/format. */
export function recoveryIndexes(
  file: Buffer,
  baseOffset: bigint,
  interval = 4096,
): { index: Buffer; timeindex: Buffer } {
  const idx: Buffer[] = [];
  const tix: Buffer[] = [];
  let maxSoFar = -1n;
  let offsetOfMax = baseOffset;
  let lastIndexedPos = 0;
  let lastTimeTs = -1n;
  const timeAppend = () => {
    if (maxSoFar > lastTimeTs) {
      const b = Buffer.alloc(12);
      b.writeBigInt64BE(maxSoFar, 0);
      b.writeInt32BE(Number(offsetOfMax - baseOffset), 8);
      tix.push(b);
      lastTimeTs = maxSoFar;
    }
  };
  for (const e of shallowEntries(file)) {
    if (e.maxTimestamp > maxSoFar) {
      maxSoFar = e.maxTimestamp;
      offsetOfMax = e.lastOffset;
    }
    if (e.position - lastIndexedPos > interval) {
      const b = Buffer.alloc(8);
      b.writeInt32BE(Number(e.lastOffset - baseOffset), 0);
      b.writeInt32BE(e.position, 4);
      idx.push(b);
      timeAppend();
      lastIndexedPos = e.position;
    }
  }
  timeAppend();
  return { index: Buffer.concat(idx), timeindex: Buffer.concat(tix) };
}
