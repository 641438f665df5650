import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  cgroupCpuQuota,
  cgroupMemoryLimit,
  defaultConcurrency,
  hostLimits,
  memoryBoundMib,
  PROCESS_MEMORY_MIB,
  THREAD_MEMORY_MIB,
} from './host.js';

const MiB = 1024 * 1024;
const roots: string[] = [];
/** A cgroup filesystem root holding `files` (path -> first line). */
function cgroup(files: Record<string, string>): string {
  const root = mkdtempSync(path.join(os.tmpdir(), 'seglift-cgroup-'));
  roots.push(root);
  for (const [f, v] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, f)), { recursive: true });
    writeFileSync(path.join(root, f), `${v}\n`);
  }
  return root;
}
afterEach(() => {
  for (const r of roots.splice(0)) rmSync(r, { recursive: true, force: true });
});

describe('host limits', () => {
  it('reads a cgroup v2 CPU quota and memory limit', () => {
    const root = cgroup({ 'cpu.max': '250000 100000', 'memory.max': String(512 * MiB) });
    expect(cgroupCpuQuota(root)).toBe(2.5);
    expect(cgroupMemoryLimit(root)).toBe(512 * MiB);
  });

  it('reads no limit from cgroup v2 "max"', () => {
    const root = cgroup({ 'cpu.max': 'max 100000', 'memory.max': 'max' });
    expect(cgroupCpuQuota(root)).toBeUndefined();
    expect(cgroupMemoryLimit(root)).toBeUndefined();
  });

  it('reads cgroup v1, whose "no limit" is -1 and 2^63 - 1 rounded to a page', () => {
    const limited = cgroup({
      'cpu/cpu.cfs_quota_us': '150000',
      'cpu/cpu.cfs_period_us': '100000',
      'memory/memory.limit_in_bytes': String(2048 * MiB),
    });
    expect(cgroupCpuQuota(limited)).toBe(1.5);
    expect(cgroupMemoryLimit(limited)).toBe(2048 * MiB);
    const open = cgroup({
      'cpu/cpu.cfs_quota_us': '-1',
      'cpu/cpu.cfs_period_us': '100000',
      'memory/memory.limit_in_bytes': '9223372036854771712',
    });
    expect(cgroupCpuQuota(open)).toBeUndefined();
    expect(cgroupMemoryLimit(open)).toBeUndefined();
  });

  it('counts a quota of 2.5 CPUs as 3 cores, never more than the CPUs it may run on', () => {
    const root = cgroup({ 'cpu.max': '250000 100000', 'memory.max': String(512 * MiB) });
    const h = hostLimits(root);
    expect(h.cores).toBe(Math.min(3, os.availableParallelism()));
    expect(h.memoryBytes).toBe(Math.min(512 * MiB, os.totalmem()));
  });

  it('without a cgroup, is the machine', () => {
    const h = hostLimits(cgroup({}));
    expect(h.cores).toBe(os.availableParallelism());
    expect(h.memoryBytes).toBeLessThanOrEqual(os.totalmem());
  });
});

describe('defaultConcurrency', () => {
  it('is one thread per core where the memory holds them', () => {
    expect(defaultConcurrency({ cores: 16, memoryBytes: 125 * 1024 * MiB })).toBe(16);
    expect(defaultConcurrency({ cores: 2, memoryBytes: 512 * MiB })).toBe(2);
  });

  it('is as many threads as the memory holds at 200 MiB + 48 MiB a thread', () => {
    // (512 - 200) / 48 = 6.5: 6 threads, 488 MiB at most.
    expect(defaultConcurrency({ cores: 64, memoryBytes: 512 * MiB })).toBe(6);
    expect(memoryBoundMib(6)).toBe(488);
    expect(defaultConcurrency({ cores: 64, memoryBytes: 1024 * MiB })).toBe(17);
  });

  it('is at least one, however little memory', () => {
    expect(defaultConcurrency({ cores: 8, memoryBytes: 128 * MiB })).toBe(1);
  });

  it('states the bound it keeps', () => {
    expect([PROCESS_MEMORY_MIB, THREAD_MEMORY_MIB]).toEqual([200, 48]);
  });
});
