import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CONFIG_FILE_ENV, ENV_VARS } from './names.js';

describe('config/README.md', () => {
  it('names every SEGLIFT_* variable ENV_VARS maps, and no other', () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    const named = new Set(readme.match(/SEGLIFT_[A-Z_]+/g));
    named.delete(CONFIG_FILE_ENV);
    expect([...named].sort()).toEqual(ENV_VARS.map((v) => v.env).sort());
  });
});
