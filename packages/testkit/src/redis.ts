/**
 * Test helper: a throwaway redis-server on a free loopback port, no persistence. Tests that need
 * it are gated with `needs(redisServer)` from @seglift/testkit (a failure under CI when missing).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createConnection, createServer } from 'node:net';
import { redisServer } from './requirements.js';
import { describeUnmet } from './requires.js';

export interface TestRedis {
  url: string;
  port: number;
  /** Stops the server (SIGTERM, then SIGKILL after 2 s). */
  stop(): Promise<void>;
  /** Stops and starts it again on the same port (data is lost: no persistence). */
  restart(opts?: { downMs?: number }): Promise<void>;
}

export async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

export async function startRedis(): Promise<TestRedis> {
  if (!redisServer.present) throw new Error(describeUnmet([redisServer]));
  const port = await freePort();
  let proc: ChildProcess | undefined = await launch(port);
  const stop = async (): Promise<void> => {
    const p = proc;
    proc = undefined;
    if (p === undefined || p.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => p.once('exit', () => resolve()));
    p.kill('SIGTERM');
    const t = setTimeout(() => p.kill('SIGKILL'), 2000);
    await exited;
    clearTimeout(t);
  };
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    stop,
    async restart(opts = {}) {
      await stop();
      if (opts.downMs) await new Promise((r) => setTimeout(r, opts.downMs));
      proc = await launch(port);
    },
  };
}

async function launch(port: number): Promise<ChildProcess> {
  const proc = spawn(
    'redis-server',
    [
      '--port',
      String(port),
      '--save',
      '',
      '--appendonly',
      'no',
      '--bind',
      '127.0.0.1',
      '--loglevel',
      'warning',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  proc.stderr?.on('data', (d) => {
    stderr += String(d);
  });
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) throw new Error(`redis-server exited with ${proc.exitCode}: ${stderr}`);
    if (await ping(port)) return proc;
    await new Promise((r) => setTimeout(r, 50));
  }
  proc.kill('SIGKILL');
  throw new Error(`redis-server on port ${port} did not answer PING: ${stderr}`);
}

/** Sends an inline PING and waits for +PONG. */
function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = createConnection({ port, host: '127.0.0.1' });
    const done = (ok: boolean) => {
      sock.destroy();
      resolve(ok);
    };
    sock.setTimeout(500, () => done(false));
    sock.on('error', () => done(false));
    sock.on('connect', () => sock.write('PING\r\n'));
    sock.on('data', (d) => done(String(d).startsWith('+PONG')));
  });
}
