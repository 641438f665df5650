import { createHash } from 'node:crypto';
import { readdir, readFile, stat } from 'node:fs/promises';

export async function sha256(file: string): Promise<string> {
  return createHash('sha256')
    .update(await readFile(file))
    .digest('hex');
}

export async function ls(dir: string): Promise<string[]> {
  return (await readdir(dir)).sort();
}

export async function mtime(file: string): Promise<number> {
  return (await stat(file)).mtimeMs;
}
