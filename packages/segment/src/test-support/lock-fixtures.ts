import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/** An empty segment file in a new temporary directory: something to take a segment lock on. */
export async function lockableSegment(prefix: string): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  const log = path.join(dir, '00000000000000000000.log');
  await writeFile(log, '');
  return log;
}

/** The text of a lock file held by another host with `token`. */
export const foreignLock = (token: string) =>
  JSON.stringify({ pid: 1, host: 'worker-7f9c-other-node', token, startedAt: '2026-01-01T00:00:00.000Z' });
