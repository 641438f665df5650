/**
 * The codecs of independent.ts's kafkajs decoders: the reference implementations of
 * @seglift/testkit (Debian's gzip, lz4 and zstd tools, python3-snappy), so that an independent
 * decode of our output also checks our compression. Where a reference tool is missing outside CI,
 * the raw libraries (and a hand-written LZ4 block decoder) decompress instead. Nothing here uses
 * @seglift/format or @seglift/legacy.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { type KafkajsCompression, registerReferenceCodecs } from './index.js';

const here = path.dirname(fileURLToPath(import.meta.url));
// packages/testkit/{src,dist}/ -> the checkout.
const repoRoot = path.resolve(here, '../../..');
const rootRequire = createRequire(path.join(repoRoot, 'package.json'));
const formatRequire = createRequire(path.join(repoRoot, 'packages/format/package.json'));
const zstd = formatRequire('zstd-napi');
const snappy = formatRequire('snappy');

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

const compression = rootRequire('kafkajs/src/protocol/message/compression') as KafkajsCompression & {
  Types: { GZIP: number; Snappy: number; LZ4: number; ZSTD: number };
};
const inProcess: Record<number, (b: Buffer) => Buffer> = {
  [compression.Types.GZIP]: (b) => gunzipSync(b),
  [compression.Types.Snappy]: xerialUnframe,
  [compression.Types.LZ4]: lz4Frame,
  [compression.Types.ZSTD]: (b) => zstd.decompress(b) as Buffer,
};
registerReferenceCodecs(compression, (id, b) => inProcess[id](b));
