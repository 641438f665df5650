import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { validateConfig } from '@seglift/config';
import { defaultConcurrency, memoryBoundMib } from '@seglift/segment';
import {
  built,
  freePort,
  type Gate,
  holdLockAsABroker,
  kubectl,
  needs,
  python3,
  redisServer,
} from '@seglift/testkit';
import { afterAll, describe, expect, it } from 'vitest';
import {
  container,
  deployDir,
  find,
  KUSTOMIZATIONS,
  type KustomizationDir,
  kustomization,
  kustomizationDirs,
  kustomizationDirsOnDisk,
  type Obj,
  parseFile,
  parseText,
  render,
  workloads,
  yamlFiles,
} from './kustomize.js';

// Every kustomization under deploy/, rendered with `kubectl kustomize` as an operator applies it,
// checked for what the operator guide promises and what the API schemas (schema.test.ts) cannot
// say: one namespace per kustomization and no Namespace object in Kafka's, claims that exist or
// are the broker's, locked-down pods with resources, Redis safe for BullMQ with its password off
// every command line, Jobs that survive node drains and map seglift's exit codes, and two-phase
// Jobs whose commands the real CLI runs.

const repoRoot = resolve(deployDir, '..');
const guide = readFileSync(join(repoRoot, 'docs/operator-guide.md'), 'utf8');
/** docs/operator-guide.md's Kubernetes section, up to the next numbered section. */
const kubernetesSection = guide.slice(guide.indexOf('## 5. Running on Kubernetes'), guide.indexOf('\n## 6.'));

/** The broker's own claim each kustomization mounts: defined by Kafka's StatefulSet or operator. */
const BROKER_CLAIMS: Record<KustomizationDir, string[]> = {
  base: ['kafka-data'],
  'overlays/archive-bucket': [],
  'overlays/statefulset': ['data-kafka-0'],
  'overlays/strimzi': ['data-0-my-cluster-broker-0'],
  'overlays/strimzi-jbod': ['data-0-my-cluster-broker-0', 'data-1-my-cluster-broker-0'],
};

/**
 * A describe whose body renders (or prepares files) while tests are collected: with a requirement
 * missing it collects nothing, and the gate reports the skip (or, under CI, fails).
 */
function describeWith(gate: Gate, name: string, body: () => void): void {
  gate.describe(name, () => {
    if (gate.ok) body();
  });
}

const configOf = (docs: Obj[], name = 'seglift-config') => {
  const text = find(docs, 'ConfigMap', name).data['seglift.yaml'] as string;
  const result = validateConfig(parseText(text, 'seglift.yaml')[0]);
  if (!result.ok) throw new Error(JSON.stringify(result.problems));
  return result.config;
};
const podSpec = (w: Obj): Obj => w.spec.template.spec;
const volume = (w: Obj, name: string): Obj => {
  const v = (podSpec(w).volumes as Obj[]).find((x) => x.name === name);
  if (!v) throw new Error(`no volume ${name} in ${w.metadata.name}`);
  return v;
};
const mounts = (c: Obj): Record<string, Obj> =>
  Object.fromEntries((c.volumeMounts as Obj[]).map((m) => [m.mountPath, m]));
const envOf = (c: Obj): Record<string, Obj> => Object.fromEntries((c.env as Obj[]).map((e) => [e.name, e]));

/**
 * The conversion threads a seglift container runs by default: the default follows the container's
 * limits (host.ts reads them from its cgroup: the CPU limit rounded up, the memory limit).
 */
function defaultThreadsOf(c: Obj, limitMiB: number): number {
  const cpu = c.resources.limits.cpu as string | undefined;
  // No CPU limit: as many cores as a large node has; the memory limit alone bounds the threads.
  const cores =
    cpu === undefined ? 256 : Math.ceil(cpu.endsWith('m') ? Number(cpu.slice(0, -1)) / 1000 : Number(cpu));
  return defaultConcurrency({ cores, memoryBytes: limitMiB * 1024 * 1024 });
}

/** SEGLIFT_WORKER_CONCURRENCY, else the config file's worker.concurrency, else the default. */
function threadsOf(docs: Obj[], w: Obj, c: Obj, limitMiB: number): number {
  const env = (c.env as Obj[] | undefined)?.find((e) => e.name === 'SEGLIFT_WORKER_CONCURRENCY');
  if (env !== undefined) return Number(env.value);
  const configMap = (podSpec(w).volumes as Obj[]).find((v) => v.configMap)?.configMap.name;
  const file = configMap && parseText(find(docs, 'ConfigMap', configMap).data['seglift.yaml'], configMap)[0];
  return file?.worker?.concurrency ?? defaultThreadsOf(c, limitMiB);
}

describe('YAML files', () => {
  it('every file under deploy/ parses', () => {
    const files = yamlFiles(deployDir);
    expect(files.length).toBe(36);
    for (const f of files) expect(() => parseFile(f), f).not.toThrow();
  });

  it('the kustomizations an operator applies are the ones the tests render; the others are parts', () => {
    expect(kustomizationDirsOnDisk()).toEqual(
      [...kustomizationDirs, 'common', 'strimzi-user', 'two-phase'].sort(),
    );
    for (const dir of kustomizationDirs) expect(kustomization(dir).kind, dir).toBe('Kustomization');
    for (const c of ['two-phase', 'strimzi-user']) expect(kustomization(c).kind).toBe('Component');
  });

  for (const dir of kustomizationDirsOnDisk()) {
    it(`${dir}/kustomization.yaml lists existing files and every file is listed`, () => {
      const k = kustomization(dir);
      const abs = join(deployDir, dir);
      const listed = new Set<string>();
      for (const r of [...(k.resources ?? []), ...(k.components ?? [])] as string[]) {
        const p = resolve(abs, r);
        expect(existsSync(p), r).toBe(true);
        if (statSync(p).isDirectory()) expect(existsSync(join(p, 'kustomization.yaml')), r).toBe(true);
        else listed.add(p);
      }
      for (const patch of (k.patches ?? []) as Obj[]) {
        if (patch.path === undefined) continue;
        const p = resolve(abs, patch.path);
        expect(existsSync(p), patch.path).toBe(true);
        listed.add(p);
      }
      const own = readdirSync(abs).filter((f) => /\.ya?ml$/.test(f) && f !== 'kustomization.yaml');
      for (const f of own) expect(listed.has(join(abs, f)), `${f} is not in kustomization.yaml`).toBe(true);
    });
  }
});

describeWith(needs(kubectl), 'every rendered kustomization', () => {
  for (const dir of kustomizationDirs) {
    describe(dir, () => {
      const docs = render(dir);
      const ns = KUSTOMIZATIONS[dir];
      const jobs = docs.filter((d) => d.kind === 'Job');

      it(`puts every namespaced object in the Jobs' namespace (${ns}) and creates a Namespace only of its own`, () => {
        expect(jobs.length).toBe(2);
        for (const d of docs.filter((x) => x.kind !== 'Namespace'))
          expect(d.metadata.namespace, `${d.kind}/${d.metadata.name}`).toBe(ns);
        const namespaces = docs.filter((d) => d.kind === 'Namespace');
        if (dir === 'overlays/archive-bucket') {
          // The archive's dedicated namespace: seglift's own, so it may enforce the profile.
          expect(namespaces.map((n) => n.metadata)).toEqual([
            {
              name: 'seglift',
              labels: {
                'app.kubernetes.io/part-of': 'seglift',
                'pod-security.kubernetes.io/enforce': 'restricted',
                'pod-security.kubernetes.io/enforce-version': 'latest',
              },
            },
          ]);
        } else {
          // Kafka's namespace is never created, renamed or relabelled by seglift.
          expect(namespaces).toEqual([]);
        }
        for (const d of docs)
          expect(d.metadata.labels?.['app.kubernetes.io/part-of'], d.metadata.name).toBe('seglift');
      });

      it('mounts only claims it defines, ConfigMaps and Secrets it defines, and the broker claim the guide names', () => {
        const defined = (kind: string) =>
          new Set(docs.filter((d) => d.kind === kind).map((d) => d.metadata.name));
        const claims = defined('PersistentVolumeClaim');
        const undefinedClaims = new Set<string>();
        for (const w of workloads(docs)) {
          const s = podSpec(w);
          for (const v of s.volumes as Obj[]) {
            if (v.persistentVolumeClaim && !claims.has(v.persistentVolumeClaim.claimName))
              undefinedClaims.add(v.persistentVolumeClaim.claimName);
            if (v.configMap) expect(defined('ConfigMap').has(v.configMap.name), v.configMap.name).toBe(true);
            if (v.secret) expect(defined('Secret').has(v.secret.secretName), v.secret.secretName).toBe(true);
          }
          for (const c of s.containers as Obj[])
            for (const e of (c.env ?? []) as Obj[])
              if (e.valueFrom?.secretKeyRef) {
                const secret = find(docs, 'Secret', e.valueFrom.secretKeyRef.name);
                expect(secret.stringData[e.valueFrom.secretKeyRef.key], e.name).toBeTypeOf('string');
              }
          expect(s.serviceAccountName).toBe(docs.find((d) => d.kind === 'ServiceAccount')!.metadata.name);
        }
        expect([...undefinedClaims]).toEqual(BROKER_CLAIMS[dir]);
        for (const claim of BROKER_CLAIMS[dir]) expect(kubernetesSection).toContain(`\`${claim}\``);
      });

      for (const w of workloads(docs)) {
        it(`${w.metadata.name}: meets the restricted pod security profile by itself, read-only root, resources set`, () => {
          const s = podSpec(w);
          expect(s.securityContext.runAsNonRoot).toBe(true);
          expect(s.securityContext.runAsUser).toBeGreaterThan(0);
          expect(s.securityContext.seccompProfile).toEqual({ type: 'RuntimeDefault' });
          expect(s.automountServiceAccountToken).toBe(false);
          // seglift's programs: a Service named seglift-* would put SEGLIFT_* variables in them.
          if (w.kind === 'Job') expect(s.enableServiceLinks).toBe(false);
          for (const host of ['hostNetwork', 'hostPID', 'hostIPC', 'hostUsers'])
            expect(s[host], host).toBeUndefined();
          expect(s.initContainers).toBeUndefined();
          const volumes: Record<string, Obj> = Object.fromEntries(
            (s.volumes as Obj[]).map((v) => [v.name, v]),
          );
          for (const v of Object.values(volumes)) {
            const types = Object.keys(v).filter((k) => k !== 'name');
            expect(types.length).toBe(1);
            expect(['persistentVolumeClaim', 'configMap', 'secret', 'emptyDir']).toContain(types[0]);
          }
          for (const c of s.containers as Obj[]) {
            expect(c.securityContext).toEqual({
              allowPrivilegeEscalation: false,
              readOnlyRootFilesystem: true,
              capabilities: { drop: ['ALL'] },
            });
            const tmp = mounts(c)['/tmp'];
            expect(volumes[tmp.name].emptyDir).toBeDefined();
            for (const m of c.volumeMounts as Obj[]) expect(volumes[m.name], m.name).toBeDefined();
            expect(c.resources.requests.cpu).toMatch(/^\d+m?$/);
            expect(c.resources.requests.memory).toMatch(/^\d+Mi$/);
            expect(c.resources.limits.memory).toMatch(/^\d+Mi$/);
            expect(c.ports?.every((p: Obj) => p.hostPort === undefined) ?? true).toBe(true);
          }
        });
      }

      it('gives every converting container the memory of its conversion threads (200 MiB + 48 MiB a thread), the default ones too', () => {
        for (const j of jobs)
          for (const c of podSpec(j).containers as Obj[]) {
            // The watcher only scans and queues: no conversion thread.
            if (c.args?.[0] === 'seglift-watcher') continue;
            const limitMiB = Number(/^(\d+)Mi$/.exec(c.resources.limits.memory)?.[1]);
            const threads = threadsOf(docs, j, c, limitMiB);
            expect(threads, j.metadata.name).toBeGreaterThanOrEqual(1);
            expect(memoryBoundMib(threads), j.metadata.name).toBeLessThanOrEqual(limitMiB);
            expect(memoryBoundMib(defaultThreadsOf(c, limitMiB)), j.metadata.name).toBeLessThanOrEqual(
              limitMiB,
            );
          }
      });

      it('runs the seglift image of kustomization.yaml in every Job; Job names fit the job-name label', () => {
        for (const j of jobs) {
          expect(podSpec(j).containers.map((c: Obj) => c.image)).toEqual(['seglift:0.1.0']);
          expect(j.metadata.name.length).toBeLessThanOrEqual(63);
        }
      });
    });
  }
});

describeWith(needs(kubectl), 'base: Redis', () => {
  const docs = render('base');
  const redis = find(docs, 'Deployment', 'seglift-redis');
  const c = container(redis, 'redis');
  const conf = find(docs, 'ConfigMap', 'seglift-redis-config').data['redis.conf'] as string;
  const secret = find(docs, 'Secret', 'seglift-redis');

  it('is configured by its file: never evicts keys, keeps an append-only file on a PersistentVolumeClaim', () => {
    expect(c.args).toEqual(['redis-server', '/etc/redis/redis.conf']);
    expect(c.command).toBeUndefined();
    expect(conf.trim().split('\n')).toEqual([
      'port 6379',
      'dir /data',
      'appendonly yes',
      'appendfsync everysec',
      'maxmemory 400mb',
      'maxmemory-policy noeviction',
      'protected-mode yes',
      'include /etc/redis-auth/auth.conf',
    ]);
    expect(redis.spec.replicas).toBe(1);
    expect(redis.spec.strategy.type).toBe('Recreate');
    const pvc = find(docs, 'PersistentVolumeClaim', volume(redis, 'data').persistentVolumeClaim.claimName);
    expect(pvc.spec.accessModes).toEqual(['ReadWriteOnce']);
    const m = mounts(c);
    expect(m['/data'].name).toBe('data');
    expect(m['/etc/redis']).toEqual({ name: 'config', mountPath: '/etc/redis', readOnly: true });
    expect(volume(redis, 'config').configMap.name).toBe('seglift-redis-config');
  });

  it('gets its password from a file mounted from the Secret, never from its command line or a literal in the pod spec', () => {
    expect(mounts(c)['/etc/redis-auth']).toEqual({
      name: 'auth',
      mountPath: '/etc/redis-auth',
      readOnly: true,
    });
    expect(volume(redis, 'auth').secret).toEqual({
      secretName: 'seglift-redis',
      defaultMode: 0o440,
      items: [{ key: 'redis-auth.conf', path: 'auth.conf' }],
    });
    const password = secret.stringData['redis-password'] as string;
    expect(secret.stringData['redis-auth.conf']).toBe(`requirepass ${password}`);
    expect(new URL(secret.stringData['redis-url']).password).toBe(password);
    expect(new URL(secret.stringData['redis-url']).hostname).toBe('seglift-redis');
    const spec = JSON.stringify(redis);
    expect(spec).not.toContain(password);
    expect(spec).not.toContain('requirepass');
    // redis-cli in the probe reads REDISCLI_AUTH; the probe's command names no password.
    expect(envOf(c).REDISCLI_AUTH.valueFrom.secretKeyRef).toEqual({
      name: 'seglift-redis',
      key: 'redis-password',
    });
    expect(c.readinessProbe.exec.command).toEqual(['sh', '-c', 'redis-cli ping | grep -q PONG']);
  });

  needs(redisServer).it(
    'the rendered redis.conf and auth.conf start a real redis-server that requires the password and never evicts',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'seglift-redis-conf-'));
      let proc: ChildProcess | undefined;
      try {
        const port = await freePort();
        writeFileSync(join(dir, 'auth.conf'), secret.stringData['redis-auth.conf']);
        mkdirSync(join(dir, 'data'));
        // The file as mounted, with the pod's paths and port moved into the test's directory.
        writeFileSync(
          join(dir, 'redis.conf'),
          `${conf
            .replace('port 6379', `port ${port}`)
            .replace('dir /data', `dir ${join(dir, 'data')}`)
            .replace('/etc/redis-auth/auth.conf', join(dir, 'auth.conf'))}bind 127.0.0.1\n`,
        );
        proc = spawn('redis-server', [join(dir, 'redis.conf')], { stdio: 'ignore' });
        const pw = secret.stringData['redis-password'] as string;
        const cli = (auth: string | undefined, ...cmd: string[]) => {
          const env = { ...process.env };
          delete env.REDISCLI_AUTH;
          if (auth !== undefined) env.REDISCLI_AUTH = auth;
          return spawnSync('redis-cli', ['-p', String(port), ...cmd], {
            encoding: 'utf8',
            env,
          }).stdout.trim();
        };
        for (let i = 0; i < 200 && cli(pw, 'PING') !== 'PONG'; i++)
          await new Promise((r) => setTimeout(r, 50));
        expect(cli(undefined, 'PING')).toMatch(/^NOAUTH Authentication required/);
        expect(cli('wrong', 'PING')).toMatch(/^NOAUTH Authentication required/);
        // The readiness probe's own command, with the password where the pod has it.
        const probe = spawnSync(
          'sh',
          ['-c', c.readinessProbe.exec.command[2].replace('redis-cli', `redis-cli -p ${port}`)],
          {
            env: { ...process.env, REDISCLI_AUTH: pw },
          },
        );
        expect(probe.status).toBe(0);
        expect(cli(pw, 'CONFIG', 'GET', 'maxmemory-policy')).toBe('maxmemory-policy\nnoeviction');
        expect(cli(pw, 'CONFIG', 'GET', 'appendonly')).toBe('appendonly\nyes');
        expect(cli(pw, 'CONFIG', 'GET', 'maxmemory')).toBe('maxmemory\n419430400');
        // What `ps` shows: redis-server sets its title to its address; the password nowhere.
        const cmdline = readFileSync(`/proc/${proc.pid}/cmdline`, 'utf8');
        expect(cmdline.split('\0').filter((a) => a !== '')).toEqual([`redis-server 127.0.0.1:${port}`]);
      } finally {
        proc?.kill('SIGKILL');
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );

  it('is reachable through a Service on 6379 that selects it, only from seglift pods', () => {
    const svc = find(docs, 'Service', 'seglift-redis');
    expect(svc.spec.selector).toEqual(redis.spec.selector.matchLabels);
    expect(svc.spec.ports).toEqual([{ name: 'redis', port: 6379, targetPort: 'redis' }]);
    const np = find(docs, 'NetworkPolicy', 'seglift-redis');
    expect(np.spec.podSelector.matchLabels).toEqual(redis.spec.selector.matchLabels);
    const clients = workloads(docs)
      .filter((w) => w.spec.template.metadata.labels['seglift.io/redis-client'] === 'true')
      .map((w) => w.metadata.name);
    expect(clients.sort()).toEqual(['seglift-watcher', 'seglift-worker']);
  });
});

describeWith(needs(kubectl), 'base: config and Jobs', () => {
  const docs = render('base');
  const config = configOf(docs);
  const worker = find(docs, 'Job', 'seglift-worker');
  const watcher = find(docs, 'Job', 'seglift-watcher');

  it("is a valid @seglift/config file with one conversion per worker pod, backups inside the workers' roots", () => {
    expect(config.roots).toEqual(['/data']);
    expect(config.codec).toBe('zstd');
    expect(config.worker.concurrency).toBe(1);
    expect(config.queue).toEqual({ name: 'segments', prefix: 'seglift' });
    expect(config.readiness.requireRolled).toBe(true);
    expect(config.metrics.port).toBe(9464);
    // The Redis URL comes from the Secret, never from the ConfigMap.
    expect(find(docs, 'ConfigMap', 'seglift-config').data['seglift.yaml']).not.toContain('redis');
    expect(config.backupDir).toBe('/backup');
    // The one rule (safety/backup.ts): the backup dir is written, so it lies inside the roots of
    // what writes it (the workers: SEGLIFT_ROOTS overrides the file), and outside the data's.
    for (const root of config.roots) expect(config.backupDir!.startsWith(`${root}/`)).toBe(false);
    const roots = envOf(container(worker, 'worker')).SEGLIFT_ROOTS.value.split(',');
    expect(roots).toEqual([...config.roots, config.backupDir]);
    expect(envOf(container(watcher, 'watcher')).SEGLIFT_ROOTS).toBeUndefined();
  });

  it('run the watcher once and wait, and the workers in parallel as a work queue that exit when drained', () => {
    expect(container(watcher, 'watcher').args).toEqual(['seglift-watcher', '--once', '--wait']);
    expect(watcher.spec.completions).toBe(1);
    expect(container(worker, 'worker').args).toEqual([
      'seglift-worker',
      '--exit-when-drained',
      '--idle-ms',
      '120000',
    ]);
    expect(worker.spec.parallelism).toBe(2);
    expect(worker.spec.completions).toBeUndefined();
    expect(worker.spec.completionMode).toBeUndefined();
  });

  it('ignore node drains; fail at once on bad segments (watcher 1) and usage errors (2); count runtime errors (3) and SIGTERM stops (worker 143)', () => {
    for (const job of [worker, watcher]) {
      expect(podSpec(job).restartPolicy).toBe('Never');
      expect(job.spec.podReplacementPolicy).toBe('Failed');
    }
    const exitRule = (action: string, containerName: string, values: number[]) => ({
      action,
      onExitCodes: { containerName, operator: 'In', values },
    });
    const disruption = { action: 'Ignore', onPodConditions: [{ type: 'DisruptionTarget' }] };
    // The DisruptionTarget rule comes first: a drained worker exits 143 too, and the first
    // matching rule decides.
    expect(watcher.spec.podFailurePolicy.rules).toEqual([
      disruption,
      exitRule('FailJob', 'watcher', [1, 2]),
      exitRule('Count', 'watcher', [3]),
    ]);
    expect(worker.spec.podFailurePolicy.rules).toEqual([
      disruption,
      exitRule('FailJob', 'worker', [2]),
      exitRule('Count', 'worker', [3, 143]),
    ]);
    expect(worker.spec.backoffLimit).toBe(6);
    expect(watcher.spec.backoffLimit).toBe(2);
  });

  it('give a worker longer than one conversion to finish on SIGTERM', () => {
    const grace = podSpec(worker).terminationGracePeriodSeconds as number;
    expect(grace).toBe(600);
    expect(config.worker.shutdownGraceMs).toBeLessThan(grace * 1000);
    expect(config.worker.shutdownGraceMs).toBe(540_000);
  });

  it('bound worker memory to the streaming pipeline: 256Mi request, 512Mi limit', () => {
    expect(container(worker, 'worker').resources).toEqual({
      requests: { cpu: '1', memory: '256Mi' },
      limits: { cpu: '2', memory: '512Mi' },
    });
  });

  it('serve metrics on the configured port from both (the watcher: the queue depth); probes on the worker only', () => {
    const svc = find(docs, 'Service', 'seglift-metrics');
    for (const [job, name] of [
      [worker, 'worker'],
      [watcher, 'watcher'],
    ] as const) {
      const c = container(job, name);
      expect(c.ports).toEqual([{ name: 'metrics', containerPort: config.metrics.port }]);
      expect(job.spec.template.metadata.annotations['prometheus.io/port']).toBe(String(config.metrics.port));
      for (const [k, v] of Object.entries(svc.spec.selector))
        expect(job.spec.template.metadata.labels[k]).toBe(v);
    }
    const c = container(worker, 'worker');
    expect(c.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'metrics' });
    expect(c.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'metrics' });
    const w = container(watcher, 'watcher');
    expect(w.livenessProbe).toBeUndefined();
    expect(w.readinessProbe).toBeUndefined();
  });

  it('read the config from the ConfigMap and the Redis URL from the Secret', () => {
    for (const [job, name] of [
      [worker, 'worker'],
      [watcher, 'watcher'],
    ] as const) {
      const c = container(job, name);
      const env = envOf(c);
      expect(env.SEGLIFT_CONFIG.value).toBe('/etc/seglift/seglift.yaml');
      expect(env.SEGLIFT_REDIS_URL.valueFrom.secretKeyRef).toEqual({
        name: 'seglift-redis',
        key: 'redis-url',
      });
      expect(mounts(c)['/etc/seglift'].readOnly).toBe(true);
      expect(volume(job, mounts(c)['/etc/seglift'].name).configMap.name).toBe('seglift-config');
    }
  });

  it('mount the broker volume at the configured root, backups at backupDir (workers only), read-only for the watcher', () => {
    const wm = mounts(container(worker, 'worker'));
    expect(wm['/data'].readOnly).toBeUndefined();
    expect(wm[config.backupDir!].name).toBe('backup');
    const vm = mounts(container(watcher, 'watcher'));
    expect(vm['/data'].readOnly).toBe(true);
    expect(vm['/backup']).toBeUndefined();
    for (const job of [worker, watcher])
      expect(volume(job, 'data').persistentVolumeClaim.claimName).toBe('kafka-data');
  });

  it('co-locate every pod of the ReadWriteOnce broker volume on one node', () => {
    for (const job of [worker, watcher]) {
      const term = podSpec(job).affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0];
      expect(term.topologyKey).toBe('kubernetes.io/hostname');
      for (const [k, v] of Object.entries(term.labelSelector.matchLabels))
        expect(job.spec.template.metadata.labels[k]).toBe(v);
    }
  });

  it('run Job pods as the broker user without fsGroup (which would re-own the broker files)', () => {
    for (const job of [worker, watcher]) {
      expect(podSpec(job).securityContext.runAsUser).toBe(1000);
      expect(podSpec(job).securityContext.runAsGroup).toBe(1000);
      expect(podSpec(job).securityContext.fsGroup).toBeUndefined();
    }
  });

  it('has exactly these objects', () => {
    expect(docs.map((d) => `${d.kind}/${d.metadata.name}`).sort()).toEqual([
      'ConfigMap/seglift-config',
      'ConfigMap/seglift-redis-config',
      'Deployment/seglift-redis',
      'Job/seglift-watcher',
      'Job/seglift-worker',
      'NetworkPolicy/seglift-redis',
      'PersistentVolumeClaim/seglift-backup',
      'PersistentVolumeClaim/seglift-redis',
      'Secret/seglift-redis',
      'Service/seglift-metrics',
      'Service/seglift-redis',
      'ServiceAccount/seglift',
    ]);
  });
});

describeWith(needs(kubectl), 'overlay archive-bucket: a dedicated namespace', () => {
  const docs = render('overlays/archive-bucket');

  it('readies segments by quiet time, the newest of each partition included', () => {
    const config = configOf(docs);
    expect(config.readiness).toEqual({ requireRolled: false, quietMs: 600_000 });
    expect(config.roots).toEqual(['/data']);
    expect(config.worker.concurrency).toBe(1);
  });

  it('mounts the archive from its own ReadWriteMany claim, in its namespace, and shares the backup volume', () => {
    const archive = find(docs, 'PersistentVolumeClaim', 'seglift-archive');
    expect(archive.metadata.namespace).toBe('seglift');
    expect(archive.spec.accessModes).toEqual(['ReadWriteMany']);
    expect(find(docs, 'PersistentVolumeClaim', 'seglift-backup').spec.accessModes).toEqual(['ReadWriteMany']);
    for (const name of ['seglift-worker', 'seglift-watcher'])
      expect((podSpec(find(docs, 'Job', name)).volumes as Obj[]).filter((v) => v.name === 'data')).toEqual([
        { name: 'data', persistentVolumeClaim: { claimName: 'seglift-archive' } },
      ]);
  });

  it('runs 8 workers, no affinity, as the archive owner, with the base podFailurePolicy', () => {
    const worker = find(docs, 'Job', 'seglift-worker');
    expect(worker.spec.parallelism).toBe(8);
    expect(worker.spec.backoffLimit).toBe(16);
    expect(worker.spec.podFailurePolicy.rules.map((r: Obj) => r.action)).toEqual([
      'Ignore',
      'FailJob',
      'Count',
    ]);
    for (const job of [worker, find(docs, 'Job', 'seglift-watcher')]) {
      const s = podSpec(job);
      expect(s.affinity).toBeUndefined();
      expect(s.securityContext).toEqual({
        runAsNonRoot: true,
        runAsUser: 10001,
        runAsGroup: 10001,
        seccompProfile: { type: 'RuntimeDefault' },
      });
    }
  });
});

/** The two-phase overlays: each one broker, with its values. */
const TWO_PHASE = {
  'overlays/statefulset': {
    pod: 'kafka-0',
    node: 'worker-1',
    volumePath: '/var/lib/kafka',
    logDir: '/var/lib/kafka/data',
    stageDir: '/var/lib/kafka/seglift-stage',
    // No fsGroup: the broker pod of the example has none.
    user: { runAsUser: 1000, runAsGroup: 1000 },
  },
  'overlays/strimzi': {
    pod: 'my-cluster-broker-0',
    node: 'worker-1',
    volumePath: '/var/lib/kafka/data-0',
    logDir: '/var/lib/kafka/data-0/kafka-log0',
    stageDir: '/var/lib/kafka/data-0/seglift-stage',
    // Strimzi's Kafka image user (1001, group 0) and its pods' fsGroup 0.
    user: { runAsUser: 1001, runAsGroup: 0, fsGroup: 0, fsGroupChangePolicy: 'OnRootMismatch' },
  },
} as const;

for (const [dir, broker] of Object.entries(TWO_PHASE) as [
  keyof typeof TWO_PHASE,
  (typeof TWO_PHASE)[keyof typeof TWO_PHASE],
][]) {
  describeWith(needs(kubectl), `${dir}: two-phase Jobs for broker pod ${broker.pod}`, () => {
    const docs = render(dir);
    const prepare = find(docs, 'Job', `seglift-prepare-${broker.pod}`);
    const commit = find(docs, 'Job', `seglift-commit-${broker.pod}`);

    it('has exactly these objects, one set per broker; the broker values file is never applied', () => {
      expect(docs.map((d) => `${d.kind}/${d.metadata.name}`).sort()).toEqual([
        `ConfigMap/seglift-config-${broker.pod}`,
        `Job/seglift-commit-${broker.pod}`,
        `Job/seglift-prepare-${broker.pod}`,
        `PersistentVolumeClaim/seglift-backup-${broker.pod}`,
        `ServiceAccount/seglift-${broker.pod}`,
      ]);
    });

    it("applies in two steps by label: config and prepare first, the commit and its backup claim after the broker's stop", () => {
      // kubectl's selector semantics: `k!=v` also selects objects without the label.
      const names = (keep: (phase: string | undefined) => boolean) =>
        docs
          .filter((d) => keep(d.metadata.labels['seglift.io/phase']))
          .map((d) => `${d.kind}/${d.metadata.name}`);
      expect(names((p) => p !== 'commit')).toEqual([
        `ServiceAccount/seglift-${broker.pod}`,
        `ConfigMap/seglift-config-${broker.pod}`,
        `Job/seglift-prepare-${broker.pod}`,
      ]);
      expect(names((p) => p === 'commit')).toEqual([
        `PersistentVolumeClaim/seglift-backup-${broker.pod}`,
        `Job/seglift-commit-${broker.pod}`,
      ]);
      for (const [job, phase] of [
        [prepare, 'prepare'],
        [commit, 'commit'],
      ] as const)
        expect(job.spec.template.metadata.labels['seglift.io/phase']).toBe(phase);
    });

    it('run migrate --prepare and --commit on the log dir with its stage dir, as the broker user', () => {
      for (const [job, flag] of [
        [prepare, '--prepare'],
        [commit, '--commit'],
      ] as const) {
        const c = container(job, 'seglift');
        expect(c.args).toEqual(['migrate', '$(KAFKA_LOG_DIR)', flag, '--stage-dir', '$(SEGLIFT_STAGE_DIR)']);
        expect(Object.fromEntries((c.env as Obj[]).map((e) => [e.name, e.value]))).toEqual({
          SEGLIFT_CONFIG: '/etc/seglift/seglift.yaml',
          SEGLIFT_ROOTS: `${broker.volumePath},/backup`,
          KAFKA_LOG_DIR: broker.logDir,
          SEGLIFT_STAGE_DIR: broker.stageDir,
        });
        expect(podSpec(job).securityContext).toEqual({
          runAsNonRoot: true,
          ...broker.user,
          seccompProfile: { type: 'RuntimeDefault' },
        });
        expect(podSpec(job).terminationGracePeriodSeconds).toBe(600);
      }
      // The stage: on the broker's volume (the commit links its files in), beside the log dir.
      expect(broker.stageDir.startsWith(`${broker.volumePath}/`)).toBe(true);
      expect(broker.logDir.startsWith(`${broker.volumePath}/`)).toBe(true);
      expect(broker.stageDir.startsWith(`${broker.logDir}/`)).toBe(false);
    });

    it("mount the broker's own claim where the broker does, on the broker pod's node", () => {
      for (const job of [prepare, commit]) {
        expect([volume(job, 'data').persistentVolumeClaim.claimName]).toEqual(BROKER_CLAIMS[dir]);
        expect(mounts(container(job, 'seglift'))[broker.volumePath]).toEqual({
          name: 'data',
          mountPath: broker.volumePath,
        });
        expect(podSpec(job).affinity).toEqual({
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [
                { matchFields: [{ key: 'metadata.name', operator: 'In', values: [broker.node] }] },
              ],
            },
          },
        });
      }
    });

    it('keep backups on a claim of their own for the commit; the prepare only has an empty /backup', () => {
      expect(mounts(container(commit, 'seglift'))['/backup'].name).toBe('backup');
      const claim = volume(commit, 'backup').persistentVolumeClaim.claimName;
      expect(find(docs, 'PersistentVolumeClaim', claim).spec.accessModes).toEqual(['ReadWriteOnce']);
      expect(mounts(container(prepare, 'seglift'))['/backup']).toEqual({
        name: 'no-backup',
        mountPath: '/backup',
        readOnly: true,
      });
      expect(volume(prepare, 'no-backup').emptyDir).toEqual({ sizeLimit: '1Mi' });
      expect(configOf(docs, `seglift-config-${broker.pod}`).backupDir).toBe('/backup');
    });

    it("map seglift's exit codes: disruptions ignored, 1 and 2 fail the Job, 3 and 143 are retried", () => {
      for (const job of [prepare, commit]) {
        expect(job.spec.completions).toBe(1);
        expect(job.spec.completionMode).toBeUndefined();
        expect(job.spec.podReplacementPolicy).toBe('Failed');
        expect(podSpec(job).restartPolicy).toBe('Never');
        expect(job.spec.podFailurePolicy.rules).toEqual([
          { action: 'Ignore', onPodConditions: [{ type: 'DisruptionTarget' }] },
          { action: 'FailJob', onExitCodes: { containerName: 'seglift', operator: 'In', values: [1, 2] } },
          { action: 'Count', onExitCodes: { containerName: 'seglift', operator: 'In', values: [3, 143] } },
        ]);
      }
      expect(prepare.spec.backoffLimit).toBe(3);
      expect(commit.spec.backoffLimit).toBe(2);
      // Beside the live broker the prepare takes at most one core.
      expect(container(prepare, 'seglift').resources.limits.cpu).toBe('1');
    });
  });
}

needs(kubectl).it("the guide's commands name the Jobs and labels the overlays render", () => {
  const names = kustomizationDirs.flatMap((dir) => render(dir).map((d) => d.metadata.name as string));
  const mentioned = [...kubernetesSection.matchAll(/seglift-(?:prepare|commit|backup)-[a-z0-9-]+/g)].map(
    (m) => m[0],
  );
  expect(mentioned.length).toBe(10);
  // kafka-2 is the guide's copy of the statefulset overlay for another pod.
  for (const name of mentioned) expect(names).toContain(name.replace(/-kafka-2$/, '-kafka-0'));
  expect(kubernetesSection).toContain("-l 'seglift.io/phase!=commit'");
  expect(kubernetesSection).toContain('kubectl apply -k deploy/overlays/strimzi -l seglift.io/phase=commit');
});

needs(kubectl).it(
  'overlays/strimzi: claim, mount and log dir follow Strimzi names for one node id and volume id',
  () => {
    const docs = render('overlays/strimzi');
    const k = kustomization('overlays/strimzi');
    const values = parseFile(join(deployDir, 'overlays/strimzi/broker.yaml'))[0].data as Record<
      string,
      string
    >;
    const [, cluster, pool, nodeId] = /^-(.+)-([^-]+)-(\d+)$/.exec(k.nameSuffix as string)!;
    expect([cluster, pool, nodeId]).toEqual(['my-cluster', 'broker', '0']);
    const volumeId = '0';
    expect(values).toEqual({
      claim: `data-${volumeId}-${cluster}-${pool}-${nodeId}`,
      node: 'worker-1',
      volumePath: `/var/lib/kafka/data-${volumeId}`,
      logDir: `/var/lib/kafka/data-${volumeId}/kafka-log${nodeId}`,
      stageDir: `/var/lib/kafka/data-${volumeId}/seglift-stage`,
    });
    expect(
      volume(find(docs, 'Job', `seglift-commit-${cluster}-${pool}-${nodeId}`), 'data').persistentVolumeClaim
        .claimName,
    ).toBe(values.claim);
  },
);

describeWith(
  needs(kubectl),
  'overlays/strimzi-jbod: one Indexed Job per phase, one index per JBOD volume',
  () => {
    const docs = render('overlays/strimzi-jbod');
    const pod = 'my-cluster-broker-0';
    for (const phase of ['prepare', 'commit'] as const) {
      const job = find(docs, 'Job', `seglift-${phase}-${pod}`);

      it(`${phase}: index = volume id, retried per volume; a bad segment fails its volume's index only`, () => {
        expect(job.spec.completionMode).toBe('Indexed');
        expect(job.spec.completions).toBe(2);
        expect(job.spec.parallelism).toBe(2);
        expect(job.spec.backoffLimitPerIndex).toBe(2);
        expect(job.spec.backoffLimit).toBeUndefined();
        expect(job.spec.podReplacementPolicy).toBe('Failed');
        expect(job.spec.podFailurePolicy.rules).toEqual([
          { action: 'Ignore', onPodConditions: [{ type: 'DisruptionTarget' }] },
          { action: 'FailIndex', onExitCodes: { containerName: 'seglift', operator: 'In', values: [1] } },
          { action: 'FailJob', onExitCodes: { containerName: 'seglift', operator: 'In', values: [2] } },
          { action: 'Count', onExitCodes: { containerName: 'seglift', operator: 'In', values: [3, 143] } },
        ]);
      });

      it(`${phase}: every pod mounts every volume of the broker and migrates the log dir of its index`, () => {
        const c = container(job, 'seglift');
        expect(c.args).toEqual([
          'migrate',
          '/var/lib/kafka/data-$(JOB_COMPLETION_INDEX)/kafka-log0',
          `--${phase}`,
          '--stage-dir',
          '/var/lib/kafka/data-$(JOB_COMPLETION_INDEX)/seglift-stage',
        ]);
        expect(c.env).toEqual([
          { name: 'SEGLIFT_CONFIG', value: '/etc/seglift/seglift.yaml' },
          { name: 'SEGLIFT_ROOTS', value: '/var/lib/kafka/data-0,/var/lib/kafka/data-1,/backup' },
          {
            name: 'JOB_COMPLETION_INDEX',
            valueFrom: {
              fieldRef: { fieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']" },
            },
          },
        ]);
        const m = mounts(c);
        for (const id of [0, 1]) {
          const v = volume(job, m[`/var/lib/kafka/data-${id}`].name);
          expect(v.persistentVolumeClaim.claimName).toBe(`data-${id}-${pod}`);
        }
        expect(podSpec(job).securityContext).toEqual({
          runAsNonRoot: true,
          runAsUser: 1001,
          runAsGroup: 0,
          fsGroup: 0,
          fsGroupChangePolicy: 'OnRootMismatch',
          seccompProfile: { type: 'RuntimeDefault' },
        });
        expect(
          podSpec(job).affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms,
        ).toEqual([{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['worker-1'] }] }]);
      });
    }
  },
);

/**
 * The Jobs' command lines as the kubelet runs them ($(VAR) expanded from the container's env and
 * what the Job controller adds), with the pod's paths moved under `root`.
 */
function commandOf(
  job: Obj,
  root: string,
  paths: Record<string, string>,
  added: Record<string, string> = {},
): { args: string[]; env: Record<string, string> } {
  const c = container(job, 'seglift');
  const move = (v: string) =>
    Object.entries(paths).reduce((s, [from, to]) => s.replaceAll(from, join(root, to)), v);
  const raw: Record<string, string> = {
    ...Object.fromEntries((c.env as Obj[]).map((e) => [e.name as string, e.value as string])),
    ...added,
  };
  const args = (c.args as string[]).map((a) => move(a.replace(/\$\((\w+)\)/g, (_, k: string) => raw[k])));
  const env = Object.fromEntries(Object.entries(raw).map(([k, v]) => [k, move(v)]));
  return { args, env };
}

const cli = join(repoRoot, 'apps/cli/dist/seglift');

describeWith(
  needs(kubectl, built(cli), python3),
  'overlays/statefulset: the Jobs run with the real CLI',
  () => {
    const docs = render('overlays/statefulset');
    const root = mkdtempSync(join(tmpdir(), 'seglift-two-phase-'));
    afterAll(() => rmSync(root, { recursive: true, force: true }));
    // The broker volume (samples/kafka-logs as its log dir), the backup claim and the config file.
    const paths = { '/var/lib/kafka': 'volume', '/backup': 'backup', '/etc/seglift': 'config' };
    mkdirSync(join(root, 'volume'));
    cpSync(join(repoRoot, 'samples/kafka-logs'), join(root, 'volume/data'), { recursive: true });
    mkdirSync(join(root, 'backup'));
    mkdirSync(join(root, 'config'));
    // The config file as mounted, with its backupDir moved like the pod's paths.
    const configText = find(docs, 'ConfigMap', 'seglift-config-kafka-0').data['seglift.yaml'] as string;
    expect(configText).toContain('backupDir: /backup\n');
    writeFileSync(
      join(root, 'config/seglift.yaml'),
      configText.replace('backupDir: /backup\n', `backupDir: ${join(root, 'backup')}\n`),
    );
    const run = (name: string) => {
      const { args, env } = commandOf(find(docs, 'Job', name), root, paths);
      const r = spawnSync(cli, [...args, '--quiet'], {
        encoding: 'utf8',
        env: { ...process.env, ...env },
        timeout: 120_000,
      });
      return { status: r.status, out: r.stdout + r.stderr };
    };

    it('prepare beside the live broker (its .lock held) stages every rolled segment; commit with it held is refused (exit 2); after its stop the commit swaps them in', async () => {
      const broker = await holdLockAsABroker(join(root, 'volume/data/.lock'));
      try {
        const p = run('seglift-prepare-kafka-0');
        expect(p.status, p.out).toBe(0);
        expect(p.out).toContain('stage: staged 7, already staged 0, changed while read 0, discarded 0');
        // Nothing in /backup: the prepare pod's read-only emptyDir there is enough.
        expect(readdirSync(join(root, 'backup'))).toEqual([]);
        const refused = run('seglift-commit-kafka-0');
        expect(refused.status, refused.out).toBe(2);
        expect(refused.out).toContain('error[LOG_DIR_LOCKED]');
      } finally {
        broker.stdin.end();
        await new Promise((r) => broker.once('exit', r));
      }
      const c = run('seglift-commit-kafka-0');
      expect(c.status, c.out).toBe(0);
      expect(c.out).toContain('stage: committed from stage 7, converted at commit 0, discarded 0');
      expect(readdirSync(join(root, 'backup')).sort()).toEqual([
        '.seglift-backup',
        'clicks-0',
        'metrics-0',
        'orders-0',
        'payments-0',
      ]);
    });
  },
);

describeWith(
  needs(kubectl, built(cli)),
  'overlays/strimzi-jbod: the Indexed Jobs run with the real CLI, index by index',
  () => {
    const docs = render('overlays/strimzi-jbod');
    const root = mkdtempSync(join(tmpdir(), 'seglift-jbod-'));
    afterAll(() => rmSync(root, { recursive: true, force: true }));
    // Two volumes, each with its log dir kafka-log0; a partition lives in one log dir only.
    const paths = {
      '/var/lib/kafka/data-0': 'data-0',
      '/var/lib/kafka/data-1': 'data-1',
      '/backup': 'backup',
    };
    const partitions = [
      ['clicks-0', 'metrics-0'],
      ['orders-0', 'payments-0'],
    ];
    partitions.forEach((names, id) => {
      for (const n of names)
        cpSync(join(repoRoot, 'samples/kafka-logs', n), join(root, `data-${id}/kafka-log0`, n), {
          recursive: true,
        });
    });
    mkdirSync(join(root, 'backup'));
    const configText = find(docs, 'ConfigMap', 'seglift-config-my-cluster-broker-0').data[
      'seglift.yaml'
    ] as string;
    writeFileSync(
      join(root, 'seglift.yaml'),
      configText.replace('backupDir: /backup\n', `backupDir: ${join(root, 'backup')}\n`),
    );
    const run = (name: string, index: number) => {
      const { args, env } = commandOf(find(docs, 'Job', name), root, paths, {
        JOB_COMPLETION_INDEX: String(index),
      });
      env.SEGLIFT_CONFIG = join(root, 'seglift.yaml');
      const r = spawnSync(cli, [...args, '--quiet'], {
        encoding: 'utf8',
        env: { ...process.env, ...env },
        timeout: 120_000,
      });
      return { status: r.status, out: r.stdout + r.stderr };
    };

    it('each index prepares, then commits, its own volume', () => {
      const staged = [4, 3];
      for (const id of [0, 1]) {
        const p = run('seglift-prepare-my-cluster-broker-0', id);
        expect(p.status, p.out).toBe(0);
        expect(p.out).toContain(
          `stage: staged ${staged[id]}, already staged 0, changed while read 0, discarded 0`,
        );
        expect(readdirSync(join(root, `data-${id}/seglift-stage`)).sort()).toEqual([
          '.seglift-stage',
          ...partitions[id],
        ]);
      }
      for (const id of [0, 1]) {
        const c = run('seglift-commit-my-cluster-broker-0', id);
        expect(c.status, c.out).toBe(0);
        expect(c.out).toContain(
          `stage: committed from stage ${staged[id]}, converted at commit 0, discarded 0`,
        );
      }
      expect(readdirSync(join(root, 'backup')).sort()).toEqual(['.seglift-backup', ...partitions.flat()]);
    });
  },
);
