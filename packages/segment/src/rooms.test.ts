import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// Each room's README says what it may import ("May import: a, b."); this holds the code to it, so
// the layering docs/architecture.md draws stays true. Entry files (index.ts, conversion-thread.ts,
// node-flags.ts) sit above every room; test files and test-support are not held to it.
const src = path.dirname(fileURLToPath(import.meta.url));
const rooms = readdirSync(src, { withFileTypes: true })
  .filter((d) => d.isDirectory() && d.name !== 'test-support')
  .map((d) => d.name);

function allowed(room: string): string[] {
  const readme = readFileSync(path.join(src, room, 'README.md'), 'utf8');
  const line = /^May import: (.*)\.$/m.exec(readme);
  if (!line?.[1]) throw new Error(`${room}/README.md has no "May import: …." line`);
  return line[1] === "nothing of this package's other rooms" ? [] : line[1].split(/,\s*/);
}

describe('packages/segment rooms', () => {
  it('has the rooms docs/architecture.md names', () => {
    expect(rooms.sort()).toEqual(
      ['discovery', 'files', 'placements', 'rewrite', 'runs', 'safety', 'stage', 'tiering'].sort(),
    );
  });

  it.each(rooms)('%s imports only the rooms its README allows', (room) => {
    const may = allowed(room);
    const reached = new Set<string>();
    for (const f of readdirSync(path.join(src, room))) {
      if (!f.endsWith('.ts') || f.endsWith('.test.ts')) continue;
      const text = readFileSync(path.join(src, room, f), 'utf8');
      for (const m of text.matchAll(/from '\.\.\/([a-z-]+)\//g)) reached.add(`${f} -> ${m[1]}`);
    }
    const forbidden = [...reached].filter((r) => !may.includes(r.split(' -> ')[1] ?? ''));
    expect(forbidden).toEqual([]);
  });
});
