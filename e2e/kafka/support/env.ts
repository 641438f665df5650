/**
 * What the oracle suite needs from the machine: a JDK (17+) and Maven, the Kafka jars fetched by
 * Maven from e2e/kafka/pom.xml into a cache directory the broker user can read, the Java harness
 * compiled against each broker line's jars, and a non-root user to run brokers as.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const E2E_DIR = resolve(fileURLToPath(new URL('..', import.meta.url)));
export const REPO_ROOT = resolve(E2E_DIR, '../..');

/** The broker lines the suite runs; a profile of pom.xml each. */
export type KafkaLine = 'kafka4' | 'kafka3';

function tool(cmd: string, args: string[]): string | undefined {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  return r.status === 0 ? `${r.stdout}${r.stderr}` : undefined;
}

/** Why the suite cannot run here (undefined when it can). */
export function missingTools(): string | undefined {
  const java = tool('java', ['-version']);
  const major = java ? Number(/version "(\d+)/.exec(java)?.[1] ?? 0) : 0;
  if (major < 17) return java ? `java ${major} found, Kafka 4 needs 17+` : 'no java on PATH';
  if (!tool('javac', ['-version'])) return 'no javac on PATH (a JDK is needed, not a JRE)';
  if (!tool('mvn', ['-v'])) return 'no mvn on PATH';
  return undefined;
}

/** Shared between runs (and readable by the broker user, unlike /root/.m2). */
export const CACHE_DIR = process.env.SEGLIFT_KAFKA_CACHE ?? '/var/tmp/seglift-kafka-jars';

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end (or kills it after timeoutMs), capturing its output. */
export function run(
  cmd: string,
  args: string[],
  opts: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<RunResult> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(cmd, args, {
      cwd: opts.cwd,
      env: opts.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += String(d);
    });
    child.stderr.on('data', (d) => {
      stderr += String(d);
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 300_000);
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolvePromise({ code, signal, stdout, stderr });
    });
  });
}

export function describeRun(what: string, r: RunResult): string {
  const tail = (s: string) => s.split('\n').slice(-40).join('\n');
  return `${what} exited with ${r.code ?? r.signal}\n--- stdout (tail)\n${tail(r.stdout)}\n--- stderr (tail)\n${tail(r.stderr)}`;
}

const hash = (...parts: (string | Buffer)[]) => {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest('hex').slice(0, 12);
};

/** Directory holding every jar of one broker line (fetched once per pom.xml content). */
export async function kafkaJars(line: KafkaLine): Promise<string> {
  const pom = join(E2E_DIR, 'pom.xml');
  const dir = join(CACHE_DIR, `${line}-${hash(readFileSync(pom))}`);
  if (existsSync(join(dir, '.complete'))) return dir;
  mkdirSync(CACHE_DIR, { recursive: true, mode: 0o755 });
  chmodSync(CACHE_DIR, 0o755);
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  const r = await run(
    'mvn',
    ['-B', '-q', '-f', pom, '-P', line, 'dependency:copy-dependencies', `-DoutputDirectory=${tmp}`],
    { timeoutMs: 600_000 },
  );
  if (r.code !== 0) throw new Error(describeRun(`mvn copy-dependencies (${line})`, r));
  for (const f of readdirSync(tmp)) chmodSync(join(tmp, f), 0o644);
  chmodSync(tmp, 0o755);
  rmSync(dir, { recursive: true, force: true });
  renameSync(tmp, dir);
  // Written last: a fetch cut short is fetched again.
  spawnSync('touch', [join(dir, '.complete')]);
  return dir;
}

/** The harness compiled against one line's jars, cached by source and jar set. */
export async function harnessClasses(line: KafkaLine, jars: string): Promise<string> {
  const src = join(E2E_DIR, 'java/Oracle.java');
  const dir = join(CACHE_DIR, `classes-${line}-${hash(readFileSync(src), jars)}`);
  if (existsSync(join(dir, 'Oracle.class'))) return dir;
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  const r = await run('javac', ['-nowarn', '-d', tmp, '-cp', `${jars}/*`, src]);
  if (r.code !== 0) throw new Error(describeRun(`javac Oracle.java (${line})`, r));
  spawnSync('chmod', ['-R', 'a+rX', tmp]);
  rmSync(dir, { recursive: true, force: true });
  renameSync(tmp, dir);
  return dir;
}

/** Brokers run as a non-root user that owns their log directory, as in production. */
export interface BrokerUser {
  uid: number;
  gid: number;
  name: string;
}

export function brokerUser(): BrokerUser {
  const uid = process.getuid?.() ?? 0;
  if (uid !== 0) return { uid, gid: process.getgid?.() ?? uid, name: 'current user' };
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('nobody:'));
  if (!line) throw new Error('running as root and no user "nobody" to run the brokers as');
  const [, , u, g] = line.split(':');
  return { uid: Number(u), gid: Number(g), name: 'nobody' };
}

/** Gives a tree to the broker user (the log directory before a broker first starts). */
export function chownTree(dir: string, user: BrokerUser): void {
  const r = spawnSync('chown', ['-R', `${user.uid}:${user.gid}`, dir]);
  if (r.status !== 0) throw new Error(`chown -R ${dir}: ${r.stderr}`);
}

/** A copy that keeps owners, modes and mtimes (cp -a), as a restore from backup would. */
export function copyTree(from: string, to: string): void {
  const r = spawnSync('cp', ['-a', from, to]);
  if (r.status !== 0) throw new Error(`cp -a ${from} ${to}: ${r.stderr}`);
}
