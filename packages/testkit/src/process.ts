import { type ChildProcess, spawn } from 'node:child_process';

/** A program started by a test: its merged stdout+stderr so far, and how it ended. */
export interface NodeProcess {
  child: ChildProcess;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Runs an executable (a program's launcher, `apps/<app>/dist/<program>`: node with the pipeline's
 * flags, as operators run it) with only PATH and `env` in its environment.
 */
export function spawnProgram(file: string, args: string[], env: Record<string, string>): NodeProcess {
  return track(
    spawn(file, args, { env: { PATH: process.env.PATH, ...env }, stdio: ['ignore', 'pipe', 'pipe'] }),
  );
}

/** Runs `node script ...args` with only PATH and `env` in its environment. */
export function spawnNode(script: string, args: string[], env: Record<string, string>): NodeProcess {
  return track(
    spawn(process.execPath, [script, ...args], {
      env: { PATH: process.env.PATH, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
}

function track(child: ChildProcess): NodeProcess {
  let out = '';
  child.stdout?.on('data', (d) => {
    out += String(d);
  });
  child.stderr?.on('data', (d) => {
    out += String(d);
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) =>
    child.on('exit', (code, signal) => res({ code, signal })),
  );
  return { child, output: () => out, exited };
}
