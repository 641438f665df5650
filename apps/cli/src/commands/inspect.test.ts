import { readFileSync, truncateSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { CompressionType, crc32, encodeProducerSnapshot } from '@seglift/format';
import { needs, realFixtures, realSegmentLogs } from '@seglift/testkit';
import { describe, expect, it } from 'vitest';
import { lines, run } from '../test-support/run.js';
import {
  commitMarker,
  encodeCompressedWrapper,
  encodeLegacyEntry,
  tmpDir,
  utf8,
  v2Batch,
  writeSegment,
} from '../test-support/segments.js';

const require = createRequire(import.meta.url);
// kafkajs decodes the same bytes independently: its field values are the reference.
const KafkaDecoder = require('kafkajs/src/protocol/decoder');
const decodeKafkajsBatch = require('kafkajs/src/protocol/recordBatch/v0/decoder');

async function kafkajsBatch(bytes: Uint8Array) {
  const d = new KafkaDecoder(Buffer.from(bytes));
  return decodeKafkajsBatch(d);
}

describe('seglift inspect: .log', () => {
  it('prints v2 batch and record lines with the kafka-dump-log fields', async () => {
    const dir = tmpDir();
    const b0 = v2Batch(0n, 2);
    const b1 = v2Batch(2n, 1, CompressionType.GZIP, { producerId: 42n, producerEpoch: 3, baseSequence: 7 });
    const file = writeSegment(dir, 0n, [b0, b1]);
    const r = await run(['inspect', file, '--deep-iteration']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const k0 = await kafkajsBatch(b0);
    const k1 = await kafkajsBatch(b1);
    const crc0 = Buffer.from(b0).readUInt32BE(17);
    const crc1 = Buffer.from(b1).readUInt32BE(17);
    expect(lines(r.stdout)).toEqual([
      `Dumping ${file}`,
      'Log starting offset: 0',
      `baseOffset: ${k0.firstOffset} lastOffset: 1 count: 2 baseSequence: -1 lastSequence: -1 producerId: ${k0.producerId} producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: ${k0.maxTimestamp} size: ${b0.length} magic: 2 compresscodec: none crc: ${crc0} isvalid: true`,
      `| offset: ${k0.records[0].offset} CreateTime: ${k0.records[0].timestamp} keySize: 2 valueSize: 2 sequence: -1 headerKeys: []`,
      `| offset: ${k0.records[1].offset} CreateTime: ${k0.records[1].timestamp} keySize: 2 valueSize: 2 sequence: -1 headerKeys: []`,
      `baseOffset: 2 lastOffset: 2 count: 1 baseSequence: 7 lastSequence: 7 producerId: ${k1.producerId} producerEpoch: ${k1.producerEpoch} partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: ${b0.length} CreateTime: ${k1.maxTimestamp} size: ${b1.length} magic: 2 compresscodec: gzip crc: ${crc1} isvalid: true`,
      `| offset: 2 CreateTime: ${k1.records[0].timestamp} keySize: 2 valueSize: 2 sequence: 7 headerKeys: []`,
    ]);
    expect(k0.records[1].timestamp).toBe('1700000000001');
  });

  it('--print-data-log prints key and payload as UTF-8 and implies deep iteration', async () => {
    const dir = tmpDir();
    const file = writeSegment(dir, 5n, [v2Batch(5n, 1)]);
    const r = await run(['inspect', file, '--print-data-log']);
    expect(r.code).toBe(0);
    expect(lines(r.stdout)[3]).toBe(
      '| offset: 5 CreateTime: 1700000000005 keySize: 2 valueSize: 2 sequence: -1 headerKeys: [] key: k5 payload: v5',
    );
  });

  it('prints legacy entries: v0 message, v1 gzip wrapper with inner offsets, isValid and crc', async () => {
    const dir = tmpDir();
    const m0 = encodeLegacyEntry(0n, { magic: 0, key: utf8('a'), value: utf8('hello') });
    const wrapper = encodeCompressedWrapper({
      magic: 1,
      codec: CompressionType.GZIP,
      messages: [
        { offset: 1n, timestamp: 1000n, key: null, value: utf8('x') },
        { offset: 2n, timestamp: 1005n, key: utf8('k'), value: null },
      ],
    });
    const w = Buffer.from(wrapper);
    const file = writeSegment(dir, 0n, [m0, wrapper]);
    const r = await run(['inspect', file, '--print-data-log']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const crcM0 = Buffer.from(m0).readUInt32BE(12);
    const inner1 = encodeLegacyEntry(0n, { magic: 1, timestamp: 1000n, key: null, value: utf8('x') });
    const inner2 = encodeLegacyEntry(1n, { magic: 1, timestamp: 1005n, key: utf8('k'), value: null });
    expect(lines(r.stdout)).toEqual([
      `Dumping ${file}`,
      'Log starting offset: 0',
      `offset: 0 position: 0 NoTimestampType: -1 size: ${m0.length} magic: 0 compresscodec: none crc: ${crcM0} isvalid: true`,
      `| offset: 0 NoTimestampType: -1 keySize: 1 valueSize: 5 isValid: true crc: ${crcM0}} key: a payload: hello`,
      `offset: 2 position: ${m0.length} CreateTime: 1005 size: ${wrapper.length} magic: 1 compresscodec: gzip crc: ${w.readUInt32BE(12)} isvalid: true`,
      `| offset: 1 CreateTime: 1000 keySize: -1 valueSize: 1 isValid: true crc: ${crc32(inner1.subarray(16))}} payload: x`,
      `| offset: 2 CreateTime: 1005 keySize: 1 valueSize: -1 isValid: true crc: ${crc32(inner2.subarray(16))}} key: k`,
    ]);
  });

  it('prints transaction markers and no data for control batches', async () => {
    const dir = tmpDir();
    const file = writeSegment(dir, 0n, [commitMarker(0n, 9n, 4)]);
    const r = await run(['inspect', file, '--print-data-log']);
    expect(r.code).toBe(0);
    const out = lines(r.stdout);
    expect(out[2]).toContain(' isTransactional: true isControl: true ');
    expect(out[3]).toBe(
      '| offset: 0 CreateTime: 1700000000000 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] endTxnMarker: COMMIT coordinatorEpoch: 4',
    );
  });

  it('reports trailing invalid bytes and a bad CRC with exit code 1', async () => {
    const dir = tmpDir();
    const good = v2Batch(0n, 1);
    const bad = Buffer.from(v2Batch(1n, 1));
    bad[bad.length - 1] ^= 0xff;
    const tail = Buffer.from(v2Batch(2n, 1)).subarray(0, 30);
    const file = writeSegment(dir, 0n, [good, bad, tail]);
    const r = await run(['inspect', file]);
    expect(r.code).toBe(1);
    const out = lines(r.stdout);
    expect(out[2]).toMatch(/ isvalid: true$/);
    expect(out[3]).toMatch(/ isvalid: false$/);
    expect(out[4]).toBe(`Found 30 invalid bytes at the end of ${path.basename(file)}`);
    // --max-bytes cuts the file: the cut batch is not reported as invalid bytes.
    const r2 = await run(['inspect', file, '--max-bytes', String(good.length + 10)]);
    expect(lines(r2.stdout)).toHaveLength(3);
    expect(r2.code).toBe(0);
  });

  it('reports non-consecutive offsets on stderr with deep iteration', async () => {
    const dir = tmpDir();
    const file = writeSegment(dir, 0n, [v2Batch(0n, 1), v2Batch(5n, 1)]);
    const r = await run(['inspect', file, '--deep-iteration']);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe(`Non-consecutive offsets in ${path.resolve(file)}\n  0 is followed by 5\n`);
  });

  it('a typed decode error names the file, position and offset', async () => {
    const dir = tmpDir();
    const good = v2Batch(0n, 1);
    const bad = Buffer.from(v2Batch(1n, 1));
    bad.writeInt32BE(3, 57); // recordsCount 3 but one record: premature end of the records
    const file = writeSegment(dir, 0n, [good, bad]);
    const r = await run(['inspect', file, '--deep-iteration']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /^error\[[A-Z_]+\]: .*\(file .*00000000000000000000\.log, position \d+, offset 1\)\n$/,
    );
  });

  it('--json writes one object per batch and record, offsets as strings', async () => {
    const dir = tmpDir();
    const b = v2Batch(3n, 1);
    const file = writeSegment(dir, 3n, [b]);
    const r = await run(['inspect', file, '--json', '--print-data-log']);
    expect(r.code).toBe(0);
    const objs = lines(r.stdout).map((l) => JSON.parse(l));
    expect(objs).toEqual([
      {
        type: 'batch',
        file,
        baseOffset: '3',
        lastOffset: '3',
        count: 1,
        baseSequence: -1,
        lastSequence: -1,
        producerId: '-1',
        producerEpoch: -1,
        partitionLeaderEpoch: 0,
        isTransactional: false,
        isControl: false,
        deleteHorizonMs: null,
        position: 0,
        timestampType: 'CreateTime',
        maxTimestamp: '1700000000003',
        size: b.length,
        magic: 2,
        compresscodec: 'none',
        crc: Buffer.from(b).readUInt32BE(17),
        isValid: true,
      },
      {
        type: 'record',
        file,
        batchPosition: 0,
        offset: '3',
        timestampType: 'CreateTime',
        timestamp: '1700000000003',
        keySize: 2,
        valueSize: 2,
        sequence: -1,
        headerKeys: [],
        key: 'k3',
        payload: 'v3',
      },
    ]);
  });
});

describe('seglift inspect: indexes', () => {
  function indexBytes(entries: [number, number][]): Buffer {
    const b = Buffer.alloc(entries.length * 8);
    entries.forEach(([rel, pos], i) => {
      b.writeInt32BE(rel, i * 8);
      b.writeInt32BE(pos, i * 8 + 4);
    });
    return b;
  }

  it('prints .index entries, stops at zero padding, and --verify-index reports mismatches', async () => {
    const dir = tmpDir();
    const b0 = v2Batch(100n, 2);
    const b1 = v2Batch(102n, 3);
    writeSegment(dir, 100n, [b0, b1]);
    const index = path.join(dir, '00000000000000000100.index');
    // Entry 1 claims offset 103 at b1's position, but b1's last offset is 104. Then zero padding.
    writeFileSync(
      index,
      Buffer.concat([
        indexBytes([
          [1, 0],
          [3, b0.length],
        ]),
        Buffer.alloc(64),
      ]),
    );
    const r = await run(['inspect', index, '--verify-index']);
    expect(lines(r.stdout)).toEqual([
      `Dumping ${index}`,
      'offset: 101 position: 0',
      `offset: 103 position: ${b0.length}`,
    ]);
    expect(r.stderr).toBe(`Mismatches in :${path.resolve(index)}\n  Index offset: 103, log offset: 104\n`);
    expect(r.code).toBe(1);
  });

  it('prints an empty .index as empty and .timeindex entries', async () => {
    const dir = tmpDir();
    const b0 = v2Batch(0n, 2);
    writeSegment(dir, 0n, [b0]);
    const index = path.join(dir, '00000000000000000000.index');
    writeFileSync(index, Buffer.alloc(0));
    const timeindex = path.join(dir, '00000000000000000000.timeindex');
    const t = Buffer.alloc(12);
    t.writeBigInt64BE(1_700_000_000_001n, 0);
    t.writeInt32BE(1, 8);
    writeFileSync(timeindex, t);
    const r = await run(['inspect', index, timeindex, '--verify-index']);
    expect(r.stderr).toBe('');
    expect(lines(r.stdout)).toEqual([
      `Dumping ${index}`,
      `${index} is empty.`,
      `Dumping ${timeindex}`,
      'timestamp: 1700000000001 offset: 1',
    ]);
    expect(r.code).toBe(0);
  });
});

describe('seglift inspect: usage', () => {
  it('exits 2 on a missing file argument or unknown option', async () => {
    const r = await run(['inspect']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("Run 'seglift inspect --help' for usage.");
    const r2 = await run(['inspect', 'x.log', '--bogus']);
    expect(r2.code).toBe(2);
    const r3 = await run(['inspect', 'x.log', '--max-bytes', 'lots']);
    expect(r3.code).toBe(2);
  });

  it('exits 2 for a missing file (as every command), and dumps nothing before it', async () => {
    const r = await run(['inspect', '/nonexistent/00000000000000000000.log']);
    expect(r).toEqual({
      code: 2,
      stdout: '',
      stderr:
        "error: /nonexistent/00000000000000000000.log: no such file or directory\nRun 'seglift inspect --help' for usage.\n",
    });
    const misnamed = path.join(tmpDir(), 'orders.log');
    writeFileSync(misnamed, '');
    const name = await run(['inspect', misnamed]);
    expect(name.code).toBe(1);
    expect(name.stderr).toMatch(/^error\[INVALID_ARGUMENT\]: not a segment file name/);
    expect(name.stdout).toBe('');
  });

  it('a partition dir: every segment .log in it, oldest first; a dir without segments: exit 2', async () => {
    const dir = path.join(tmpDir(), 'orders-0');
    const first = writeSegment(dir, 0n, [v2Batch(0n, 2)]);
    const second = writeSegment(dir, 2n, [v2Batch(2n, 1)]);
    writeFileSync(path.join(dir, 'leader-epoch-checkpoint'), '0\n0\n');
    const r = await run(['inspect', dir]);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    const out = lines(r.stdout);
    expect(out.filter((l) => l.startsWith('Dumping '))).toEqual([`Dumping ${first}`, `Dumping ${second}`]);
    expect(out.filter((l) => l.startsWith('baseOffset: ')).map((l) => l.split(' ')[1])).toEqual(['0', '2']);
    const logDir = path.dirname(dir);
    expect(await run(['inspect', logDir])).toEqual({
      code: 2,
      stdout: '',
      stderr: `error: ${logDir} is a directory without segments: give a partition dir (<topic>-<partition>) or segment files\nRun 'seglift inspect --help' for usage.\n`,
    });
  });
});

describe('seglift inspect: real segments', () => {
  needs(realFixtures).it('runs clean on every real segment (../shared/fixtures/real)', async () => {
    for (const log of realSegmentLogs()) {
      const r = await run(['inspect', log, '--deep-iteration']);
      expect(r.code, `${log}: ${r.stderr}`).toBe(0);
      expect(r.stderr.replace(/^(Non-consecutive offsets in .*| {2}\d+ is followed by \d+)\n/gm, '')).toBe(
        '',
      );
      const batchLines = lines(r.stdout).filter((l) => l.startsWith('baseOffset: '));
      expect(batchLines.length).toBeGreaterThan(0);
      expect(batchLines.every((l) => l.endsWith('isvalid: true'))).toBe(true);
      expect(readFileSync(log).length).toBeGreaterThan(0);
    }
  });
});

describe('seglift inspect: odd batches', () => {
  it('an unknown codec id prints the batch as unknown(N) and fails with error[UNKNOWN_CODEC]', async () => {
    const dir = tmpDir();
    const b = Buffer.from(v2Batch(0n, 1));
    b.writeInt16BE(b.readInt16BE(21) | 5, 21);
    const { computeRecordBatchCrc } = await import('@seglift/format');
    b.writeUInt32BE(computeRecordBatchCrc(b), 17);
    const file = writeSegment(dir, 0n, [b]);
    const r = await run(['inspect', file]);
    expect(r.code).toBe(1);
    expect(lines(r.stdout)[2]).toMatch(/ compresscodec: unknown\(5\) crc: \d+ isvalid: true$/);
    expect(r.stderr).toMatch(
      /^error\[UNKNOWN_CODEC\]: unknown compression type id 5 \(file .*, position 0, offset 0\)\n$/,
    );
  });

  it('inner records of a LogAppendTime wrapper take the wrapper timestamp', async () => {
    const dir = tmpDir();
    const wrapper = encodeCompressedWrapper({
      magic: 1,
      codec: CompressionType.SNAPPY,
      timestampType: 'LogAppendTime',
      wrapperTimestamp: 1_555_000_000_000n,
      messages: [
        { offset: 7n, timestamp: 1n, key: null, value: utf8('a') },
        { offset: 9n, timestamp: 2n, key: null, value: utf8('b') },
      ],
    });
    const file = writeSegment(dir, 7n, [wrapper]);
    const r = await run(['inspect', file, '--deep-iteration']);
    expect(r.code).toBe(0);
    const out = lines(r.stdout);
    expect(out[2]).toMatch(
      /^offset: 9 position: 0 LogAppendTime: 1555000000000 size: \d+ magic: 1 compresscodec: snappy /,
    );
    expect(out[3]).toMatch(
      /^\| offset: 7 LogAppendTime: 1555000000000 keySize: -1 valueSize: 1 isValid: true crc: \d+}$/,
    );
    expect(out[4]).toMatch(/^\| offset: 9 LogAppendTime: 1555000000000 /);
    expect(r.stderr).toBe(`Non-consecutive offsets in ${path.resolve(file)}\n  7 is followed by 9\n`);
  });
});

describe('seglift inspect: .snapshot (producer state, as DumpLogSegments prints it)', () => {
  const entries = [
    {
      producerId: 1000n,
      producerEpoch: 3,
      lastSequence: 41,
      lastOffset: 9n,
      offsetDelta: 4,
      timestamp: 1_700_000_000_123n,
      coordinatorEpoch: -1,
      currentTxnFirstOffset: -1n,
    },
    {
      producerId: 7n,
      producerEpoch: 0,
      lastSequence: -1,
      lastOffset: -1n,
      offsetDelta: 0,
      timestamp: 1_700_000_000_999n,
      coordinatorEpoch: 5,
      currentTxnFirstOffset: 8n,
    },
  ];

  it('an entry a line; --json adds the version and the stored CRC', async () => {
    const dir = tmpDir();
    const file = path.join(dir, '00000000000000000010.snapshot');
    const bytes = encodeProducerSnapshot(entries);
    writeFileSync(file, bytes);
    const r = await run(['inspect', file]);
    expect([r.code, r.stderr]).toEqual([0, '']);
    expect(lines(r.stdout)).toEqual([
      `Dumping ${file}`,
      'producerId: 1000 producerEpoch: 3 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty lastTimestamp: 1700000000123 firstSequence: 37 lastSequence: 41 lastOffset: 9 offsetDelta: 4 timestamp: 1700000000123',
      'producerId: 7 producerEpoch: 0 coordinatorEpoch: 5 currentTxnFirstOffset: OptionalLong[8] lastTimestamp: 1700000000999',
    ]);
    const j = await run(['inspect', file, '--json']);
    expect(j.code).toBe(0);
    const objs = lines(j.stdout).map((l) => JSON.parse(l));
    expect(objs[0]).toEqual({
      type: 'producerSnapshot',
      file,
      version: 1,
      crc: Buffer.from(bytes).readUInt32BE(2),
      entries: 2,
    });
    expect(objs[2]).toEqual({
      type: 'producerSnapshotEntry',
      file,
      producerId: '7',
      producerEpoch: 0,
      coordinatorEpoch: 5,
      currentTxnFirstOffset: '8',
      lastTimestamp: '1700000000999',
      firstSequence: null,
      lastSequence: null,
      lastOffset: null,
      offsetDelta: null,
    });
  });

  it('a corrupt snapshot is a typed error naming the file (exit 1)', async () => {
    const dir = tmpDir();
    const file = path.join(dir, '00000000000000000010.snapshot');
    const bytes = encodeProducerSnapshot(entries);
    bytes[20] = (bytes[20] as number) ^ 1;
    writeFileSync(file, bytes);
    const r = await run(['inspect', file]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      new RegExp(
        `^error\\[CRC_MISMATCH\\]: CRC-32C mismatch: stored 0x[0-9a-f]{8}, computed 0x[0-9a-f]{8} \\(file ${file.replace(/[.]/g, '\\.')}, position 2\\)\n$`,
      ),
    );
  });

  it('a sparse 1.5 GB file that is no snapshot is refused by its header, never read whole (issue 32)', async () => {
    const dir = tmpDir();
    const file = path.join(dir, '00000000000000000010.snapshot');
    writeFileSync(file, '');
    truncateSync(file, 1536 * 1024 * 1024);
    const before = process.memoryUsage().rss;
    const r = await run(['inspect', file]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      `error[UNSUPPORTED_FORMAT]: producer snapshot version 0 (Kafka knows only 1) (file ${file}, position 0)\n`,
    );
    expect(process.memoryUsage().rss - before).toBeLessThan(256 * 1024 * 1024);
    // A header that holds, with a size that does not: refused the same way, by the size alone.
    const head = Buffer.from(encodeProducerSnapshot(entries)).subarray(0, 10);
    writeFileSync(file, head);
    truncateSync(file, 1536 * 1024 * 1024);
    const long = await run(['inspect', file]);
    expect(long.stderr).toMatch(/^error\[CORRUPT_RECORD\]: \d+ bytes after the last producer snapshot entry/);
  });
});
