/**
 * What the host gives this process (cores and memory, a container's cgroup limits included) and
 * how many conversion threads fit in it: the default of `--concurrency` / worker.concurrency.
 * Node's os.availableParallelism() counts the CPUs the process may run on but not a cgroup's CPU
 * quota (libuv before 1.49), so a pod limited to 2 CPUs on a 64-core node would start 64 threads,
 * and 64 threads' memory would get a 512 MiB pod OOM-killed.
 */
import { readFileSync } from 'node:fs';
import os from 'node:os';

/**
 * Peak RSS of a conversion process: at most PROCESS_MEMORY_MIB plus THREAD_MEMORY_MIB for each
 * conversion thread (docs/benchmarks.md, "Scaling up"). A thread holds its V8 heap (young
 * generation 6-24 MiB by the pool's size, pool.ts), its reused read, write, upconverter and codec
 * buffers (~10-25 MiB: v1 wrappers coalesced into 1 MiB batches the most) and the codecs'
 * contexts; 16 threads over 48 partitions peaked at 450 (v2) and 556 MiB (v1) on 2 cores, 24-30
 * MiB a thread over one thread's run. On 16 cores the code of 2026-12-04 peaked ~180 MiB higher
 * than on 2 cores; it has not been measured there since, so a thread is counted at 48 MiB (the
 * 16-core peaks measured then, 870-903 MiB, fit too), not the 32 that 2 cores now show.
 */
export const PROCESS_MEMORY_MIB = 200;
export const THREAD_MEMORY_MIB = 48;

/** The memory a run with `threads` conversion threads may use at its peak, in MiB. */
export function memoryBoundMib(threads: number): number {
  return PROCESS_MEMORY_MIB + THREAD_MEMORY_MIB * threads;
}

export interface HostLimits {
  /** CPUs this process may use: the affinity mask's, lowered to a cgroup CPU quota (rounded up). */
  cores: number;
  /** Bytes of memory: the machine's, lowered to a cgroup memory limit. */
  memoryBytes: number;
}

const MiB = 1024 * 1024;

/** A cgroup file's first line, or undefined where it does not exist (no cgroup, other version). */
function cgroupValue(root: string, file: string): string | undefined {
  try {
    return readFileSync(`${root}/${file}`, 'utf8').split('\n')[0].trim();
  } catch {
    return undefined;
  }
}

/** A cgroup's CPU quota in CPUs (v2 cpu.max, else v1 cfs_quota/cfs_period), or undefined if none. */
export function cgroupCpuQuota(root = '/sys/fs/cgroup'): number | undefined {
  const v2 = cgroupValue(root, 'cpu.max');
  if (v2 !== undefined) {
    const [quota, period] = v2.split(/\s+/);
    const q = Number(quota);
    const p = Number(period ?? 100_000);
    return quota !== 'max' && q > 0 && p > 0 ? q / p : undefined;
  }
  const q = Number(
    cgroupValue(root, 'cpu/cpu.cfs_quota_us') ?? cgroupValue(root, 'cpu,cpuacct/cpu.cfs_quota_us'),
  );
  const p = Number(
    cgroupValue(root, 'cpu/cpu.cfs_period_us') ?? cgroupValue(root, 'cpu,cpuacct/cpu.cfs_period_us'),
  );
  return q > 0 && p > 0 ? q / p : undefined;
}

/** A cgroup's memory limit in bytes (v2 memory.max, else v1 memory.limit_in_bytes), or undefined. */
export function cgroupMemoryLimit(root = '/sys/fs/cgroup'): number | undefined {
  const raw = cgroupValue(root, 'memory.max') ?? cgroupValue(root, 'memory/memory.limit_in_bytes');
  const n = Number(raw);
  // v1 says "no limit" with a page-rounded 2^63 - 1.
  return raw !== undefined && raw !== 'max' && Number.isFinite(n) && n > 0 && n < 2 ** 62 ? n : undefined;
}

/** This process's cores and memory (cgroupRoot: where the cgroup filesystem is, for tests). */
export function hostLimits(cgroupRoot = '/sys/fs/cgroup'): HostLimits {
  const quota = cgroupCpuQuota(cgroupRoot);
  const cores = Math.max(
    1,
    Math.min(os.availableParallelism(), quota === undefined ? Infinity : Math.ceil(quota)),
  );
  const limits = [os.totalmem(), cgroupMemoryLimit(cgroupRoot), process.constrainedMemory?.()];
  const memoryBytes = Math.min(...limits.filter((m): m is number => typeof m === 'number' && m > 0));
  return { cores, memoryBytes };
}

/**
 * Conversion threads by default: one per core, as many as the memory holds at
 * memoryBoundMib(threads), and at least one.
 */
export function defaultConcurrency(host: HostLimits = hostLimits()): number {
  const byMemory = Math.floor((host.memoryBytes / MiB - PROCESS_MEMORY_MIB) / THREAD_MEMORY_MIB);
  return Math.max(1, Math.min(host.cores, byMemory));
}

/**
 * Conversion threads of a prepare beside a running broker by default: half of
 * defaultConcurrency (at least one), so the broker keeps the other cores (docs/benchmarks.md,
 * "Beside a live broker"). An offline migrate keeps all of them.
 */
export function defaultPrepareConcurrency(host: HostLimits = hostLimits()): number {
  return Math.max(1, Math.floor(defaultConcurrency(host) / 2));
}
