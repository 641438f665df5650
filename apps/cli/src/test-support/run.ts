import { PassThrough } from 'node:stream';
import { runCli } from '../cli.js';
import type { CliIO } from '../io.js';

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs seglift in-process with captured stdout/stderr. */
export async function run(argv: string[], env: NodeJS.ProcessEnv = {}): Promise<RunResult> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  stdout.on('data', (b: Buffer) => out.push(b));
  stderr.on('data', (b: Buffer) => err.push(b));
  const io: CliIO = { stdout, stderr, stderrIsTTY: false, env, cwd: process.cwd() };
  const code = await runCli(argv, io);
  return { code, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') };
}

export function lines(text: string): string[] {
  return text.split('\n').filter((l) => l.length > 0);
}
