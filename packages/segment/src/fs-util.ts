/** Read-only file helpers; every change to the filesystem goes through fsops.ts. */
import { open, stat } from 'node:fs/promises';

export async function exists(p: string): Promise<boolean> {
  try {
    await stat(p);
    return true;
  } catch {
    return false;
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
      const ba = Buffer.allocUnsafe(Math.min(chunkSize, sa.size));
      const bb = Buffer.allocUnsafe(Math.min(chunkSize, sa.size));
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
