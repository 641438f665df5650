/**
 * Kafka 4.x with tiered storage for the tiering scenario (issue 25): the KRaft broker of
 * brokers.ts started on kraft-tiered.properties, with Kafka's LocalTieredStorage (the
 * `tiered-storage` profile of pom.xml) on its classpath and a remote storage directory.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { freePort } from '@seglift/testkit';
import { brokerLogs, JVM_FLAGS, tailOf, template } from './brokers.js';
import { type BrokerUser, CACHE_DIR, chownTree, describeRun, E2E_DIR, run } from './env.js';

/** Kafka 4.3's jars with kafka-storage's test jar, fetched once per pom.xml content. */
export async function tieredJars(): Promise<string> {
  const pom = join(E2E_DIR, 'pom.xml');
  const h = createHash('sha256').update(readFileSync(pom)).digest('hex').slice(0, 12);
  const dir = join(CACHE_DIR, `kafka43-tiered-${h}`);
  if (existsSync(join(dir, '.complete'))) return dir;
  mkdirSync(CACHE_DIR, { recursive: true, mode: 0o755 });
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  const r = await run(
    'mvn',
    [
      '-B',
      '-q',
      '-f',
      pom,
      '-P',
      'tiered-storage',
      'dependency:copy-dependencies',
      `-DoutputDirectory=${tmp}`,
    ],
    { timeoutMs: 600_000 },
  );
  if (r.code !== 0) throw new Error(describeRun('mvn copy-dependencies (tiered-storage)', r));
  for (const f of readdirSync(tmp)) chmodSync(join(tmp, f), 0o644);
  chmodSync(tmp, 0o755);
  rmSync(dir, { recursive: true, force: true });
  renameSync(tmp, dir);
  spawnSync('touch', [join(dir, '.complete')]);
  return dir;
}

export class TieredBroker {
  private proc: ChildProcess | undefined;
  private exited: Promise<number | null> | undefined;
  bootstrap = '';
  logFile = '';
  private starts = 0;

  constructor(
    readonly jars: string,
    readonly logDir: string,
    readonly remoteDir: string,
    readonly workDir: string,
    readonly user: BrokerUser,
  ) {
    mkdirSync(join(workDir, 'jvm-tmp'), { recursive: true, mode: 0o755 });
    mkdirSync(remoteDir, { recursive: true, mode: 0o755 });
    writeFileSync(join(workDir, 'log4j2-broker.properties'), template('log4j2-broker.properties', {}));
    chownTree(join(workDir, 'jvm-tmp'), user);
    chownTree(remoteDir, user);
  }

  private async writeConfig(): Promise<string> {
    const file = join(this.workDir, 'server.properties');
    writeFileSync(
      file,
      template('kraft-tiered.properties', {
        BROKER_PORT: await freePort(),
        CONTROLLER_PORT: await freePort(),
        LOG_DIR: this.logDir,
        REMOTE_DIR: this.remoteDir,
      }),
    );
    return file;
  }

  private javaArgs(): string[] {
    return [
      ...JVM_FLAGS,
      `-Dlog4j2.configurationFile=${join(this.workDir, 'log4j2-broker.properties')}`,
      `-Djava.io.tmpdir=${join(this.workDir, 'jvm-tmp')}`,
      '-cp',
      `${this.jars}/*`,
    ];
  }

  private asUser(): { uid?: number; gid?: number } {
    return process.getuid?.() === 0 ? { uid: this.user.uid, gid: this.user.gid } : {};
  }

  async format(clusterId: string): Promise<void> {
    const config = await this.writeConfig();
    const root = process.getuid?.() === 0;
    const setpriv = ['--reuid', String(this.user.uid), '--regid', String(this.user.gid), '--clear-groups'];
    const args = [...this.javaArgs(), 'kafka.tools.StorageTool', 'format', '-t', clusterId, '-c', config];
    const r = root ? await run('setpriv', [...setpriv, 'java', ...args]) : await run('java', args);
    if (r.code !== 0) throw new Error(describeRun('kafka.tools.StorageTool format', r));
  }

  async start(label: string): Promise<void> {
    if (this.proc && this.proc.exitCode === null) throw new Error('broker already running');
    const config = await this.writeConfig();
    this.bootstrap = `127.0.0.1:${/PLAINTEXT:\/\/127\.0\.0\.1:(\d+)/.exec(readFileSync(config, 'utf8'))![1]}`;
    this.starts++;
    this.logFile = join(this.workDir, `broker-${this.starts}-${label}.log`);
    const fd = openSync(this.logFile, 'a', 0o644);
    const proc = spawn('java', [...this.javaArgs(), 'kafka.Kafka', config], {
      ...this.asUser(),
      cwd: this.workDir,
      env: { PATH: process.env.PATH, HOME: this.workDir, JAVA_HOME: process.env.JAVA_HOME ?? '' },
      stdio: ['ignore', fd, fd],
    });
    closeSync(fd);
    brokerLogs.push(this.logFile);
    this.proc = proc;
    this.exited = new Promise((res) =>
      proc.on('exit', (code, signal) => res(code ?? (signal === 'SIGTERM' ? 143 : null))),
    );
    await this.until(
      () => this.log().includes('Kafka Server started'),
      120_000,
      `Kafka 4 (${label}) to start`,
    );
  }

  /** Polls cond; fails early when the broker exits, with its log's tail. */
  async until(cond: () => boolean, timeoutMs: number, what: string): Promise<void> {
    const end = Date.now() + timeoutMs;
    while (!cond()) {
      if (this.proc && this.proc.exitCode !== null)
        throw new Error(`${what}: the broker exited with ${this.proc.exitCode}\n${tailOf(this.logFile)}`);
      if (Date.now() > end)
        throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}\n${tailOf(this.logFile)}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  log(): string {
    return this.logFile && existsSync(this.logFile) ? readFileSync(this.logFile, 'utf8') : '';
  }

  async stop(): Promise<void> {
    if (!this.proc || this.proc.exitCode !== null) return;
    const proc = this.proc;
    proc.kill('SIGTERM');
    const t = setTimeout(() => proc.kill('SIGKILL'), 90_000);
    const code = await this.exited;
    clearTimeout(t);
    this.proc = undefined;
    if (code === null) throw new Error('Kafka 4 (tiered) did not stop within 90 s of SIGTERM');
    if (!existsSync(join(this.logDir, '.kafka_cleanshutdown')))
      throw new Error(`Kafka 4 stopped without writing .kafka_cleanshutdown\n${tailOf(this.logFile)}`);
  }

  kill(): void {
    if (this.proc?.exitCode === null) this.proc.kill('SIGKILL');
  }
}

/** Every file under LocalTieredStorage's directory with a name ending in ext (segments: `.log`). */
export function remoteFiles(remoteDir: string, ext: string): string[] {
  if (!existsSync(remoteDir)) return [];
  return readdirSync(remoteDir, { recursive: true })
    .map(String)
    .filter((f) => f.endsWith(ext))
    .sort();
}
