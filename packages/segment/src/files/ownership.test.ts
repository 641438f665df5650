import { describe, expect, it } from 'vitest';
import { runAs } from './ownership.js';

describe('whom an OWNERSHIP refusal says to run as', () => {
  it('root once, never "root (uid 0) (the broker\'s user) or as root"', () => {
    expect(runAs(0)).toBe('run it as root (uid 0)');
  });

  it("another owner: the broker's user by name and uid, or root", () => {
    // A uid no /etc/passwd names: the uid alone.
    expect(runAs(4_242_424)).toBe("run it as the broker's user, uid 4242424, or as root");
  });
});
