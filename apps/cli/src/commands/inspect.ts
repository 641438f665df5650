import { open, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import {
  checkProducerSnapshotHeader,
  decodeProducerSnapshot,
  PRODUCER_SNAPSHOT_HEADER_BYTES,
  SegliftError,
  UnknownCodecError,
} from '@seglift/format';
import { listSegments, statRegularFile } from '@seglift/segment';
import { flag, intOpt, parse, requirePositionals } from '../args.js';
import type { Command, CommandContext } from '../command.js';
import { decodeEntry } from '../decode.js';
import {
  batchJson,
  formatBatchLine,
  formatProducerSnapshotEntry,
  formatRecordLine,
  producerSnapshotEntryJson,
  recordJson,
} from '../dump-format.js';
import { EXIT_CODES_HELP, ExitCode, formatError, isFsError, UsageError } from '../exit-codes.js';
import { decodeOffsetIndexEntries, decodeTimeIndexEntries } from '../index-files.js';
import { toJsonLine } from '../io.js';
import { LogFileReader } from '../log-reader.js';
import { requireExistingPaths } from '../targets.js';

export interface InspectOptions {
  deepIteration?: boolean;
  printDataLog?: boolean;
  /** Check .index/.timeindex entries against their .log (kafka-dump-log always does for .index). */
  verifyIndex?: boolean;
  /** Read at most this many bytes of each .log. */
  maxBytes?: number;
  json?: boolean;
}

const HELP = `Usage: seglift inspect <file|partition dir>... [options]

Dump Kafka segment files the way kafka-dump-log.sh (DumpLogSegments) does: .log files batch by
batch (record by record with --deep-iteration), .index and .timeindex entries, and the producer
state snapshots (.snapshot) a broker or 'seglift tier-prepare' writes, entry by entry. The output lines
use the same field names and formats, so scripts written for kafka-dump-log keep working.
A partition directory (<topic>-<partition>) stands for every segment .log in it, oldest first;
name its .index/.timeindex files to dump those. A directory holding no segment (a log dir: name
its partitions) is refused, exit 2.

Options:
  --deep-iteration   print every record ('| offset: ...' lines); legacy wrappers show
                     the wrapper offset on the batch line and the inner offsets below it
  --print-data-log   print keys and payloads decoded as Kafka's StringDecoder does (UTF-8,
                     one U+FFFD per malformed sequence as Java counts them; implies
                     --deep-iteration)
  --verify-index     check every .index/.timeindex entry against the .log next to it;
                     mismatches go to stderr and make the exit code 1
  --max-bytes N      read at most N bytes of each .log (no trailing-bytes report then)
  --json             one NDJSON object per batch, record or index entry (offsets as strings)
  -h, --help         this text

Invalid batches (isvalid: false), records that cannot be decoded, and invalid bytes at the
end of a .log are reported and make the exit code 1; the dump goes on where it can.

${EXIT_CODES_HELP}
`;

export const inspectCommand: Command = {
  name: 'inspect',
  help: HELP,
  async run(argv, ctx) {
    const p = parse('inspect', argv, {
      'deep-iteration': { type: 'boolean' },
      'print-data-log': { type: 'boolean' },
      'verify-index': { type: 'boolean' },
      'max-bytes': { type: 'string' },
      json: { type: 'boolean' },
    });
    const args = requirePositionals('inspect', p, '<file>... (a .log, .index or .timeindex file)');
    const files = await expandPartitionDirs(args);
    return inspect(files, ctx, {
      deepIteration: flag(p, 'deep-iteration'),
      printDataLog: flag(p, 'print-data-log'),
      verifyIndex: flag(p, 'verify-index'),
      maxBytes: intOpt('inspect', p, 'max-bytes', { min: 0, max: 0x7fffffff, sizes: true }),
      json: flag(p, 'json'),
    });
  },
};

/**
 * The files behind inspect's arguments: a file as it is, a partition directory as each of its
 * segment .logs by base offset (kafka-dump-log takes several files the same way). Every path must
 * exist (exit 2 otherwise, as for every command) and a directory must hold segments.
 */
export async function expandPartitionDirs(args: readonly string[]): Promise<string[]> {
  await requireExistingPaths(args, 'inspect');
  const files: string[] = [];
  for (const arg of args) {
    if (!(await stat(arg)).isDirectory()) {
      files.push(arg);
      continue;
    }
    const segments = await listSegments(arg);
    if (segments.length === 0)
      throw new UsageError(
        `${arg} is a directory without segments: give a partition dir (<topic>-<partition>) or segment files`,
        'inspect',
      );
    files.push(...segments.map((s) => s.path));
  }
  return files;
}

interface FileProblems {
  /** Non-consecutive offsets (first, next), reported on stderr like kafka-dump-log does. */
  gaps: [bigint, bigint][];
}

/** Dumps each file; returns 0, or 1 when something in them was invalid. */
export async function inspect(
  files: string[],
  ctx: CommandContext,
  options: InspectOptions = {},
): Promise<number> {
  let failed = false;
  for (const file of files) {
    try {
      const ok = await inspectFile(file, ctx, options);
      if (!ok) failed = true;
    } catch (err) {
      if (!(err instanceof SegliftError) && !isFsError(err)) throw err;
      await ctx.out.flush();
      ctx.err.line(formatError(err));
      await ctx.err.flush();
      failed = true;
    }
  }
  return failed ? ExitCode.SEGMENT_FAILED : ExitCode.OK;
}

async function inspectFile(file: string, ctx: CommandContext, options: InspectOptions): Promise<boolean> {
  const name = path.basename(file);
  const suffix = name.includes('.') ? name.slice(name.lastIndexOf('.')) : '';
  if (['.log', '.index', '.timeindex', '.snapshot'].includes(suffix)) {
    // A file that cannot be dumped is said so alone, not after a 'Dumping' line; a FIFO or a
    // device is refused before it is opened (never a hang, never an empty dump).
    baseOffsetOfFile(file);
    await statRegularFile(file);
  }
  if (!options.json) ctx.out.line(`Dumping ${file}`);
  switch (suffix) {
    case '.log':
      return dumpLog(file, ctx, options);
    case '.index':
      return dumpIndex(file, ctx, options);
    case '.timeindex':
      return dumpTimeIndex(file, ctx, options);
    case '.snapshot':
      return dumpProducerSnapshot(file, ctx, options);
    default:
      await ctx.out.flush();
      ctx.err.line(`Ignoring unknown file ${file}`);
      return true;
  }
}

/** Segment base offset from the 20-digit file name (docs/kafka-format.md §6.1). */
export function baseOffsetOfFile(file: string): bigint {
  const stem = path.basename(file).split('.')[0];
  if (!/^\d+$/.test(stem)) {
    throw new SegliftError(
      'INVALID_ARGUMENT',
      `not a segment file name (expected <20-digit base offset>.<suffix>)`,
      {
        file,
      },
    );
  }
  return BigInt(stem);
}

async function dumpLog(file: string, ctx: CommandContext, options: InspectOptions): Promise<boolean> {
  const { out, err } = ctx;
  const json = options.json === true;
  const printDataLog = options.printDataLog === true;
  const deep = options.deepIteration === true || printDataLog;
  if (!json) out.line(`Log starting offset: ${baseOffsetOfFile(file)}`);
  const reader = new LogFileReader(file, { maxBytes: options.maxBytes });
  const problems: FileProblems = { gaps: [] };
  let ok = true;
  let lastOffset: bigint | null = null;
  for await (const entry of reader.entries()) {
    if (out.closed) break;
    const decoded = decodeEntry(entry, file);
    const batch = decoded.batch;
    if (!batch.isValid) ok = false;
    const w = json ? out.line(toJsonLine(batchJson(file, batch))) : out.line(formatBatchLine(batch));
    if (w) await w;
    if (decoded.unknownCodec !== null && !deep) {
      await out.flush();
      err.line(
        formatError(
          new UnknownCodecError(decoded.unknownCodec, {
            file,
            position: entry.position,
            offset: batch.lastOffset,
          }),
        ),
      );
      ok = false;
    }
    if (!deep) continue;
    try {
      for (const r of decoded.records()) {
        if (lastOffset !== null && r.offset !== lastOffset + 1n) problems.gaps.push([lastOffset, r.offset]);
        lastOffset = r.offset;
        const line = json
          ? toJsonLine(recordJson(file, batch, r, printDataLog))
          : formatRecordLine(batch, r, { printDataLog });
        const w2 = out.line(line);
        if (w2) await w2;
      }
    } catch (e) {
      if (!(e instanceof SegliftError)) throw e;
      e.withContext({ file, basePosition: entry.position, offset: batch.lastOffset });
      await out.flush();
      err.line(formatError(e));
      await err.flush();
      ok = false;
    }
  }
  // Output closed early (EPIPE from `| head`): nothing more to report.
  if (out.closed) return ok;
  const trailing = reader.end - reader.validEnd;
  if (trailing > 0 && options.maxBytes === undefined) {
    ok = false;
    if (json)
      out.line(toJsonLine({ type: 'invalidBytes', file, position: reader.validEnd, bytes: trailing }));
    else out.line(`Found ${trailing} invalid bytes at the end of ${path.basename(file)}`);
  }
  if (problems.gaps.length > 0) {
    await out.flush();
    err.line(`Non-consecutive offsets in ${path.resolve(file)}`);
    for (const [a, b] of problems.gaps) err.line(`  ${a} is followed by ${b}`);
  }
  return ok;
}

/**
 * A producer state snapshot as DumpLogSegments.dumpProducerIdSnapshot prints it (a line per
 * entry); --json adds the file's version and stored CRC-32C. A corrupt snapshot is a typed error
 * (exit 1), where Kafka prints its message and exits 0.
 */
async function dumpProducerSnapshot(
  file: string,
  ctx: CommandContext,
  options: InspectOptions,
): Promise<boolean> {
  let entries: ReturnType<typeof decodeProducerSnapshot>;
  let bytes: Buffer;
  try {
    // Its header first: a file that is no snapshot (a sparse 1.5 GB one) is refused by its first
    // 10 bytes and its size, never read whole.
    const fh = await open(file, 'r');
    try {
      const { size } = await fh.stat();
      const head = Buffer.alloc(PRODUCER_SNAPSHOT_HEADER_BYTES);
      await fh.read(head, 0, head.length, 0);
      checkProducerSnapshotHeader(head, size);
      const whole = Buffer.alloc(size);
      bytes = whole.subarray(0, (await fh.read(whole, 0, size, 0)).bytesRead);
    } finally {
      await fh.close();
    }
    entries = decodeProducerSnapshot(bytes);
  } catch (e) {
    if (e instanceof SegliftError) e.withContext({ file });
    throw e;
  }
  if (options.json) {
    // Both checked by the decode: the version it knows, the CRC it recomputed.
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const head = { version: view.getInt16(0), crc: view.getUint32(2), entries: entries.length };
    ctx.out.line(toJsonLine({ type: 'producerSnapshot', file, ...head }));
  }
  for (const e of entries) {
    const w = ctx.out.line(
      options.json ? toJsonLine(producerSnapshotEntryJson(file, e)) : formatProducerSnapshotEntry(e),
    );
    if (w) await w;
  }
  return true;
}

function siblingLog(file: string): string {
  return path.join(path.dirname(file), `${path.basename(file).split('.')[0]}.log`);
}

/** First shallow entry at `position` of the log: its last offset, or null when there is none. */
async function firstBatchAt(
  logFile: string,
  position: number,
): Promise<ReturnType<typeof decodeEntry> | null> {
  const reader = new LogFileReader(logFile, { startPosition: position });
  for await (const entry of reader.entries()) return decodeEntry(entry, logFile);
  return null;
}

async function dumpIndex(file: string, ctx: CommandContext, options: InspectOptions): Promise<boolean> {
  const { out, err } = ctx;
  const baseOffset = baseOffsetOfFile(file);
  const entries = decodeOffsetIndexEntries(await readFile(file), baseOffset);
  if (entries.length === 0) {
    if (options.json) out.line(toJsonLine({ type: 'indexEmpty', file }));
    else out.line(`${file} is empty.`);
    return true;
  }
  const logFile = siblingLog(file);
  const mismatches: [bigint, bigint][] = [];
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i];
    // A preallocated (crashed or active) index is zero-padded: stop at the first zero entry.
    if (e.offset === baseOffset && i > 0) break;
    if (options.verifyIndex) {
      const batch = await firstBatchAt(logFile, e.position);
      const logOffset = batch ? batch.batch.lastOffset : -1n;
      if (logOffset !== e.offset) mismatches.push([e.offset, logOffset]);
    }
    const line = options.json
      ? toJsonLine({ type: 'offsetIndexEntry', file, offset: e.offset.toString(), position: e.position })
      : `offset: ${e.offset} position: ${e.position}`;
    const w = out.line(line);
    if (w) await w;
  }
  if (mismatches.length > 0) {
    await out.flush();
    err.line(`Mismatches in :${path.resolve(file)}`);
    for (const [i, l] of mismatches) err.line(`  Index offset: ${i}, log offset: ${l}`);
  }
  return mismatches.length === 0;
}

async function dumpTimeIndex(file: string, ctx: CommandContext, options: InspectOptions): Promise<boolean> {
  const { out, err } = ctx;
  const baseOffset = baseOffsetOfFile(file);
  const entries = decodeTimeIndexEntries(await readFile(file), baseOffset);
  const logFile = siblingLog(file);
  const mismatches: [bigint, bigint][] = [];
  const outOfOrder: [bigint, bigint][] = [];
  const notFound: [bigint, bigint][] = [];
  let offsetIndex: { offset: bigint; position: number }[] | null = null;
  let prevTimestamp = -1n;
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i];
    if (e.offset === baseOffset && i > 0) break;
    if (options.verifyIndex) {
      if (offsetIndex === null) offsetIndex = await loadOffsetIndexIfPresent(file, baseOffset);
      // OffsetIndex.lookup: the largest entry <= the target, else the start of the segment.
      let position = 0;
      for (const oe of offsetIndex) if (oe.offset <= e.offset) position = oe.position;
      const found = await findBatchByLastOffset(logFile, position, e.offset);
      if (found === null) notFound.push([e.offset, -1n]);
      else if (found.batch.lastOffset !== e.offset) notFound.push([e.offset, found.batch.lastOffset]);
      else {
        let maxTimestamp = -1n;
        for (const r of found.records()) if (r.timestamp > maxTimestamp) maxTimestamp = r.timestamp;
        if (maxTimestamp !== e.timestamp) mismatches.push([e.timestamp, maxTimestamp]);
        if (prevTimestamp >= e.timestamp) outOfOrder.push([e.timestamp, prevTimestamp]);
      }
    }
    const line = options.json
      ? toJsonLine({
          type: 'timeIndexEntry',
          file,
          timestamp: e.timestamp.toString(),
          offset: e.offset.toString(),
        })
      : `timestamp: ${e.timestamp} offset: ${e.offset}`;
    const w = out.line(line);
    if (w) await w;
    prevTimestamp = e.timestamp;
  }
  const abs = path.resolve(file);
  if (mismatches.length + outOfOrder.length + notFound.length > 0) await out.flush();
  if (mismatches.length > 0) {
    err.line(`Found timestamp mismatch in :${abs}`);
    for (const [a, b] of mismatches) err.line(`  Index timestamp: ${a}, log timestamp: ${b}`);
  }
  if (outOfOrder.length > 0) {
    err.line(`Found out of order timestamp in :${abs}`);
    for (const [a, b] of outOfOrder) err.line(`  Index timestamp: ${a}, Previously indexed timestamp: ${b}`);
  }
  if (notFound.length > 0) {
    err.line('The following indexed offsets are not found in the log.');
    for (const [a, b] of notFound) err.line(`Indexed offset: ${a}, found log offset: ${b}`);
  }
  return mismatches.length + outOfOrder.length + notFound.length === 0;
}

async function loadOffsetIndexIfPresent(timeIndexFile: string, baseOffset: bigint) {
  const indexFile = path.join(
    path.dirname(timeIndexFile),
    `${path.basename(timeIndexFile).split('.')[0]}.index`,
  );
  // Absent: no offsets to check against; a FIFO or device is refused, never read.
  const st = await statRegularFile(indexFile).catch((e: unknown) => {
    if (e instanceof SegliftError) throw e;
    return undefined;
  });
  if (st === undefined) return [];
  const entries = decodeOffsetIndexEntries(await readFile(indexFile), baseOffset);
  const live: typeof entries = [];
  for (let i = 0; i < entries.length; i++) {
    if (entries[i].offset === baseOffset && i > 0) break;
    live.push(entries[i]);
  }
  return live;
}

async function findBatchByLastOffset(logFile: string, position: number, offset: bigint) {
  const reader = new LogFileReader(logFile, { startPosition: position });
  for await (const entry of reader.entries()) {
    const d = decodeEntry(entry, logFile);
    if (d.batch.lastOffset >= offset) return d;
  }
  return null;
}
