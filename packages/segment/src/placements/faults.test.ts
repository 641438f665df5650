/**
 * Disk full, permission, read-only and I/O errors, and decompression bombs (issue 6).
 * - ENOSPC for real: a 2 MiB tmpfs mounted by the test (root only; skipped with a message
 *   otherwise), as outDir, as the segment's own directory (in place) and as the backup dir.
 * - EACCES for real: the CLI run as user `nobody` (root ignores chmod) on read-only directories.
 * - EROFS for real: `mount -o remount,ro` of the tmpfs, before a run and in the middle of one.
 * - EIO cannot be produced here (no faulty device): it is injected by wrapping node:fs/promises
 *   (`open` -> FileHandle read/write/sync, and `rename`) so the Nth matching call fails with an
 *   `EIO` errno error, at each stage: source read, temp write, fsync, verify read, swap rename.
 * - Bombs and absurd sizes in every codec through convertSegment: DECOMPRESSION_LIMIT (or a
 *   typed corrupt/decompression error for lying headers) within maxDecompressedBatchBytes.
 * Each case: a clear typed error, the original byte-identical, no partial output or temp file.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { chmod, chown, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  compress,
  crc32c,
  DecompressionLimitError,
  encodeRecordBatchFromPayload,
  type RecordBatchFields,
  SegliftError,
} from '@seglift/format';
import { encodeCompressedWrapper, encodeLegacyEntry } from '@seglift/legacy';
import { needs, requirement } from '@seglift/testkit';
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { verifySegment } from '../rewrite/verify.js';
import { recoverLeftovers } from '../safety/leftovers.js';
import { mixedSegment, tmpDir, v2Fields, writeSegment } from '../test-support/fixtures.js';
import { sha256 } from '../test-support/helpers.js';
import { repoRoot } from '../test-support/independent.js';
import { convertSegment } from './convert.js';

// ---- EIO injection: a wrapper around node:fs/promises, off unless a test arms it. -------------
type Op = 'read' | 'write' | 'sync' | 'rename';
const fault = vi.hoisted(() => ({
  armed: undefined as undefined | { op: string; match: (file: string) => boolean; after: number },
  hits: 0,
}));
vi.mock('node:fs/promises', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:fs/promises')>();
  const eio = (syscall: string, file: string) =>
    Object.assign(new Error(`EIO: i/o error, ${syscall} '${file}'`), {
      code: 'EIO',
      errno: -5,
      syscall,
      path: file,
    });
  const trip = (op: string, file: string) => {
    const a = fault.armed;
    if (!a || a.op !== op || !a.match(file)) return false;
    if (a.after-- > 0) return false;
    fault.armed = undefined;
    fault.hits++;
    return true;
  };
  const open = async (...args: Parameters<typeof real.open>) => {
    const fh = await real.open(...args);
    const file = String(args[0]);
    return new Proxy(fh, {
      get(target, key) {
        const v = Reflect.get(target, key, target);
        if (typeof v !== 'function') return v;
        if (key === 'read' || key === 'write' || key === 'sync' || key === 'writeFile') {
          const op = key === 'writeFile' ? 'write' : key;
          return (...a: unknown[]) => {
            if (trip(op, file)) return Promise.reject(eio(op, file));
            return (v as (...x: unknown[]) => unknown).apply(target, a);
          };
        }
        return v.bind(target);
      },
    });
  };
  const rename = async (from: string, to: string) => {
    if (trip('rename', String(to))) throw eio('rename', String(to));
    return real.rename(from, to);
  };
  return { ...real, open, rename, default: { ...real, open, rename } };
});

const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

/** `parts` mixed segments back to back (every magic and codec): about 27 KB each. */
function segmentBytes(parts: number): Buffer {
  const out: Buffer[] = [];
  let off = 0n;
  for (let k = 0; k < parts; k++) {
    const m = mixedSegment(off, 7 + k);
    out.push(m.bytes);
    off = m.lastOffset + 1n;
  }
  return Buffer.concat(out);
}

/** The partition dir holds only the original files: no temp, swap, marker or lock file. */
async function onlyOriginals(pdir: string, expected: string[]): Promise<void> {
  expect((await readdir(pdir)).sort()).toEqual(expected.sort());
}

// ---- real ENOSPC / EROFS on a small tmpfs -----------------------------------------------------
const isRoot = process.getuid?.() === 0;
let mountPoint: string | undefined;
let mountSkip = 'not running as root';
if (isRoot) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'seglift-tmpfs-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=2m', 'tmpfs', dir], { stdio: 'pipe' });
    mountPoint = dir;
  } catch (err) {
    mountSkip = `mount -t tmpfs failed: ${String((err as Error).message).split('\n')[0]}`;
    rmSync(dir, { recursive: true, force: true });
  }
}
afterAll(() => {
  if (!mountPoint) return;
  try {
    execFileSync('umount', [mountPoint], { stdio: 'pipe' });
  } catch {
    execFileSync('umount', ['-l', mountPoint], { stdio: 'pipe' });
  }
  rmSync(mountPoint, { recursive: true, force: true });
});

async function clearMount(): Promise<void> {
  execFileSync('mount', ['-o', 'remount,rw', mountPoint!], { stdio: 'pipe' });
  for (const n of await readdir(mountPoint!))
    await rm(path.join(mountPoint!, n), { recursive: true, force: true });
}

const tmpfs = needs(
  requirement(
    'a tmpfs mounted by the test (root)',
    'ENOSPC and EROFS are produced for real on a 2 MiB tmpfs, not simulated',
    () => (mountPoint ? undefined : mountSkip),
  ),
);
tmpfs.describe('disk full (ENOSPC) on a 2 MiB tmpfs', () => {
  beforeEach(clearMount);

  it('outDir on the full filesystem: typed IO error, original untouched, partial output removed', async () => {
    const dir = await tmpDir();
    const log = await writeSegment(dir, segmentBytes(120));
    const before = await sha256(log);
    const out = path.join(mountPoint!, 'out');
    const r = await convertSegment(log, { codec: 'none' }, { kind: 'outDir', dir: out });
    expect(r.result).toBe('failed');
    expect(r.error?.code).toBe('IO');
    expect(r.reason).toContain('ENOSPC');
    expect(await sha256(log)).toBe(before);
    // The output directory this conversion created is removed with the partial output.
    expect(existsSync(out)).toBe(false);
    await rm(dir, { recursive: true, force: true });
  });

  it('in place on the full filesystem: typed IO error, original untouched, no temp file left', async () => {
    const pdir = path.join(mountPoint!, 'topic-0');
    await mkdir(pdir);
    const log = path.join(pdir, '00000000000000000000.log');
    await writeFile(log, segmentBytes(40));
    await writeFile(path.join(pdir, '00000000000000000000.index'), Buffer.alloc(0));
    const before = await sha256(log);
    const r = await convertSegment(log, { codec: 'none', force: true }, { kind: 'inPlace' });
    expect(r.result).toBe('failed');
    expect(r.error?.code).toBe('IO');
    expect(r.reason).toContain('ENOSPC');
    expect(await sha256(log)).toBe(before);
    await onlyOriginals(pdir, ['00000000000000000000.log', '00000000000000000000.index']);
    expect((await verifySegment(log)).ok).toBe(true);
  });

  it('backup dir on the full filesystem: typed IO error before any swap, no partial backup kept', async () => {
    const dir = await tmpDir();
    const log = await writeSegment(dir, segmentBytes(100));
    const pdir = path.dirname(log);
    const before = await sha256(log);
    const backupDir = path.join(mountPoint!, 'backup');
    const r = await convertSegment(log, { codec: 'zstd' }, { kind: 'inPlace', backupDir });
    expect(r.result).toBe('failed');
    expect(r.error?.code).toBe('IO');
    expect(r.reason).toContain('ENOSPC');
    expect(await sha256(log)).toBe(before);
    await onlyOriginals(pdir, ['00000000000000000000.log']);
    // A truncated copy under the original's name would pass for a backup: none is left (the
    // directory's .seglift-backup marker is no copy).
    const kept = existsSync(path.join(backupDir, 'topic-0'))
      ? await readdir(path.join(backupDir, 'topic-0'))
      : [];
    expect(kept.filter((n) => n !== '.seglift-backup')).toEqual([]);
    await rm(dir, { recursive: true, force: true });
  });
});

tmpfs.describe('read-only filesystem (EROFS, mount -o remount,ro)', () => {
  beforeEach(clearMount);
  afterEach(() => {
    execFileSync('mount', ['-o', 'remount,rw', mountPoint!], { stdio: 'pipe' });
  });

  it('in place and outDir on a read-only mount: typed IO error, nothing changed', async () => {
    const pdir = path.join(mountPoint!, 'topic-0');
    await mkdir(pdir);
    const log = path.join(pdir, '00000000000000000000.log');
    await writeFile(log, mixedSegment().bytes);
    const before = await sha256(log);
    execFileSync('mount', ['-o', 'remount,ro', mountPoint!], { stdio: 'pipe' });
    const a = await convertSegment(log, { codec: 'zstd' }, { kind: 'inPlace' });
    expect(a.result).toBe('failed');
    expect(a.error?.code).toBe('IO');
    expect(a.reason).toContain('EROFS');
    const b = await convertSegment(
      log,
      { codec: 'zstd' },
      { kind: 'outDir', dir: path.join(mountPoint!, 'out') },
    );
    expect(b.result).toBe('failed');
    expect(b.error?.code).toBe('IO');
    expect(await sha256(log)).toBe(before);
    await onlyOriginals(pdir, ['00000000000000000000.log']);
  });

  for (const mode of ['outDir', 'inPlace'] as const) {
    it(`${mode}: the filesystem turns read-only after the write, before the swap: typed error, then recovery`, async () => {
      const pdir = path.join(mountPoint!, 'topic-0');
      await mkdir(pdir);
      const log = path.join(pdir, '00000000000000000000.log');
      const bytes = mixedSegment().bytes;
      await writeFile(log, bytes);
      const out = path.join(mountPoint!, 'out');
      const r = await convertSegment(
        log,
        { codec: 'zstd' },
        mode === 'outDir' ? { kind: 'outDir', dir: out } : { kind: 'inPlace' },
        {
          beforeVerify: () => {
            execFileSync('mount', ['-o', 'remount,ro', mountPoint!], { stdio: 'pipe' });
          },
        },
      );
      expect(r.result).toBe('failed');
      expect(r.error?.code).toBe('IO');
      expect(r.reason).toMatch(/EROFS|read-only/);
      expect(sha(await readFile(log))).toBe(sha(bytes));
      // Writable again: recovery removes what could not be removed on a read-only filesystem.
      execFileSync('mount', ['-o', 'remount,rw', mountPoint!], { stdio: 'pipe' });
      // The run's own lock could not be removed on the read-only filesystem; it is stale once its
      // process exits, which this test process does not: remove it as the next run would.
      await rm(path.join(pdir, '00000000000000000000.log.seglift.lock'), { force: true });
      await recoverLeftovers(pdir);
      if (mode === 'outDir') await recoverLeftovers(out);
      await onlyOriginals(pdir, ['00000000000000000000.log']);
      if (mode === 'outDir') expect(await readdir(out)).toEqual([]);
      expect(sha(await readFile(log))).toBe(sha(bytes));
    });
  }
});

// ---- real EACCES: the CLI as user nobody --------------------------------------------------------
const cli = path.join(repoRoot, 'apps/cli/dist/main.js');
const nobodyId = (flag: string) =>
  Number(spawnSync('id', [flag, 'nobody']).stdout?.toString().trim() || 65534);
const uid = nobodyId('-u');
const gid = nobodyId('-g');
// nobody must be able to reach the built CLI: a checkout under a root-only directory (mktemp -d
// is 0700) cannot be run as nobody at all (scripts/bootstrap.sh --tests makes the checkout's parents searchable).
const nobodyRunsCli = requirement(
  'running the built CLI as user nobody (root)',
  'EACCES is produced for real by a process that is not root (root ignores permissions)',
  () => {
    if (!isRoot) return 'not running as root';
    if (!existsSync(cli)) return `${cli} is not built (run \`pnpm build\`)`;
    if (spawnSync('id', ['-u', 'nobody']).status !== 0) return 'there is no user nobody';
    const r = spawnSync(process.execPath, [cli, '--version'], {
      uid,
      gid,
      env: { ...process.env, HOME: '/tmp' },
      encoding: 'utf8',
    });
    return r.status === 0
      ? undefined
      : `nobody cannot run ${cli} (a parent directory not searchable by others?): ${r.stderr.trim().split('\n')[0]}`;
  },
);

needs(nobodyRunsCli).describe('permission denied (EACCES): seglift convert run as user nobody', () => {
  const asNobody = (args: string[]) =>
    spawnSync(process.execPath, [cli, ...args], {
      uid,
      gid,
      encoding: 'utf8',
      env: { ...process.env, HOME: '/tmp' },
    });

  it('in place in a directory nobody cannot write, and --out into one: exit 1, error[IO] EACCES, nothing changed', async () => {
    const dir = await tmpDir();
    chmodSync(dir, 0o755);
    const log = await writeSegment(dir, mixedSegment().bytes);
    const pdir = path.dirname(log);
    // Owned by nobody (the broker's user), in a directory nobody cannot write; the log dir is
    // nobody's, as a broker's is, so its .lock is taken and the partition dir is what fails.
    await chown(log, uid, gid);
    await chown(dir, uid, gid);
    await chmod(pdir, 0o555);
    const before = await sha256(log);
    const a = asNobody(['convert', '--in-place', '--codec', 'zstd', log]);
    expect(a.status).toBe(1);
    expect(a.stderr).toMatch(/error\[IO\].*(EACCES|permission denied)/i);
    const out = path.join(dir, 'out');
    await mkdir(out, { mode: 0o555 });
    await chmod(out, 0o555);
    const b = asNobody(['convert', '--out', out, '--codec', 'zstd', log]);
    expect(b.status).toBe(1);
    expect(b.stderr).toMatch(/error\[IO\].*(EACCES|permission denied)/i);
    expect(await sha256(log)).toBe(before);
    await onlyOriginals(pdir, ['00000000000000000000.log']);
    expect(await readdir(out)).toEqual([]);
    await chmod(pdir, 0o755);
    await rm(dir, { recursive: true, force: true });
  });

  it('in place on files another user owns: refused before any work, naming the user to run as', async () => {
    const dir = await tmpDir();
    chmodSync(dir, 0o755);
    const log = await writeSegment(dir, mixedSegment().bytes);
    const pdir = path.dirname(log);
    // The directory is nobody's, the segment root's: nobody could write new files but could not
    // give them root's ownership, and a broker running as root would then own files it did not write.
    await chown(pdir, uid, gid);
    const before = await sha256(log);
    // The log dir is root's too: nobody cannot even take its .lock, the first thing an in-place
    // run does, and is told whom to run as.
    const a = asNobody(['convert', '--in-place', '--codec', 'zstd', log]);
    expect(a.status).toBe(1);
    expect(a.stderr).toMatch(
      /error\[OWNERSHIP\]: cannot take the log dir's lock \(EACCES\): log dir .*, owned by root \(uid 0\); seglift runs as nobody .*: run it as root \(uid 0\) \(file .*\.lock\)/,
    );
    // A log dir nobody may write in: the lock is taken, and the segment root owns is refused.
    await chown(dir, uid, gid);
    const b = asNobody(['convert', '--in-place', '--codec', 'zstd', log]);
    expect(b.status).toBe(1);
    expect(b.stderr).toMatch(
      /error\[OWNERSHIP\]: owned by root \(uid 0\).*: run it as root \(uid 0\) \(file /,
    );
    expect(await sha256(log)).toBe(before);
    await onlyOriginals(pdir, ['00000000000000000000.log']);
    await rm(dir, { recursive: true, force: true });
  });
});

// ---- injected EIO at each stage ----------------------------------------------------------------
describe('injected EIO (wrapped node:fs/promises) at each stage', () => {
  const cases: {
    name: string;
    op: Op;
    match: (f: string) => boolean;
    after?: number;
    mode: 'inPlace' | 'outDir';
  }[] = [
    { name: 'reading the source', op: 'read', match: (f) => f.endsWith('.log'), after: 1, mode: 'inPlace' },
    {
      name: 'writing the temp log',
      op: 'write',
      match: (f) => f.endsWith('.log.seglift-tmp'),
      mode: 'inPlace',
    },
    {
      name: 'writing the temp index',
      op: 'write',
      match: (f) => f.endsWith('.index.seglift-tmp'),
      mode: 'outDir',
    },
    {
      name: 'fsync of the temp log',
      op: 'sync',
      match: (f) => f.endsWith('.log.seglift-tmp'),
      mode: 'inPlace',
    },
    {
      name: 'verify reading the temp log',
      op: 'read',
      match: (f) => f.endsWith('.log.seglift-tmp'),
      mode: 'inPlace',
    },
    {
      name: 'writing the swap marker',
      op: 'write',
      match: (f) => f.endsWith('.seglift-swap.seglift-tmp'),
      mode: 'inPlace',
    },
    { name: 'renaming to .log.swap', op: 'rename', match: (f) => f.endsWith('.log.swap'), mode: 'inPlace' },
    { name: 'renaming .log.swap to .log', op: 'rename', match: (f) => f.endsWith('0.log'), mode: 'inPlace' },
    { name: 'renaming .index.swap', op: 'rename', match: (f) => f.endsWith('.index'), mode: 'inPlace' },
    { name: 'renaming into outDir', op: 'rename', match: (f) => f.endsWith('.log'), mode: 'outDir' },
  ];
  afterEach(() => {
    fault.armed = undefined;
  });
  for (const c of cases) {
    it(`EIO while ${c.name} (${c.mode}): failed with a typed error; the segment is whole, old or new; no leftovers`, async () => {
      const seg = mixedSegment();
      const dir = await tmpDir();
      const log = await writeSegment(dir, seg.bytes);
      const pdir = path.dirname(log);
      const out = path.join(dir, 'out');
      const hits = fault.hits;
      fault.armed = { op: c.op, match: c.match, after: c.after ?? 0 };
      const r = await convertSegment(
        log,
        { codec: 'zstd' },
        c.mode === 'inPlace' ? { kind: 'inPlace' } : { kind: 'outDir', dir: out },
      );
      expect(fault.hits).toBe(hits + 1);
      expect(r.result).toBe('failed');
      expect(r.error?.code).toBe('IO');
      expect(r.reason).toContain('EIO');
      const now = await readFile(log);
      if (sha(now) !== sha(seg.bytes)) {
        // A failure after the swap's point of no return is completed, never left half done.
        expect((await verifySegment(log)).problems).toEqual([]);
      }
      const names = (await readdir(pdir)).sort();
      expect(names.filter((n) => !/^\d{20}\.(log|index|timeindex)$/.test(n))).toEqual([]);
      if (c.mode === 'outDir') expect(existsSync(out) ? await readdir(out) : []).toEqual([]);
      // And a rerun converts it.
      const again = await convertSegment(log, { codec: 'zstd' }, { kind: 'inPlace' });
      expect(again.error).toBeUndefined();
      expect((await verifySegment(log)).problems).toEqual([]);
      await rm(dir, { recursive: true, force: true });
    });
  }
});

// ---- decompression bombs and absurd sizes through convertSegment --------------------------------
describe('decompression bombs and absurd sizes, every codec, through convertSegment', () => {
  const LIMIT = 1024 * 1024;
  const bomb = Buffer.alloc(16 * 1024 * 1024); // 16 MiB of zeros: a few KB compressed
  const f = (over: Partial<RecordBatchFields> = {}) => v2Fields(0n, over);
  /** One uncompressed record with a 16 MiB value, as record bytes (length-prefixed). */
  function bigRecordPayload(): Buffer {
    const head = Buffer.from([0x00, 0x00, 0x00, 0x01]); // attributes, timestampDelta 0, offsetDelta 0, key -1
    const valueLen = Buffer.alloc(5);
    let n = (bomb.length << 1) >>> 0; // zigzag
    let i = 0;
    while (n >= 0x80) {
      valueLen[i++] = (n & 0x7f) | 0x80;
      n >>>= 7;
    }
    valueLen[i++] = n;
    const body = Buffer.concat([head, valueLen.subarray(0, i), bomb, Buffer.from([0x00])]);
    const len = Buffer.alloc(5);
    let m = (body.length << 1) >>> 0;
    let j = 0;
    while (m >= 0x80) {
      len[j++] = (m & 0x7f) | 0x80;
      m >>>= 7;
    }
    len[j++] = m;
    return Buffer.concat([len.subarray(0, j), body]);
  }
  const payload = bigRecordPayload();

  const inputs: { name: string; bytes: () => Uint8Array; codes: string[] }[] = [
    ...[1, 2, 3, 4].map((codec) => ({
      name: `v2 ${['', 'gzip', 'snappy', 'lz4', 'zstd'][codec]} batch decompressing to 16 MiB`,
      bytes: () => encodeRecordBatchFromPayload(f(), 1, payload, codec),
      codes: ['DECOMPRESSION_LIMIT'],
    })),
    ...([1, 2, 3] as const).flatMap((codec) =>
      ([0, 1] as const).map((magic) => ({
        name: `v${magic} ${['', 'gzip', 'snappy', 'lz4'][codec]} wrapper decompressing to 16 MiB`,
        bytes: () =>
          encodeCompressedWrapper({
            magic,
            codec,
            messages: [{ offset: 0n, timestamp: 1n, key: null, value: bomb }],
          }),
        codes: ['DECOMPRESSION_LIMIT'],
      })),
    ),
    {
      name: 'snappy xerial chunk declaring 2 GiB',
      bytes: () => {
        const raw = Buffer.from(compress(2, Buffer.from('x'.repeat(100)), { magic: 2 }));
        // Raw snappy preamble: uvarint uncompressed length; rewrite it to 0x7fffffff.
        const framed = Buffer.concat([
          Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00, 0, 0, 0, 1, 0, 0, 0, 1]),
          Buffer.from([0, 0, 0, 0]),
          Buffer.from([0xff, 0xff, 0xff, 0xff, 0x07]),
          raw.subarray(raw[0] & 0x80 ? 2 : 1),
        ]);
        framed.writeInt32BE(framed.length - 20, 16);
        return sealWith(framed, 2);
      },
      codes: ['DECOMPRESSION_LIMIT', 'DECOMPRESSION_FAILED'],
    },
    {
      name: 'zstd frame declaring a 1 TiB content size',
      bytes: () => {
        const z = Buffer.from(compress(4, Buffer.from('y'.repeat(1000)), { magic: 2 }));
        // Frame header: magic, FHD; set FCS to 8 bytes (FHD bits 7-6 = 3) is a different layout, so
        // keep the layout and patch the declared size field where present.
        const fhd = z[4];
        const single = (fhd & 0x20) !== 0;
        const fcsBytes = [single ? 1 : 0, 2, 4, 8][fhd >> 6];
        const at = 5 + (single ? 0 : 1) + [0, 1, 2, 4][fhd & 3];
        if (fcsBytes >= 4) z.writeUInt32LE(0xffffffff, at);
        else if (fcsBytes === 2) z.writeUInt16LE(0xffff, at);
        else if (fcsBytes === 1) z[at] = 0xff;
        return sealWith(z, 4);
      },
      codes: ['DECOMPRESSION_LIMIT', 'DECOMPRESSION_FAILED'],
    },
    {
      name: 'lz4 block size above the frame maximum',
      bytes: () => {
        const l = Buffer.from(compress(3, Buffer.from('z'.repeat(1000)), { magic: 2 }));
        l.writeUInt32LE(0x7ffffff0, 7);
        return sealWith(l, 3);
      },
      codes: ['DECOMPRESSION_FAILED', 'DECOMPRESSION_LIMIT'],
    },
    {
      name: 'v2 batch declaring 2^31-1 records',
      bytes: () => {
        const b = Buffer.from(encodeRecordBatchFromPayload(f(), 1, payload.subarray(0, 0), 4));
        b.writeInt32BE(0x7fffffff, 57);
        return reseal(b);
      },
      codes: ['CORRUPT_RECORD'],
    },
    {
      name: 'legacy entry declaring a 2 GiB message',
      bytes: () => {
        const e = Buffer.from(
          encodeLegacyEntry(0n, { magic: 1, timestamp: 1n, key: null, value: Buffer.from('v') }),
        );
        e.writeInt32BE(0x7ffffff0, 8);
        return e;
      },
      codes: ['CORRUPT_RECORD'],
    },
  ];

  function reseal(b: Buffer): Buffer {
    b.writeUInt32BE(crc32c(b.subarray(21)), 17);
    return b;
  }
  function sealWith(compressed: Buffer, codec: number): Uint8Array {
    // A batch around arbitrary compressed bytes: encode with codec none, then patch the codec bits.
    const b = Buffer.from(encodeRecordBatchFromPayload(f(), 1, compressed, 0));
    b.writeInt16BE(codec, 21);
    return reseal(b);
  }

  for (const input of inputs) {
    for (const mode of ['outDir', 'inPlace'] as const) {
      it(`${input.name} (${mode}): typed error within the limit, original untouched`, async () => {
        const bytes = Buffer.from(input.bytes());
        const dir = await tmpDir();
        const log = await writeSegment(dir, bytes);
        const before = process.memoryUsage().arrayBuffers;
        const r = await convertSegment(
          log,
          {
            // A target codec other than the source's, so nothing is skipped as already converted.
            codec: input.name.includes('gzip') ? 'zstd' : 'gzip',
            maxDecompressedBatchBytes: LIMIT,
            maxEntryBytes: 8 * 1024 * 1024,
          },
          mode === 'outDir' ? { kind: 'outDir', dir: path.join(dir, 'out') } : { kind: 'inPlace' },
        );
        expect(r.result).toBe('failed');
        expect(input.codes).toContain(r.error?.code);
        if (r.error?.code === 'DECOMPRESSION_LIMIT') expect(r.reason).toMatch(/limit/);
        // Nothing near 16 MiB (let alone 2 GiB) was kept around.
        expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(12 * 1024 * 1024);
        expect(sha(await readFile(log))).toBe(sha(bytes));
        expect((await readdir(path.dirname(log))).sort()).toEqual(['00000000000000000000.log']);
        if (mode === 'outDir')
          expect(existsSync(path.join(dir, 'out')) ? await readdir(path.join(dir, 'out')) : []).toEqual([]);
        await rm(dir, { recursive: true, force: true });
      });
    }
  }

  it('the limit error is the typed DecompressionLimitError with the configured limit', async () => {
    const dir = await tmpDir();
    const log = await writeSegment(dir, encodeRecordBatchFromPayload(f(), 1, payload, 4));
    const r = await convertSegment(
      log,
      { codec: 'gzip', maxDecompressedBatchBytes: LIMIT },
      { kind: 'outDir', dir: path.join(dir, 'o') },
    );
    expect(r.error).toMatchObject({
      name: DecompressionLimitError.name,
      code: 'DECOMPRESSION_LIMIT',
      position: 61,
    });
    expect(new DecompressionLimitError(LIMIT)).toBeInstanceOf(SegliftError);
    await rm(dir, { recursive: true, force: true });
  });
});
