import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, posix, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { validateConfig } from '@seglift/config';
import { kubectl, needs } from '@seglift/testkit';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';

// Reads every manifest under deploy/ and checks what the operator guide promises: Redis safe for
// BullMQ, Jobs that survive node drains, locked-down pods, config that @seglift/config accepts.

// biome-ignore lint/suspicious/noExplicitAny: untyped YAML, every field used is asserted
type Obj = Record<string, any>;

const deployDir = dirname(fileURLToPath(import.meta.url));
const baseDir = join(deployDir, 'base');
const overlayDir = join(deployDir, 'overlays', 'archive-bucket');

function yamlFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? yamlFiles(join(dir, e.name)) : /\.ya?ml$/.test(e.name) ? [join(dir, e.name)] : [],
  );
}

function parseText(text: string, label: string): Obj[] {
  const out: Obj[] = [];
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0) throw new Error(`${label}: ${doc.errors.map((e) => e.message).join('; ')}`);
    const value = doc.toJS() as Obj | null;
    if (value !== null) out.push(value);
  }
  return out;
}

function parseFile(file: string): Obj[] {
  return parseText(readFileSync(file, 'utf8'), file);
}

function kustomization(dir: string): Obj {
  return parseFile(join(dir, 'kustomization.yaml'))[0];
}

/** The resources of a kustomization directory, from its own files (not rendered). */
function resources(dir: string): Obj[] {
  return (kustomization(dir).resources as string[])
    .filter((r) => !r.startsWith('..'))
    .flatMap((r) => parseFile(join(dir, r)));
}

const base = resources(baseDir);
const find = (docs: Obj[], kind: string, name: string): Obj => {
  const found = docs.find((d) => d.kind === kind && d.metadata?.name === name);
  if (!found) throw new Error(`no ${kind} ${name}`);
  return found;
};
const container = (workload: Obj, name: string): Obj => {
  const c = (workload.spec.template.spec.containers as Obj[]).find((x) => x.name === name);
  if (!c) throw new Error(`no container ${name}`);
  return c;
};
const podSpecs = (docs: Obj[]) =>
  docs
    .filter((d) => d.kind === 'Job' || d.kind === 'Deployment')
    .map((d) => ({
      name: d.metadata.name as string,
      spec: d.spec.template.spec as Obj,
      labels: d.spec.template.metadata.labels as Obj,
    }));

const configOf = (docs: Obj[]) => {
  const text = find(docs, 'ConfigMap', 'seglift-config').data['seglift.yaml'] as string;
  const result = validateConfig(parseText(text, 'seglift.yaml')[0]);
  if (!result.ok) throw new Error(JSON.stringify(result.problems));
  return result.config;
};

describe('YAML files', () => {
  it('every file under deploy/ parses', () => {
    const files = yamlFiles(deployDir);
    expect(files.length).toBe(19);
    for (const f of files) expect(() => parseFile(f), f).not.toThrow();
  });

  for (const dir of [baseDir, overlayDir]) {
    it(`${posix.relative(deployDir, dir)}/kustomization.yaml lists existing files and every file is listed`, () => {
      const k = kustomization(dir);
      const listed = new Set<string>();
      for (const r of k.resources as string[]) {
        const p = resolve(dir, r);
        expect(existsSync(p), r).toBe(true);
        if (statSync(p).isDirectory()) expect(existsSync(join(p, 'kustomization.yaml')), r).toBe(true);
        else listed.add(p);
      }
      for (const patch of (k.patches ?? []) as Obj[]) {
        if (patch.path === undefined) continue;
        const p = resolve(dir, patch.path);
        expect(existsSync(p), patch.path).toBe(true);
        listed.add(p);
      }
      const own = readdirSync(dir).filter((f) => /\.ya?ml$/.test(f) && f !== 'kustomization.yaml');
      for (const f of own) expect(listed.has(join(dir, f)), `${f} is not in kustomization.yaml`).toBe(true);
    });
  }
});

describe('base: Redis', () => {
  const redis = find(base, 'Deployment', 'seglift-redis');
  const c = container(redis, 'redis');
  const args = (c.args as string[]).join(' ');

  it('never evicts keys and keeps an append-only file on a PersistentVolumeClaim', () => {
    expect(args).toContain('--maxmemory-policy noeviction');
    expect(args).toContain('--appendonly yes');
    expect(args).toContain('--dir /data');
    expect(redis.spec.replicas).toBe(1);
    expect(redis.spec.strategy.type).toBe('Recreate');
    const data = (redis.spec.template.spec.volumes as Obj[]).find((v) => v.name === 'data')!;
    const pvc = find(base, 'PersistentVolumeClaim', data.persistentVolumeClaim.claimName);
    expect(pvc.spec.accessModes).toEqual(['ReadWriteOnce']);
    expect((c.volumeMounts as Obj[]).find((m) => m.name === 'data')?.mountPath).toBe('/data');
  });

  it('requires the password from the Secret that also holds the URL seglift uses', () => {
    expect(args).toContain('--requirepass $(REDIS_PASSWORD)');
    const env = (c.env as Obj[]).find((e) => e.name === 'REDIS_PASSWORD')!;
    const secret = find(base, 'Secret', env.valueFrom.secretKeyRef.name);
    const password = secret.stringData[env.valueFrom.secretKeyRef.key] as string;
    expect(new URL(secret.stringData['redis-url']).password).toBe(password);
    expect(new URL(secret.stringData['redis-url']).hostname).toBe('seglift-redis');
  });

  it('is reachable through a Service on 6379 that selects it, only from seglift pods', () => {
    const svc = find(base, 'Service', 'seglift-redis');
    expect(svc.spec.selector).toEqual(redis.spec.selector.matchLabels);
    expect(svc.spec.ports).toEqual([{ name: 'redis', port: 6379, targetPort: 'redis' }]);
    const np = find(base, 'NetworkPolicy', 'seglift-redis');
    expect(np.spec.podSelector.matchLabels).toEqual(redis.spec.selector.matchLabels);
    const clients = podSpecs(base)
      .filter((p) => p.labels['seglift.io/redis-client'] === 'true')
      .map((p) => p.name);
    expect(clients.sort()).toEqual(['seglift-watcher', 'seglift-worker']);
  });
});

describe('base: config', () => {
  const config = configOf(base);

  it('is a valid @seglift/config file with one conversion per worker pod', () => {
    expect(config.roots).toEqual(['/data']);
    expect(config.codec).toBe('zstd');
    expect(config.worker.concurrency).toBe(1);
    expect(config.queue).toEqual({ name: 'segments', prefix: 'seglift' });
    expect(config.readiness.requireRolled).toBe(true);
    expect(config.metrics.port).toBe(9464);
    // The Redis URL comes from the Secret, never from the ConfigMap.
    expect(find(base, 'ConfigMap', 'seglift-config').data['seglift.yaml']).not.toContain('redis');
  });

  it('keeps backups outside the roots (the watcher would queue them)', () => {
    expect(config.backupDir).toBe('/backup');
    for (const root of config.roots) expect(config.backupDir!.startsWith(`${root}/`)).toBe(false);
  });
});

describe('base: Jobs', () => {
  const worker = find(base, 'Job', 'seglift-worker');
  const watcher = find(base, 'Job', 'seglift-watcher');
  const config = configOf(base);

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
      expect(job.spec.template.spec.restartPolicy).toBe('Never');
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
    // Only the watcher fails on 1: a worker never exits 1 (a bad segment is a failed queue job).
    expect(worker.spec.backoffLimit).toBe(6);
    expect(watcher.spec.backoffLimit).toBe(2);
  });

  it('give a worker longer than one conversion to finish on SIGTERM', () => {
    const grace = worker.spec.template.spec.terminationGracePeriodSeconds as number;
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
    const svc = find(base, 'Service', 'seglift-metrics');
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
      const env = Object.fromEntries((c.env as Obj[]).map((e) => [e.name, e]));
      expect(env.SEGLIFT_CONFIG.value).toBe('/etc/seglift/seglift.yaml');
      expect(env.SEGLIFT_REDIS_URL.valueFrom.secretKeyRef).toEqual({
        name: 'seglift-redis',
        key: 'redis-url',
      });
      const mount = (c.volumeMounts as Obj[]).find((m) => m.mountPath === '/etc/seglift')!;
      expect(mount.readOnly).toBe(true);
      const volume = (job.spec.template.spec.volumes as Obj[]).find((v) => v.name === mount.name)!;
      expect(find(base, 'ConfigMap', volume.configMap.name).data['seglift.yaml']).toBeTypeOf('string');
      expect(c.image).toBe(kustomization(baseDir).images[0].name);
    }
  });

  it('mount the log directory at the configured root, backups at backupDir (workers only), read-only for the watcher', () => {
    const wm = Object.fromEntries(
      (container(worker, 'worker').volumeMounts as Obj[]).map((m) => [m.mountPath, m]),
    );
    expect(wm['/data'].readOnly).toBeUndefined();
    expect(wm[config.backupDir!].name).toBe('backup');
    const vm = Object.fromEntries(
      (container(watcher, 'watcher').volumeMounts as Obj[]).map((m) => [m.mountPath, m]),
    );
    expect(vm['/data'].readOnly).toBe(true);
    expect(vm['/backup']).toBeUndefined();
    for (const job of [worker, watcher]) {
      const data = (job.spec.template.spec.volumes as Obj[]).find((v) => v.name === 'data')!;
      expect(data.persistentVolumeClaim.claimName).toBe('kafka-data');
    }
  });

  it('co-locate every pod of the ReadWriteOnce broker volume on one node', () => {
    for (const job of [worker, watcher]) {
      const term =
        job.spec.template.spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0];
      expect(term.topologyKey).toBe('kubernetes.io/hostname');
      for (const [k, v] of Object.entries(term.labelSelector.matchLabels)) {
        expect(job.spec.template.metadata.labels[k]).toBe(v);
      }
    }
  });
});

describe('base: every pod is locked down', () => {
  const pods = podSpecs(base);
  it('has the three workloads', () => {
    expect(pods.map((p) => p.name).sort()).toEqual(['seglift-redis', 'seglift-watcher', 'seglift-worker']);
  });

  for (const pod of pods) {
    it(`${pod.name}: non-root, RuntimeDefault seccomp, read-only root, no capabilities, /tmp emptyDir, no token`, () => {
      const s = pod.spec;
      expect(s.securityContext.runAsNonRoot).toBe(true);
      expect(s.securityContext.runAsUser).toBeGreaterThan(0);
      expect(s.securityContext.seccompProfile).toEqual({ type: 'RuntimeDefault' });
      expect(s.automountServiceAccountToken).toBe(false);
      expect(s.serviceAccountName).toBe('seglift');
      const volumes = Object.fromEntries((s.volumes as Obj[]).map((v) => [v.name, v]));
      for (const c of s.containers as Obj[]) {
        expect(c.securityContext).toEqual({
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          capabilities: { drop: ['ALL'] },
        });
        const tmp = (c.volumeMounts as Obj[]).find((m) => m.mountPath === '/tmp')!;
        expect(volumes[tmp.name].emptyDir).toBeDefined();
        for (const m of c.volumeMounts as Obj[]) expect(volumes[m.name], m.name).toBeDefined();
        expect(c.resources.limits.memory).toMatch(/^\d+Mi$/);
        expect(c.resources.requests.memory).toMatch(/^\d+Mi$/);
      }
      for (const v of Object.values(volumes)) expect(v.hostPath).toBeUndefined();
    });
  }

  it('runs Job pods as the broker user without fsGroup (which would re-own the broker files)', () => {
    for (const pod of pods.filter((p) => p.name !== 'seglift-redis')) {
      expect(pod.spec.securityContext.runAsUser).toBe(1000);
      expect(pod.spec.securityContext.runAsGroup).toBe(1000);
      expect(pod.spec.securityContext.fsGroup).toBeUndefined();
    }
  });

  it('references only PersistentVolumeClaims it defines, plus the broker volume', () => {
    const defined = base.filter((d) => d.kind === 'PersistentVolumeClaim').map((d) => d.metadata.name);
    for (const pod of pods) {
      for (const v of pod.spec.volumes as Obj[]) {
        if (v.persistentVolumeClaim)
          expect([...defined, 'kafka-data']).toContain(v.persistentVolumeClaim.claimName);
      }
    }
  });
});

describe('overlay archive-bucket', () => {
  const own = resources(overlayDir);
  const patches = (kustomization(overlayDir).patches as Obj[])
    .filter((p) => p.path)
    .flatMap((p) => parseFile(join(overlayDir, p.path)));

  it('readies segments by quiet time, the newest of each partition included', () => {
    const config = configOf(patches);
    expect(config.readiness).toEqual({ requireRolled: false, quietMs: 600_000 });
    expect(config.roots).toEqual(['/data']);
    expect(config.worker.concurrency).toBe(1);
  });

  it('mounts the archive from a ReadWriteMany claim and shares the backup volume', () => {
    expect(find(own, 'PersistentVolumeClaim', 'seglift-archive').spec.accessModes).toEqual(['ReadWriteMany']);
    expect(find(patches, 'PersistentVolumeClaim', 'seglift-backup').spec.accessModes).toEqual([
      'ReadWriteMany',
    ]);
    for (const name of ['seglift-worker', 'seglift-watcher']) {
      const data = (find(patches, 'Job', name).spec.template.spec.volumes as Obj[]).find(
        (v) => v.name === 'data',
      )!;
      expect(data.persistentVolumeClaim.claimName).toBe('seglift-archive');
    }
    expect(find(patches, 'Job', 'seglift-worker').spec.parallelism).toBe(8);
  });

  needs(kubectl).it(
    'renders with kubectl kustomize: 8 workers, no affinity, archive volume, base security kept',
    () => {
      const out = execFileSync('kubectl', ['kustomize', overlayDir], { encoding: 'utf8' });
      const docs = parseAllDocuments(out).map((d) => d.toJS() as Obj);
      const worker = find(docs, 'Job', 'seglift-worker');
      expect(worker.metadata.namespace).toBe('seglift');
      expect(worker.spec.parallelism).toBe(8);
      expect(worker.spec.podFailurePolicy.rules.map((r: Obj) => r.action)).toEqual([
        'Ignore',
        'FailJob',
        'Count',
      ]);
      expect(worker.spec.template.spec.containers[0].args).toEqual([
        'seglift-worker',
        '--exit-when-drained',
        '--idle-ms',
        '120000',
      ]);
      for (const job of [worker, find(docs, 'Job', 'seglift-watcher')]) {
        const s = job.spec.template.spec;
        expect(s.affinity).toBeUndefined();
        expect(s.securityContext).toEqual({
          runAsNonRoot: true,
          runAsUser: 10001,
          runAsGroup: 10001,
          seccompProfile: { type: 'RuntimeDefault' },
        });
        const data = (s.volumes as Obj[]).filter((v) => v.name === 'data');
        expect(data).toEqual([{ name: 'data', persistentVolumeClaim: { claimName: 'seglift-archive' } }]);
        expect(s.containers[0].image).toBe('seglift:0.1.0');
      }
      expect(configOf(docs).readiness.requireRolled).toBe(false);
    },
  );

  needs(kubectl).it('base renders with kubectl kustomize into the seglift namespace', () => {
    const out = execFileSync('kubectl', ['kustomize', baseDir], { encoding: 'utf8' });
    const docs = parseAllDocuments(out).map((d) => d.toJS() as Obj);
    expect(docs.map((d) => `${d.kind}/${d.metadata.name}`).sort()).toEqual([
      'ConfigMap/seglift-config',
      'Deployment/seglift-redis',
      'Job/seglift-watcher',
      'Job/seglift-worker',
      'Namespace/seglift',
      'NetworkPolicy/seglift-redis',
      'PersistentVolumeClaim/seglift-backup',
      'PersistentVolumeClaim/seglift-redis',
      'Secret/seglift-redis',
      'Service/seglift-metrics',
      'Service/seglift-redis',
      'ServiceAccount/seglift',
    ]);
    for (const d of docs.filter((x) => x.kind !== 'Namespace')) expect(d.metadata.namespace).toBe('seglift');
  });
});
