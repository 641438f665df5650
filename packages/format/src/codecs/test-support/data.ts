import { prng as mulberry32 } from '@seglift/testkit';

export { mulberry32 };
/** Semi-compressible bytes: JSON-ish records with random numbers from a small vocabulary. */
export function semiCompressible(size: number, seed = 1): Buffer {
  const rnd = mulberry32(seed);
  const words = ['order', 'user', 'price', 'created', 'status', 'shipped', 'pending', 'sku', 'qty', 'eur'];
  const out = Buffer.allocUnsafe(size);
  let pos = 0;
  while (pos < size) {
    const w = words[Math.floor(rnd() * words.length)];
    const s = `{"${w}":${Math.floor(rnd() * 100000)},"id":"${Math.floor(rnd() * 1e9).toString(36)}"}`;
    pos += out.write(s, pos, 'latin1');
  }
  return out;
}

export function randomBytes(size: number, seed = 7): Buffer {
  const rnd = mulberry32(seed);
  const out = Buffer.allocUnsafe(size);
  for (let i = 0; i < size; i++) out[i] = Math.floor(rnd() * 256);
  return out;
}

/** The payloads of __fixtures__/make-vectors.py, by name. */
export function pythonPayload(name: string): Buffer {
  const small = Buffer.from('hello kafka, hello seglift! '.repeat(4), 'latin1');
  switch (name) {
    case 'empty':
      return Buffer.alloc(0);
    case 'small':
      return small;
    case 'small*2':
      return Buffer.concat([small, small]);
    case 'big': {
      const parts: string[] = [];
      for (let i = 0; i < 5000; i++) parts.push(`record-${String(i % 100).padStart(6, '0')};`);
      return Buffer.from(parts.join(''), 'latin1');
    }
    default:
      throw new Error(`unknown payload ${name}`);
  }
}
