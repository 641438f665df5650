/**
 * The suite's single-node Kubernetes (scripts/k8s/cluster.sh) and what the tests do with it:
 * kubectl as an operator runs it, waits on conditions, images imported into the node's containerd.
 * Everything the cluster needs on the machine is installed by scripts/k8s/setup.sh.
 */
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { requirement } from '@seglift/testkit';
import { describeRun, REPO_ROOT, type RunResult, run } from '../../kafka/support/env.js';

export const SCRIPTS = join(REPO_ROOT, 'scripts/k8s');
/** Same defaults as scripts/k8s/versions.sh. */
export const K8S_VERSION = process.env.SEGLIFT_K8S_VERSION ?? 'v1.34.4';
export const K8S_CACHE = process.env.SEGLIFT_K8S_CACHE ?? '/var/cache/seglift/k8s';
export const K8S_BIN = join(K8S_CACHE, K8S_VERSION, 'bin');
/** The node's name (cluster.sh). */
export const NODE = 'seglift-node';

const probe = (cmd: string, args: string[]) => spawnSync(cmd, args, { stdio: 'ignore' }).status === 0;

/** What the cluster needs: root, and what scripts/k8s/setup.sh installs and builds. */
export const clusterParts = requirement(
  'a single-node Kubernetes (scripts/k8s/setup.sh)',
  'the suite starts a real cluster (containerd, runc, etcd, Kubernetes binaries built from the Go ' +
    'module proxy) and builds the images with buildah: run `bash scripts/k8s/setup.sh` as root',
  () => {
    if (process.getuid?.() !== 0) return 'not running as root (a kubelet and containers need it)';
    const bins = ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kubelet', 'kubectl'];
    const absent = bins.filter((b) => !existsSync(join(K8S_BIN, b)));
    if (absent.length) return `no ${absent.join(', ')} in ${K8S_BIN}`;
    for (const [cmd, args] of [
      ['containerd', ['--version']],
      ['runc', ['--version']],
      ['etcd', ['--version']],
      ['buildah', ['--version']],
      ['ctr', ['--version']],
      ['redis-server', ['--version']],
    ] as const)
      if (!probe(cmd, [...args])) return `\`${cmd}\` cannot be run`;
    if (!existsSync(join(K8S_CACHE, 'images/pause.tar'))) return 'no pause image';
    return undefined;
  },
);

async function script(name: string, args: string[], timeoutMs: number): Promise<string> {
  const r = await run('bash', [join(SCRIPTS, name), ...args], { timeoutMs });
  if (r.code !== 0) throw new Error(describeRun(`scripts/k8s/${name} ${args.join(' ')}`, r));
  return r.stdout.trim().split('\n').at(-1) ?? '';
}

/** An image built by scripts/k8s/images.sh (the archive's path). */
export function buildImage(what: 'seglift' | 'kafka' | 'redis', arg?: string): Promise<string> {
  return script('images.sh', arg === undefined ? [what] : [what, arg], 1_500_000);
}

export class Cluster {
  kubeconfig = '';

  constructor(readonly dir: string) {}

  async up(): Promise<void> {
    this.kubeconfig = await script('cluster.sh', ['up', this.dir], 300_000);
  }

  /** Copies the components' logs and the pods' logs to `to` (down removes them with the rest). */
  keepLogs(to: string): void {
    for (const d of ['logs', 'pod-logs'])
      if (existsSync(join(this.dir, d)))
        cpSync(join(this.dir, d), join(to, d), { recursive: true, dereference: true, force: true });
  }

  /** Removes everything the cluster made, in its directory and outside it. */
  async down(): Promise<void> {
    await script('cluster.sh', ['down', this.dir], 180_000);
  }

  async import(tar: string): Promise<void> {
    await script('cluster.sh', ['import', this.dir, tar], 300_000);
  }

  /** kubectl with the cluster's admin kubeconfig; `stdin` is piped in (`-f -`). */
  kubectlRaw(args: string[], stdin?: string, timeoutMs = 300_000): Promise<RunResult> {
    const env = { ...process.env, KUBECONFIG: this.kubeconfig };
    if (stdin === undefined) return run(join(K8S_BIN, 'kubectl'), args, { env, timeoutMs });
    return new Promise((resolve, reject) => {
      const child = spawn(join(K8S_BIN, 'kubectl'), args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d) => {
        stdout += String(d);
      });
      child.stderr.on('data', (d) => {
        stderr += String(d);
      });
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      child.on('error', reject);
      child.on('exit', (code, signal) => {
        clearTimeout(timer);
        resolve({ code, signal, stdout, stderr });
      });
      child.stdin.end(stdin);
    });
  }

  /** kubectl that must succeed; its stdout. */
  async kubectl(args: string[], stdin?: string, timeoutMs?: number): Promise<string> {
    const r = await this.kubectlRaw(args, stdin, timeoutMs);
    if (r.code !== 0) throw new Error(describeRun(`kubectl ${args.join(' ')}`, r));
    return r.stdout;
  }

  async json<T = Record<string, unknown>>(args: string[]): Promise<T> {
    return JSON.parse(await this.kubectl([...args, '-o', 'json'])) as T;
  }

  /** `kubectl wait` on a condition (or `--for=delete`), with what the cluster says on a timeout. */
  async wait(ns: string, what: string, condition: string, timeoutS: number): Promise<void> {
    const r = await this.kubectlRaw(
      ['-n', ns, 'wait', what, `--for=${condition}`, `--timeout=${timeoutS}s`],
      undefined,
      (timeoutS + 30) * 1000,
    );
    if (r.code === 0) return;
    const state = await this.kubectlRaw(['-n', ns, 'get', 'all,pvc,events', '-o', 'wide']);
    throw new Error(
      `${describeRun(`kubectl wait ${what} --for=${condition}`, r)}\n--- ${ns}\n${state.stdout}`,
    );
  }

  /** Waits until `probe` returns a value (polling the API), or fails naming `what`. */
  async until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const v = await probe();
      if (v !== undefined) return v;
      if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 500));
    }
  }

  /** The logs of a Job's pod (the last one). */
  async jobLogs(ns: string, job: string): Promise<string> {
    const r = await this.kubectlRaw(['-n', ns, 'logs', `job/${job}`, '--tail=-1']);
    return `${r.stdout}${r.stderr}`;
  }
}

/** What a pod's memory cgroup said, the last time it was read. */
export interface PodMemoryUse {
  /** memory.max_usage_in_bytes: the most the pod's processes (and their page cache) ever used. */
  maxUsage: number;
  /** memory.limit_in_bytes: the sum of its containers' limits, as the kubelet set it. */
  limit: number;
  /** memory.failcnt: how often the usage reached the limit (and the kernel had to reclaim). */
  failcnt: number;
}

/**
 * Reads the memory cgroup of every pod on the node while it runs, by pod uid: the node's kubelet
 * (cgroupfs driver, cgroup v1) keeps each pod under kubepods[/<qos class>]/pod<uid>, and removes
 * it when the pod ends, so the last reading is kept. Only files are read: no API call per sample.
 */
export class PodMemory {
  readonly pods = new Map<string, PodMemoryUse>();
  private timer: NodeJS.Timeout | undefined;

  constructor(readonly root = '/sys/fs/cgroup/memory/kubepods') {}

  start(everyMs = 500): void {
    this.sample();
    this.timer = setInterval(() => this.sample(), everyMs);
  }

  stop(): void {
    clearInterval(this.timer);
    this.sample();
  }

  private sample(): void {
    for (const qos of ['', 'burstable', 'besteffort']) {
      const dir = join(this.root, qos);
      let entries: string[];
      try {
        entries = readdirSync(dir).filter((e) => e.startsWith('pod'));
      } catch {
        continue;
      }
      for (const e of entries) {
        const read = (f: string) => Number(readFileSync(join(dir, e, f), 'utf8'));
        try {
          // The kubelet names the cgroup pod<uid>, its dashes kept (cgroupfs driver).
          this.pods.set(e.slice(3), {
            maxUsage: read('memory.max_usage_in_bytes'),
            limit: read('memory.limit_in_bytes'),
            failcnt: read('memory.failcnt'),
          });
        } catch {
          // Removed between the listing and the read: the pod ended, its last reading stays.
        }
      }
    }
  }
}
