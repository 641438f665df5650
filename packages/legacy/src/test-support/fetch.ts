/**
 * Test-only: a minimal Fetch response walker (versions 0-4) that returns each partition's
 * record-set bytes, i.e. the bytes a broker keeps in its .log segment.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { KAFKAJS_FIXTURES } from '@seglift/testkit';

export function loadBufferJson(name: string): Uint8Array {
  const json = JSON.parse(readFileSync(path.join(KAFKAJS_FIXTURES, name), 'utf8')) as { data: number[] };
  return Uint8Array.from(json.data);
}

export interface PartitionRecordSet {
  topic: string;
  partition: number;
  recordSet: Uint8Array;
}

export function fetchRecordSets(response: Uint8Array, version: number): PartitionRecordSet[] {
  const view = new DataView(response.buffer, response.byteOffset, response.byteLength);
  let p = 0;
  const int16 = () => {
    const v = view.getInt16(p);
    p += 2;
    return v;
  };
  const int32 = () => {
    const v = view.getInt32(p);
    p += 4;
    return v;
  };
  if (version >= 1) p += 4; // throttle_time_ms
  const out: PartitionRecordSet[] = [];
  const topics = int32();
  for (let t = 0; t < topics; t++) {
    const nameLength = int16();
    const topic = Buffer.from(response.subarray(p, p + nameLength)).toString('utf8');
    p += nameLength;
    const partitions = int32();
    for (let i = 0; i < partitions; i++) {
      const partition = int32();
      p += 2 + 8; // error_code, high_watermark
      if (version >= 4) {
        p += 8; // last_stable_offset
        const aborted = int32();
        if (aborted > 0) p += aborted * 16;
      }
      const size = int32();
      const recordSet = response.subarray(p, p + Math.max(0, size));
      p += Math.max(0, size);
      out.push({ topic, partition, recordSet });
    }
  }
  return out;
}

export interface ShallowEntry {
  position: number;
  magic: number;
  bytes: Uint8Array;
}

/** Splits a record set into whole entries (legacy or v2); a partial tail is dropped, as Kafka does. */
export function shallowEntries(recordSet: Uint8Array): ShallowEntry[] {
  const view = new DataView(recordSet.buffer, recordSet.byteOffset, recordSet.byteLength);
  const out: ShallowEntry[] = [];
  let p = 0;
  while (recordSet.length - p > 17) {
    const size = view.getInt32(p + 8);
    const end = p + 12 + size;
    if (end > recordSet.length) break;
    out.push({ position: p, magic: recordSet[p + 16], bytes: recordSet.subarray(p, end) });
    p = end;
  }
  return out;
}
