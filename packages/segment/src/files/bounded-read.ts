/**
 * Reading the small files seglift keeps or finds beside segments (stage records and markers,
 * leader-epoch-checkpoint, producer snapshots) as if any of them could be hostile: a FIFO in
 * its place would block an open and every read for ever (a commit holding the log dir's `.lock`
 * while it waits), a link to /dev/zero reads without end, and a file of gigabytes read whole
 * exhausts memory before it is found wrong. So: opened O_NONBLOCK (a FIFO's open returns at once),
 * fstat'ed on the descriptor (no window for a swap of the name), refused unless a regular file,
 * refused when larger than what such a file can be, and only then read, at most that much.
 */
import { constants } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import { SegmentIoError } from './errors.js';
import { kindOf } from './segment-file.js';

/** The largest .index or .timeindex there is: Kafka's segment.index.bytes is an int. */
export const MAX_INDEX_FILE_BYTES = 2 ** 31 - 1;

/**
 * `file` opened for reading when it is a regular file (symlinks followed: what they name is
 * checked) of at most `maxBytes`; SegmentIoError naming `what` otherwise. Node's own error when
 * there is nothing to open (ENOENT: the callers' "absent").
 */
export async function openBounded(
  file: string,
  maxBytes: number,
  what: string,
): Promise<{ fh: FileHandle; size: number }> {
  const fh = await open(file, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const st = await fh.stat();
    if (!st.isFile()) throw new SegmentIoError(`${what} is not a regular file (${kindOf(st)})`, { file });
    if (st.size > maxBytes)
      throw new SegmentIoError(
        `${what} is ${st.size} bytes, more than such a file can be (${maxBytes}): not read`,
        { file },
      );
    return { fh, size: st.size };
  } catch (err) {
    await fh.close().catch(() => {});
    throw err;
  }
}

/**
 * The whole of a small file (see the header): at most `maxBytes`, whatever it grows to while it is
 * read (a file still being written past the limit is refused, never read on).
 */
export async function readBounded(file: string, maxBytes: number, what: string): Promise<Buffer> {
  const { fh, size } = await openBounded(file, maxBytes, what);
  try {
    // One byte more than the file's size: the read that finds its end needs no other buffer.
    let buf = Buffer.allocUnsafe(size + 1);
    let n = 0;
    for (;;) {
      if (n === buf.length) {
        // It grew while read: on, up to one byte past the limit (which tells it is too large).
        if (n > maxBytes)
          throw new SegmentIoError(`${what} grew past ${maxBytes} bytes while read: not read`, { file });
        const more = Buffer.allocUnsafe(Math.min(maxBytes + 1, 2 * n));
        buf.copy(more, 0, 0, n);
        buf = more;
      }
      const { bytesRead } = await fh.read(buf, n, buf.length - n, n);
      if (bytesRead === 0) break;
      n += bytesRead;
    }
    return buf.subarray(0, n);
  } finally {
    await fh.close();
  }
}

/** readBounded as UTF-8 text. */
export async function readBoundedText(file: string, maxBytes: number, what: string): Promise<string> {
  return (await readBounded(file, maxBytes, what)).toString('utf8');
}
