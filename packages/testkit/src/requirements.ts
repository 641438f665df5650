/**
 * Everything outside the repository that the suite needs, each with why; `bash
 * scripts/bootstrap.sh --tests` installs the installable ones. Tests gate on these through
 * `needs(...)` (requires.ts).
 */
import { type ChildProcessByStdio, spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { files, KAFKAJS_FIXTURES, program, REAL_FIXTURES, REPO_ROOT, requirement } from './requires.js';

export const redisServer = program(
  'redis-server',
  ['--version'],
  'the queue, lock and worker tests run a throwaway Redis (Debian package redis-server)',
);

/**
 * The first python3 on PATH that imports `modules`: not only the first python3, because Debian's
 * (/usr/bin, where the Debian packages install) is often behind a pyenv or venv one.
 */
function pythonWith(modules: string): string | undefined {
  const seen = new Set<string>();
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const exe = path.join(dir || '.', 'python3');
    if (!existsSync(exe) || seen.has(exe)) continue;
    seen.add(exe);
    if (spawnSync(exe, ['-c', `import ${modules}`], { stdio: 'ignore', timeout: 30_000 }).status === 0)
      return exe;
  }
  return undefined;
}

let kafkaPythonExe: string | undefined;
export const kafkaPython = requirement(
  'kafka-python',
  'the cross-implementation checks decode our output with kafka-python and decode its output with ours ' +
    '(Debian packages python3-kafka python3-snappy python3-lz4 python3-zstandard python3-xxhash)',
  () => {
    kafkaPythonExe = pythonWith(
      'kafka.codec, kafka.record.legacy_records, snappy, lz4.frame, zstandard, xxhash',
    );
    return kafkaPythonExe === undefined
      ? 'no python3 on PATH imports kafka, snappy, lz4, zstandard and xxhash'
      : undefined;
  },
);
/** The interpreter that has kafka-python (call only where `kafkaPython` is met). */
export function kafkaPythonPath(): string {
  if (!kafkaPython.present || kafkaPythonExe === undefined)
    throw new Error(`kafka-python: ${kafkaPython.missing}`);
  return kafkaPythonExe;
}

let snappyPythonExe: string | undefined;
export const pythonSnappy = requirement(
  'python3-snappy',
  'snappy payloads are checked with a second snappy implementation besides ours (Debian package python3-snappy)',
  () => {
    snappyPythonExe = pythonWith('snappy');
    return snappyPythonExe === undefined ? 'no python3 on PATH imports snappy' : undefined;
  },
);
export function pythonSnappyPath(): string {
  if (!pythonSnappy.present || snappyPythonExe === undefined)
    throw new Error(`python3-snappy: ${pythonSnappy.missing}`);
  return snappyPythonExe;
}

export const zstdCli = program(
  'zstd',
  ['--version'],
  'zstd payloads are checked with the reference zstd implementation besides ours (Debian package zstd)',
);
export const lz4Cli = program(
  'lz4',
  ['--version'],
  'lz4 payloads are checked with the reference lz4 implementation besides ours (Debian package lz4)',
);

export const tmux = program(
  'tmux',
  ['-V'],
  'the progress bar is checked in a real terminal, a tmux pane (Debian package tmux)',
);
export const npm = program(
  'npm',
  ['--version'],
  'a packed seglift (scripts/pack.sh) is installed with `npm install -g`, as on a broker host (npm comes with Node.js)',
);

export const kubectl = program(
  'kubectl',
  ['version', '--client'],
  'the deploy/ manifests are rendered with `kubectl kustomize` (kubectl comes with the machine image; ' +
    "Debian's kubernetes-client is too old for these kustomizations)",
);

export const realFixtures = requirement(
  '../shared/fixtures/real',
  'real broker segments are the only inputs written by Kafka itself (read from beside the checkout, or from $SEGLIFT_TEST_SHARED_DIR/fixtures/real; never copied)',
  () => (realSegmentLogs().length > 0 ? undefined : `no *.log under ${REAL_FIXTURES}`),
);

/** The real broker segment files (`*.log`, sorted), or none when ../shared is absent. */
export function realSegmentLogs(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.log')) out.push(p);
    }
  };
  if (existsSync(REAL_FIXTURES)) walk(REAL_FIXTURES);
  return out.sort();
}
export const kafkajsFixtures = files(
  '../shared/fixtures/kafkajs',
  "kafkajs's captured protocol fixtures are vectors written by another implementation (beside the checkout, or under $SEGLIFT_TEST_SHARED_DIR)",
  [KAFKAJS_FIXTURES],
);

export const root = requirement(
  'root',
  'giving files another owner (chown) needs root, as when seglift runs on a broker host',
  () => (process.getuid?.() === 0 ? undefined : 'not running as root'),
);

/**
 * A second process holding a process-associated fcntl lock (Python's `fcntl.lockf`, an F_SETLK of
 * the whole file: the lock a JVM's `FileChannel.tryLock` takes, so a Kafka broker's `.lock`).
 */
export const python3 = program(
  'python3',
  ['--version'],
  "holds a log dir's .lock with fcntl.lockf (the lock a Kafka broker's JVM takes) from another process",
);

/**
 * Holds `lockPath` as a running Kafka broker holds its log dir's `.lock` (a process-associated
 * F_SETLK of the whole file, from another process; created when absent). Resolves once it is held;
 * end the child's stdin to release it. Call only where `python3` is met.
 */
export async function holdLockAsABroker(
  lockPath: string,
): Promise<ChildProcessByStdio<Writable, Readable, null>> {
  if (!existsSync(lockPath)) writeFileSync(lockPath, '');
  const holder = spawn(
    'python3',
    [
      '-c',
      'import fcntl,sys\nf=open(sys.argv[1],"r+")\nfcntl.lockf(f,fcntl.LOCK_EX)\nprint("locked",flush=True)\nsys.stdin.read()',
      lockPath,
    ],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  await new Promise<void>((resolve, reject) => {
    holder.stdout.once('data', () => resolve());
    holder.once('exit', (code) =>
      reject(new Error(`the python3 lock holder of ${lockPath} exited (${code})`)),
    );
  });
  return holder;
}

/**
 * The Kafka cluster suite's clients besides Kafka's Java one (e2e/kafka/cluster.test.ts):
 * librdkafka through the confluent-kafka Python package, in the venv scripts/bootstrap.sh --tests makes (pip from
 * PyPI; it bundles librdkafka), and franz-go, built with the Go toolchain from the Go module proxy.
 */
export const CLIENTS_VENV =
  process.env.SEGLIFT_CLIENTS_VENV ?? path.join(REPO_ROOT, 'e2e', 'kafka', 'clients', '.venv');
export const confluentKafka = requirement(
  'confluent-kafka',
  'the cluster suite reads the migrated topics with librdkafka (pip install confluent-kafka into ' +
    'e2e/kafka/clients/.venv: bash scripts/bootstrap.sh --tests)',
  () =>
    spawnSync(path.join(CLIENTS_VENV, 'bin', 'python3'), ['-c', 'import confluent_kafka'], {
      stdio: 'ignore',
      timeout: 30_000,
    }).status === 0
      ? undefined
      : `${CLIENTS_VENV}/bin/python3 cannot import confluent_kafka`,
);
export const goToolchain = program(
  'go',
  ['version'],
  'the cluster suite builds a franz-go reader (e2e/kafka/clients/franz; modules from the Go module ' +
    "proxy; Go 1.26+, which comes with this kind of machine: Debian's golang is too old)",
);
