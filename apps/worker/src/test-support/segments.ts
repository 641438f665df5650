/**
 * Deterministic Kafka partition directories of mixed segment kinds for the end-to-end tests:
 * v0/v1 plain messages, v0/v1 compressed wrappers (gzip, snappy, lz4) and v2 batches.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  CompressionType,
  encodeRecordBatch,
  type LogicalRecord,
  logicalRecordsOfBatch,
} from '@seglift/format';
import { encodeCompressedWrapper, encodeLegacyEntry, logicalRecordsOfLegacyEntry } from '@seglift/legacy';
import { readSegmentEntries } from '@seglift/segment';
import { prng as rng } from '@seglift/testkit';

export const KINDS = ['v0', 'v1', 'v1-gzip', 'v0-snappy', 'v1-lz4', 'v2-none', 'v2-gzip'] as const;
export type Kind = (typeof KINDS)[number];

const enc = new TextEncoder();

function payload(r: () => number, n: number, i: number): Uint8Array {
  // Compressible but not trivial: words from a small vocabulary.
  const words = ['kafka', 'segment', 'offset', 'record', 'batch', 'legacy', 'zstd', 'replica'];
  let s = `#${i}`;
  while (s.length < n) s += ` ${words[Math.floor(r() * words.length)]}${Math.floor(r() * 1000)}`;
  return enc.encode(s.slice(0, n));
}

/** The bytes of one segment of `records` records starting at `baseOffset`. */
export function encodeSegment(
  kind: Kind,
  baseOffset: bigint,
  records: number,
  seed: number,
  valueBytes = 120,
): Uint8Array {
  const r = rng(seed);
  const parts: Uint8Array[] = [];
  const ts0 = 1_500_000_000_000n + BigInt(seed) * 1000n;
  const msgs = Array.from({ length: records }, (_, i) => ({
    offset: baseOffset + BigInt(i),
    timestamp: ts0 + BigInt(i),
    key: i % 5 === 0 ? null : enc.encode(`k${seed}-${i}`),
    value: i % 17 === 3 ? null : payload(r, valueBytes, i),
  }));
  const group = 10;
  switch (kind) {
    case 'v0':
    case 'v1':
      for (const m of msgs) {
        parts.push(
          encodeLegacyEntry(m.offset, {
            magic: kind === 'v0' ? 0 : 1,
            timestamp: m.timestamp,
            key: m.key,
            value: m.value,
          }),
        );
      }
      break;
    case 'v1-gzip':
    case 'v0-snappy':
    case 'v1-lz4': {
      const magic = kind.startsWith('v0') ? 0 : 1;
      const codec = kind.endsWith('gzip')
        ? CompressionType.GZIP
        : kind.endsWith('snappy')
          ? CompressionType.SNAPPY
          : CompressionType.LZ4;
      for (let i = 0; i < msgs.length; i += group) {
        const chunk = msgs
          .slice(i, i + group)
          .map((m) => ({ ...m, timestamp: magic === 1 ? m.timestamp : undefined }));
        parts.push(encodeCompressedWrapper({ magic, codec, messages: chunk }));
      }
      break;
    }
    default: {
      const codec = kind === 'v2-gzip' ? CompressionType.GZIP : CompressionType.NONE;
      for (let i = 0; i < msgs.length; i += group) {
        const chunk = msgs.slice(i, i + group);
        parts.push(
          encodeRecordBatch(
            {
              baseOffset: chunk[0].offset,
              partitionLeaderEpoch: 0,
              attributes: 0,
              lastOffsetDelta: chunk.length - 1,
              baseTimestamp: chunk[0].timestamp,
              maxTimestamp: chunk[chunk.length - 1].timestamp,
              producerId: -1n,
              producerEpoch: -1,
              baseSequence: -1,
            },
            chunk.map((m, j) => ({
              attributes: 0,
              timestampDelta: Number(m.timestamp - chunk[0].timestamp),
              offsetDelta: j,
              key: m.key,
              value: m.value,
              headers: [],
            })),
            codec,
          ),
        );
      }
    }
  }
  return Buffer.concat(parts);
}

export interface GeneratedSegment {
  path: string;
  kind: Kind;
  records: number;
  /** True for the newest segment of its partition (never converted). */
  active: boolean;
}

/**
 * `partitions` dirs `<topic>-<n>` under `root`, each with `perPartition` rolled segments of
 * rotating kinds plus one active segment.
 */
export function generateLogDir(
  root: string,
  opts: {
    topic: string;
    partitions: number;
    perPartition: number;
    records: number;
    valueBytes?: number;
    seed?: number;
  },
): GeneratedSegment[] {
  const out: GeneratedSegment[] = [];
  let seed = opts.seed ?? 1;
  for (let p = 0; p < opts.partitions; p++) {
    const dir = join(root, `${opts.topic}-${p}`);
    mkdirSync(dir, { recursive: true });
    let base = 0n;
    for (let s = 0; s <= opts.perPartition; s++) {
      const kind = KINDS[(p + s) % KINDS.length];
      const name = `${base.toString().padStart(20, '0')}.log`;
      writeFileSync(join(dir, name), encodeSegment(kind, base, opts.records, seed++, opts.valueBytes));
      out.push({ path: join(dir, name), kind, records: opts.records, active: s === opts.perPartition });
      base += BigInt(opts.records);
    }
  }
  return out;
}

function recordLine(r: LogicalRecord): string {
  const hex = (b: Uint8Array | null) => (b === null ? '-' : Buffer.from(b).toString('hex'));
  return `${r.offset}|${r.timestamp}|${hex(r.key)}|${hex(r.value)}\n`;
}

/**
 * What a consumer would read from the segment, hashed; plus the batch magics/codecs seen
 * (`v2/4`; a control batch, never compressed, `v2/control`).
 */
export async function segmentDigest(
  path: string,
): Promise<{ digest: string; records: number; formats: string[] }> {
  const h = createHash('sha256');
  let records = 0;
  const formats = new Set<string>();
  for await (const entry of readSegmentEntries(path)) {
    const attrs = entry.magic === 2 ? (entry.bytes[21]! << 8) | entry.bytes[22]! : entry.bytes[17]!;
    // isControl: attributes bit 5 (docs/kafka-format.md).
    formats.add(`v${entry.magic}/${entry.magic === 2 && attrs & 0x20 ? 'control' : attrs & 0x07}`);
    const list =
      entry.magic === 2 ? logicalRecordsOfBatch(entry.bytes) : logicalRecordsOfLegacyEntry(entry.bytes);
    for (const r of list) {
      h.update(recordLine(r));
      records++;
    }
  }
  return { digest: h.digest('hex'), records, formats: [...formats].sort() };
}
