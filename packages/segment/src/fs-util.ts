import { constants } from 'node:fs';
import { type FileHandle, open, rename, stat, unlink } from 'node:fs/promises';
import { SegmentIoError } from './errors.js';

export async function exists(p: string): Promise<boolean> {
  try {
    await stat(p);
    return true;
  } catch {
    return false;
  }
}

export async function fsyncPath(p: string): Promise<void> {
  const fh = await open(p, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** Makes renames/creates/unlinks in `dir` durable (a rename is only safe once its directory is synced). */
export async function fsyncDir(dir: string): Promise<void> {
  let fh: FileHandle | undefined;
  try {
    fh = await open(dir, constants.O_RDONLY);
    await fh.sync();
  } catch (err) {
    // Some filesystems refuse fsync on a directory (EINVAL/EISDIR); nothing more we can do there.
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'EINVAL' && code !== 'EISDIR' && code !== 'EPERM') {
      throw new SegmentIoError(
        `fsync of directory failed: ${(err as Error).message}`,
        { file: dir },
        { cause: err },
      );
    }
  } finally {
    await fh?.close();
  }
}

export async function removeIfExists(p: string): Promise<boolean> {
  try {
    await unlink(p);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}

/** Writes the whole file and fsyncs it (no rename: callers pick the name protocol). */
export async function writeFileSynced(p: string, data: Uint8Array | string, flags = 'w'): Promise<void> {
  await writeWholeFile(p, data, flags, true);
}

/** Writes the whole file; fsyncs it only when asked (a caller that syncs later passes false). */
export async function writeWholeFile(
  p: string,
  data: Uint8Array | string,
  flags = 'w',
  sync = false,
): Promise<void> {
  const fh = await open(p, flags, 0o644);
  try {
    await fh.writeFile(data);
    if (sync) await fh.sync();
  } finally {
    await fh.close();
  }
}

/** Streaming copy with fsync, for backups and `.swap` copies of files we do not rewrite. */
export async function copyFileSynced(from: string, to: string, chunkSize = 4 << 20): Promise<void> {
  const src = await open(from, 'r');
  try {
    const dst = await open(to, 'w', 0o644);
    try {
      const buf = Buffer.allocUnsafe(chunkSize);
      let pos = 0;
      for (;;) {
        const { bytesRead } = await src.read(buf, 0, chunkSize, pos);
        if (bytesRead === 0) break;
        let off = 0;
        while (off < bytesRead) {
          const { bytesWritten } = await dst.write(buf, off, bytesRead - off);
          off += bytesWritten;
        }
        pos += bytesRead;
      }
      await dst.sync();
    } finally {
      await dst.close();
    }
  } finally {
    await src.close();
  }
}

export async function renameSynced(from: string, to: string): Promise<void> {
  try {
    await rename(from, to);
  } catch (err) {
    throw new SegmentIoError(
      `rename to ${to} failed: ${(err as Error).message}`,
      { file: from },
      { cause: err },
    );
  }
}

/** Whether two files hold the same bytes (sizes first, then 1 MiB at a time). */
export async function sameContent(a: string, b: string, chunkSize = 1 << 20): Promise<boolean> {
  const [sa, sb] = await Promise.all([stat(a), stat(b)]);
  if (sa.size !== sb.size) return false;
  const fa = await open(a, 'r');
  try {
    const fb = await open(b, 'r');
    try {
      const ba = Buffer.allocUnsafe(chunkSize);
      const bb = Buffer.allocUnsafe(chunkSize);
      for (let pos = 0; pos < sa.size; pos += chunkSize) {
        const n = Math.min(chunkSize, sa.size - pos);
        const [ra, rb] = await Promise.all([fa.read(ba, 0, n, pos), fb.read(bb, 0, n, pos)]);
        if (ra.bytesRead !== n || rb.bytesRead !== n) return false;
        if (!ba.subarray(0, n).equals(bb.subarray(0, n))) return false;
      }
      return true;
    } finally {
      await fb.close();
    }
  } finally {
    await fa.close();
  }
}
