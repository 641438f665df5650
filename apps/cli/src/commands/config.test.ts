import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { run } from '../test-support/run.js';
import { tmpDir } from '../test-support/segments.js';

describe('seglift config print', () => {
  it('prints the effective config with its sources and redacts secrets', async () => {
    const dir = tmpDir();
    const file = path.join(dir, 'seglift.yaml');
    writeFileSync(file, 'codec: gzip\nlevel: 6\n');
    const r = await run(['config', 'print', '--config', file], {
      SEGLIFT_REDIS_URL: 'redis://user:hunter2@redis:6379/0',
    });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`codec: gzip # from file ${file}`);
    expect(r.stdout).toContain('level: 6');
    expect(r.stdout).not.toContain('hunter2');
    expect(r.stdout).toContain('redis:6379');
  });

  it('--json prints JSON', async () => {
    const r = await run(['config', 'print', '--json'], {});
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).codec).toBe('zstd');
  });

  it('exits 2 on an invalid config and on a missing subcommand', async () => {
    const dir = tmpDir();
    const file = path.join(dir, 'bad.yaml');
    writeFileSync(file, 'codec: brotli\n');
    const r = await run(['config', 'print', '--config', file], {});
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^error\[INVALID_ARGUMENT\]: invalid configuration:\n {2}- codec/);
    expect((await run(['config'], {})).code).toBe(2);
    expect((await run(['config', 'show'], {})).code).toBe(2);
  });
});
