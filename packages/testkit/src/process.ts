import { type ChildProcess, spawn } from 'node:child_process';

/** A node program started by a test: its merged stdout+stderr so far, and how it ended. */
export interface NodeProcess {
  child: ChildProcess;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Runs `node script ...args` with only PATH and `env` in its environment. */
export function spawnNode(script: string, args: string[], env: Record<string, string>): NodeProcess {
  const child = spawn(process.execPath, [script, ...args], {
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
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
