/**
 * Reference decompression for test expectations: each Kafka codec payload is decompressed by an
 * implementation other than @seglift/format's: Debian's `gzip`, `zstd` and `lz4` command-line
 * tools (the reference implementations) and python3-snappy, with Kafka's own framing (xerial
 * snappy blocks, the pre-0.10 LZ4 header checksum) handled here by hand. Test helpers register
 * it into kafkajs's codec table, so that a kafkajs decode of our output checks our compression
 * too, and the expectations they build from legacy input do not rest on our decompression.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { afterEach } from 'vitest';
import { lz4Cli, pythonSnappy, pythonSnappyPath, zstdCli } from './requirements.js';
import { IN_CI, MissingRequirementError, type Requirement } from './requires.js';

/** Kafka's codec ids (attributes & 7). */
export const GZIP = 1;
export const SNAPPY = 2;
export const LZ4 = 3;
export const ZSTD = 4;

const REQUIRED: Record<number, Requirement | undefined> = {
  [SNAPPY]: pythonSnappy,
  [LZ4]: lz4Cli,
  [ZSTD]: zstdCli,
};

/** The requirement of the reference implementation of `codec` (none for gzip: Debian base). */
export function referenceCodecRequirement(codec: number): Requirement | undefined {
  return REQUIRED[codec];
}

const warned = new Set<number>();
/**
 * Whether the reference implementation of `codec` can run. Under CI a missing one throws (the
 * test fails naming it); otherwise this prints once that the second check is skipped.
 */
export function referenceAvailable(codec: number): boolean {
  const req = REQUIRED[codec];
  if (req === undefined || req.present) return true;
  if (IN_CI) throw new MissingRequirementError([req]);
  if (!warned.has(codec) && !process.env.SEGLIFT_SKIP_SUMMARY) {
    warned.add(codec);
    console.warn(`codec cross-check skipped: ${req.name} is missing (${req.missing})`);
  }
  return false;
}

/** Runs `cmd args` with `input` on stdin; its stdout, or a rejection with its stderr. */
function run(cmd: string, args: string[], input: Uint8Array): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d: Buffer) => err.push(d));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolve(Buffer.concat(out));
      else
        reject(new Error(`${cmd} ${args.join(' ')} exited ${code}: ${Buffer.concat(err).toString().trim()}`));
    });
    child.stdin.on('error', () => {}); // the tool may exit before reading everything (corrupt input)
    child.stdin.end(input);
  });
}

// python3-snappy: one long-lived interpreter per test process (starting one costs ~30 ms), hex
// lines in, hex lines (or "ERR ...") out, in order.
const SNAPPY_SERVER = `
import sys, snappy
for line in sys.stdin:
    try:
        sys.stdout.write(snappy.uncompress(bytes.fromhex(line.strip())).hex() + "\\n")
    except Exception as e:
        sys.stdout.write("ERR " + repr(e).replace("\\n", " ") + "\\n")
    sys.stdout.flush()
`;
let snappyProc: ChildProcessWithoutNullStreams | undefined;
const snappyWaiting: Array<{ resolve: (b: Buffer) => void; reject: (e: Error) => void }> = [];
let snappyBuf = '';
function snappyBlock(block: Uint8Array): Promise<Buffer> {
  if (snappyProc === undefined || snappyProc.exitCode !== null) {
    const p = spawn(pythonSnappyPath(), ['-u', '-c', SNAPPY_SERVER], { stdio: ['pipe', 'pipe', 'pipe'] });
    snappyProc = p;
    p.stdout.setEncoding('utf8');
    p.stdout.on('data', (d: string) => {
      snappyBuf += d;
      for (let nl = snappyBuf.indexOf('\n'); nl >= 0; nl = snappyBuf.indexOf('\n')) {
        const line = snappyBuf.slice(0, nl);
        snappyBuf = snappyBuf.slice(nl + 1);
        const w = snappyWaiting.shift();
        if (line.startsWith('ERR ')) w?.reject(new Error(`python3-snappy: ${line.slice(4)}`));
        else w?.resolve(Buffer.from(line, 'hex'));
      }
    });
    p.on('exit', () => {
      for (const w of snappyWaiting.splice(0)) w.reject(new Error('python3-snappy exited'));
    });
    // Never keeps a test process alive.
    p.unref();
    for (const s of [p.stdin, p.stdout, p.stderr] as unknown as { unref?: () => void }[]) s.unref?.();
  }
  const proc = snappyProc;
  return new Promise((resolve, reject) => {
    snappyWaiting.push({ resolve, reject });
    proc.stdin.write(`${Buffer.from(block).toString('hex')}\n`);
  });
}

const XERIAL = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00]);

/** Kafka's snappy: a xerial stream (magic, version, compat, then [int32 length, block]...) or one raw block. */
async function snappyKafka(buf: Buffer): Promise<Buffer> {
  if (buf.length < 16 || !buf.subarray(0, 8).equals(XERIAL)) return snappyBlock(buf);
  const parts: Buffer[] = [];
  let p = 16;
  while (p < buf.length) {
    if (p + 4 > buf.length) throw new Error('xerial snappy: truncated block length');
    const n = buf.readInt32BE(p);
    if (n < 0 || p + 4 + n > buf.length) throw new Error('xerial snappy: block past the end');
    parts.push(await snappyBlock(buf.subarray(p + 4, p + 4 + n)));
    p += 4 + n;
  }
  return Buffer.concat(parts);
}

/** xxHash32 (the LZ4 frame header checksum), written out to fix pre-0.10 Kafka frames. */
export function xxh32(b: Uint8Array, seed = 0): number {
  const P1 = 2654435761;
  const P2 = 2246822519;
  const P3 = 3266489917;
  const P4 = 668265263;
  const P5 = 374761393;
  const rotl = (x: number, r: number) => ((x << r) | (x >>> (32 - r))) >>> 0;
  const u32 = (i: number) => (b[i] | (b[i + 1] << 8) | (b[i + 2] << 16) | (b[i + 3] << 24)) >>> 0;
  let i = 0;
  let h: number;
  if (b.length >= 16) {
    const v = [(seed + P1 + P2) >>> 0, (seed + P2) >>> 0, seed >>> 0, (seed - P1) >>> 0];
    for (; i + 16 <= b.length; i += 16)
      for (let k = 0; k < 4; k++)
        v[k] = Math.imul(rotl((v[k] + Math.imul(u32(i + 4 * k), P2)) >>> 0, 13), P1);
    h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) >>> 0;
  } else h = (seed + P5) >>> 0;
  h = (h + b.length) >>> 0;
  for (; i + 4 <= b.length; i += 4) h = Math.imul(rotl((h + Math.imul(u32(i), P3)) >>> 0, 17), P4);
  for (; i < b.length; i++) h = Math.imul(rotl((h + Math.imul(b[i], P5)) >>> 0, 11), P1);
  h = Math.imul(h ^ (h >>> 15), P2);
  h = Math.imul(h ^ (h >>> 13), P3);
  return (h ^ (h >>> 16)) >>> 0;
}

/**
 * Kafka before 0.10 (magic 0) wrote the LZ4 frame header checksum over the magic number too; the
 * lz4 tool rightly refuses that, so such a frame gets the correct checksum here. Any other wrong
 * checksum is left for the tool to refuse.
 */
function fixOldKafkaLz4Header(buf: Buffer): Buffer {
  if (buf.length < 7 || buf.readUInt32LE(0) !== 0x184d2204) return buf;
  const descEnd = 6 + ((buf[4] & 0x08) !== 0 ? 8 : 0);
  if (buf.length <= descEnd) return buf;
  const right = (xxh32(buf.subarray(4, descEnd)) >>> 8) & 0xff;
  const old = (xxh32(buf.subarray(0, descEnd)) >>> 8) & 0xff;
  if (buf[descEnd] === right || buf[descEnd] !== old) return buf;
  const fixed = Buffer.from(buf);
  fixed[descEnd] = right;
  return fixed;
}

const cache = new Map<string, Promise<Buffer>>();

/**
 * `payload` (the compressed records of a v2 batch or the value of a legacy wrapper, codec 1-4)
 * decompressed by the reference implementation. Call only where `referenceAvailable(codec)`.
 */
export function referenceDecompress(codec: number, payload: Uint8Array): Promise<Buffer> {
  const buf = Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength);
  const key = `${codec}:${createHash('sha1').update(buf).digest('hex')}:${buf.length}`;
  let p = cache.get(key);
  if (p === undefined) {
    p = decompressWith(codec, Buffer.from(buf));
    cache.set(key, p);
    p.catch(() => cache.delete(key));
  }
  return p;
}

function decompressWith(codec: number, buf: Buffer): Promise<Buffer> {
  switch (codec) {
    case GZIP:
      return run('gzip', ['-dc'], buf);
    case SNAPPY:
      return snappyKafka(buf);
    case LZ4:
      return run('lz4', ['-dc'], fixOldKafkaLz4Header(buf));
    case ZSTD:
      return run('zstd', ['-dcq'], buf);
    default:
      return Promise.reject(new Error(`no reference implementation of codec ${codec}`));
  }
}

/**
 * Checks `ours` (what our implementation, or a test helper's in-process library, produced for
 * `payload`) against the reference implementation; throws on any difference.
 */
export async function checkAgainstReference(
  codec: number,
  payload: Uint8Array,
  ours: Uint8Array,
): Promise<void> {
  if (!referenceAvailable(codec)) return;
  const ref = await referenceDecompress(codec, payload);
  if (!ref.equals(Buffer.from(ours.buffer, ours.byteOffset, ours.byteLength)))
    throw new Error(
      `codec ${codec}: the reference implementation decompresses this ${payload.length}-byte payload to ${ref.length} bytes that differ from ours (${ours.length} bytes)`,
    );
}

/** kafkajs's codec table (node_modules/kafkajs/src/protocol/message/compression). */
export interface KafkajsCompression {
  Codecs: Record<number, () => unknown>;
}

interface Pending {
  codec: number;
  payload: Buffer;
  ours: Buffer;
}
const pending: Pending[] = [];

/** The command-line reference tools take concatenated frames (members) in one run. */
const CONCATENABLE: Record<number, [string, string[]] | undefined> = {
  [GZIP]: ['gzip', ['-dc']],
  [LZ4]: ['lz4', ['-dc']],
  [ZSTD]: ['zstd', ['-dcq']],
};

/**
 * Checks every decompression queued by the registered kafkajs codecs against the reference
 * implementations: one run of each tool over all of a codec's payloads (one spawn per payload
 * would cost seconds per test). Throws naming the first payload that differs.
 */
export async function flushReferenceChecks(): Promise<void> {
  const batch = pending.splice(0);
  for (const codec of [GZIP, SNAPPY, LZ4, ZSTD]) {
    const items = batch.filter((p) => p.codec === codec);
    if (items.length === 0 || !referenceAvailable(codec)) continue;
    const tool = CONCATENABLE[codec];
    if (tool !== undefined) {
      const input = Buffer.concat(
        items.map((p) => (codec === LZ4 ? fixOldKafkaLz4Header(p.payload) : p.payload)),
      );
      const out = await run(tool[0], tool[1], input).catch(() => undefined);
      if (out?.equals(Buffer.concat(items.map((p) => p.ours)))) continue;
    }
    // One by one: which payload differs (or snappy, which has no concatenated form).
    const refs = await Promise.all(
      items.map((p) => referenceDecompress(codec, p.payload).catch((e: Error) => e)),
    );
    refs.forEach((ref, i) => {
      const { payload, ours } = items[i];
      if (ref instanceof Error)
        throw new Error(
          `codec ${codec}: the reference implementation refuses a ${payload.length}-byte payload that ours decompressed: ${ref.message}`,
        );
      if (!ref.equals(ours))
        throw new Error(
          `codec ${codec}: the reference implementation decompresses a ${payload.length}-byte payload to ${ref.length} bytes that differ from ours (${ours.length} bytes)`,
        );
    });
  }
}

let hooked = false;

/**
 * Registers kafkajs's gzip, snappy, lz4 and zstd codecs: `inProcess` (a helper's library)
 * decompresses at once, and every payload is checked against the reference implementation after
 * each test (or at an explicit flushReferenceChecks). Call at the top level of a test-support
 * module: the check is an afterEach hook of the importing test file.
 */
export function registerReferenceCodecs(
  compression: KafkajsCompression,
  inProcess: (codec: number, payload: Buffer) => Buffer,
): void {
  for (const id of [GZIP, SNAPPY, LZ4, ZSTD]) {
    const codec = {
      async compress(): Promise<Buffer> {
        throw new Error('not used: these codecs only decompress');
      },
      async decompress(buffer: Buffer): Promise<Buffer> {
        const ours = Buffer.from(inProcess(id, buffer));
        pending.push({ codec: id, payload: Buffer.from(buffer), ours });
        return ours;
      },
    };
    compression.Codecs[id] = () => codec;
  }
  if (!hooked) {
    hooked = true;
    afterEach(flushReferenceChecks);
  }
}
