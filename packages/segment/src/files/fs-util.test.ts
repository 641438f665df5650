import { execFileSync } from 'node:child_process';
import {
  closeSync,
  constants,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  realpathSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { tmpDir } from '../test-support/fixtures.js';
import { fstatNow, lstatNow, lstatOrUndefined, statNow, statOrUndefined } from './fs-util.js';

/**
 * A package reached through a symlink (as pnpm lays out node_modules), required after a
 * synchronous stat of a FIFO: what the module loader takes for the package's file.
 */
async function loadedThroughLinkAfterFifoStat(statFifo: (fifo: string) => void): Promise<{
  loaded: string;
  real: string;
}> {
  const root = realpathSync(await tmpDir('seglift-fs-util-'));
  const req = createRequire(path.join(root, 'x.js'));
  writeFileSync(path.join(root, 'warm.js'), 'module.exports = __filename;');
  mkdirSync(path.join(root, 'real'));
  writeFileSync(path.join(root, 'real', 'index.js'), 'module.exports = __filename;');
  symlinkSync(path.join(root, 'real'), path.join(root, 'link'));
  const fifo = path.join(root, 'fifo');
  execFileSync('mkfifo', [fifo]);
  // The loader remembers the real path of every directory it walked: the root is one now.
  req('./warm.js');
  statFifo(fifo);
  return { loaded: req('./link/index.js'), real: path.join(root, 'real', 'index.js') };
}

describe('synchronous stats leave the module loader able to resolve symlinks', () => {
  it("a FIFO's raw lstatSync makes Node's loader stop resolving a later require's path (Node's realpathSync reads the shared stat buffer)", async () => {
    const { loaded, real } = await loadedThroughLinkAfterFifoStat((fifo) => lstatSync(fifo));
    // If this fails, Node no longer has the fault and the scrubbing in fs-util.ts can go.
    expect(loaded).not.toBe(real);
  });

  it.each([
    ['statNow', (f: string) => statNow(f)],
    ['statNow bigint', (f: string) => statNow(f, { bigint: true })],
    ['lstatNow', (f: string) => lstatNow(f)],
    ['lstatOrUndefined', (f: string) => lstatOrUndefined(f)],
    ['statOrUndefined', (f: string) => statOrUndefined(f)],
    [
      'fstatNow',
      (f: string) => {
        const fd = openSync(f, constants.O_RDONLY | constants.O_NONBLOCK);
        try {
          fstatNow(fd);
        } finally {
          closeSync(fd);
        }
      },
    ],
  ])('%s of a FIFO, then a require through a symlink loads the real file', async (_, statFifo) => {
    const { loaded, real } = await loadedThroughLinkAfterFifoStat(statFifo);
    expect(loaded).toBe(real);
  });

  it('every synchronous stat of packages/segment goes through fs-util.ts', () => {
    const src = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
    const direct = /\b(?:l|f)?statSync\(/;
    const offenders = readdirSync(src, { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts') && !f.startsWith('test-support'))
      .filter(
        (f) => f !== path.join('files', 'fs-util.ts') && direct.test(readFileSync(path.join(src, f), 'utf8')),
      );
    expect(offenders).toEqual([]);
  });
});
