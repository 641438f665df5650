import { mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { setMtimeNs } from './libc.js';

describe('setMtimeNs', () => {
  it('sets the mtime to the nanosecond and leaves the atime', () => {
    const f = path.join(mkdtempSync(path.join(tmpdir(), 'seglift-libc-')), 'f');
    writeFileSync(f, 'x');
    const atime = statSync(f, { bigint: true }).atimeNs;
    setMtimeNs(f, 1_700_000_000_123_456_789n);
    const st = statSync(f, { bigint: true });
    expect(st.mtimeNs).toBe(1_700_000_000_123_456_789n);
    expect(st.atimeNs).toBe(atime);
  });
  it('names the file when it fails', () => {
    expect(() => setMtimeNs('/nonexistent/seglift/f', 1n)).toThrow(
      "ENOENT: utimensat failed, '/nonexistent/seglift/f'",
    );
  });
});
