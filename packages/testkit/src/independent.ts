/**
 * An independent view of a segment for tests: kafkajs's own decoders (node_modules/kafkajs/src/
 * protocol/...) with reference codecs (independent-codecs.ts), Kafka's legacy timestamp rules
 * applied on top, and a hand-written reimplementation of LogSegment.recover's index rule.
 * Nothing here uses @seglift/format or @seglift/legacy.
 */

import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import './independent-codecs.js';

const here = path.dirname(fileURLToPath(import.meta.url));
// packages/testkit/{src,dist}/ -> the checkout.
const repoRoot = path.resolve(here, '../../..');
const rootRequire = createRequire(path.join(repoRoot, 'package.json'));
const Decoder = rootRequire('kafkajs/src/protocol/decoder');
const RecordBatchDecoder = rootRequire('kafkajs/src/protocol/recordBatch/v0/decoder');
const MessageSetDecoder = rootRequire('kafkajs/src/protocol/messageSet/decoder');

export { repoRoot };

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

/** LogSegment.recover's index rule, written out again from docs/kafka-format.md §6.4 without @seglift/format. */
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
