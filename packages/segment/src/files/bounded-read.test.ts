import { execFileSync } from 'node:child_process';
import { open, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tmpDir } from '../test-support/fixtures.js';
import { readBounded, readBoundedText } from './bounded-read.js';

describe('readBounded: a small file read as if it could be hostile (issue 32)', () => {
  it('reads a regular file whole, through a symlink too', async () => {
    const dir = await tmpDir();
    await writeFile(path.join(dir, 'f'), 'hello');
    await symlink(path.join(dir, 'f'), path.join(dir, 'l'));
    expect(await readBoundedText(path.join(dir, 'f'), 5, 'f')).toBe('hello');
    expect(await readBoundedText(path.join(dir, 'l'), 5, 'f')).toBe('hello');
    expect((await readBounded(path.join(dir, 'f'), 5, 'f')).length).toBe(5);
  });

  it('a FIFO, a device, a directory: refused at once with a typed error, never a hang', async () => {
    const dir = await tmpDir();
    execFileSync('mkfifo', [path.join(dir, 'fifo')]);
    await symlink('/dev/zero', path.join(dir, 'zero'));
    await expect(readBounded(path.join(dir, 'fifo'), 100, 'a record')).rejects.toMatchObject({
      code: 'IO',
      detail: 'a record is not a regular file (a FIFO)',
      file: path.join(dir, 'fifo'),
    });
    await expect(readBounded(path.join(dir, 'zero'), 100, 'a record')).rejects.toMatchObject({
      detail: 'a record is not a regular file (a character device)',
    });
    await expect(readBounded(dir, 100, 'a record')).rejects.toMatchObject({
      detail: 'a record is not a regular file (a directory)',
    });
  });

  it("larger than the limit (a sparse 600 MB file): refused unread; absent: Node's ENOENT", async () => {
    const dir = await tmpDir();
    const h = await open(path.join(dir, 'big'), 'w');
    await h.truncate(600 * 1024 * 1024);
    await h.close();
    await expect(readBounded(path.join(dir, 'big'), 1024, 'a checkpoint')).rejects.toMatchObject({
      detail: 'a checkpoint is 629145600 bytes, more than such a file can be (1024): not read',
    });
    await expect(readBounded(path.join(dir, 'none'), 1024, 'x')).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
