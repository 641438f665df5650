import { spawn } from 'node:child_process';
import { mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { needs, python3 } from '@seglift/testkit';
import { describe, expect, it } from 'vitest';
import { LogDirLockedError } from './errors.js';
import { acquireLogDirLock, logDirLockHolder } from './logdir-lock.js';

function tmp(): string {
  return mkdtempSync(path.join(tmpdir(), 'seglift-logdir-lock-'));
}

describe('the log dir lock', () => {
  it('is taken, refused to a second holder while held, and free again after release', () => {
    const dir = tmp();
    expect(logDirLockHolder(dir)).toBeUndefined();
    const lock = acquireLogDirLock(dir);
    expect(statSync(path.join(dir, '.lock')).isFile()).toBe(true);
    expect(logDirLockHolder(dir)).toEqual({ pid: -1 });
    let err: unknown;
    try {
      acquireLogDirLock(dir);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(LogDirLockedError);
    expect((err as Error).message).toBe(
      `log dir ${dir} is locked: a Kafka broker (or another seglift) is running on it: stop it first, or use --prepare (file ${path.join(dir, '.lock')})`,
    );
    lock.release();
    lock.release();
    expect(logDirLockHolder(dir)).toBeUndefined();
    acquireLogDirLock(dir).release();
  });
});

// Python's fcntl.lockf is a process-associated F_SETLK, the lock a JVM's FileChannel.tryLock takes.
needs(python3).describe('against a process holding an F_SETLK lock (as a Kafka broker does)', () => {
  it('refuses while the other process holds it, naming its pid, and takes it once it exits', async () => {
    const dir = tmp();
    writeFileSync(path.join(dir, '.lock'), '');
    const holder = spawn(
      'python3',
      [
        '-c',
        'import fcntl,sys\nf=open(sys.argv[1],"r+")\nfcntl.lockf(f,fcntl.LOCK_EX)\nprint("locked",flush=True)\nsys.stdin.read()',
        path.join(dir, '.lock'),
      ],
      { stdio: ['pipe', 'pipe', 'inherit'] },
    );
    await new Promise<void>((resolve) => holder.stdout.once('data', () => resolve()));
    expect(logDirLockHolder(dir)).toEqual({ pid: holder.pid });
    expect(() => acquireLogDirLock(dir)).toThrow(`is locked by pid ${holder.pid}:`);
    holder.stdin.end();
    await new Promise((resolve) => holder.once('exit', resolve));
    acquireLogDirLock(dir).release();
  });
});
