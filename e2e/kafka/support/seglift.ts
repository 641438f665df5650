/** seglift run as an operator runs it: the built commands (launchers: node with the pipeline's flags). */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT, type RunResult, run } from './env.js';

export const CLI = join(REPO_ROOT, 'apps/cli/dist/seglift');
export const WATCHER = join(REPO_ROOT, 'apps/watcher/dist/seglift-watcher');
export const WORKER = join(REPO_ROOT, 'apps/worker/dist/seglift-worker');

export function built(): boolean {
  return [CLI, WATCHER, WORKER].every(existsSync);
}

export interface SegmentReport {
  type: 'segment';
  path: string;
  result: string;
  outPath?: string;
}

export interface MigrateResult extends RunResult {
  segments: SegmentReport[];
  /** The `--json` summary line (its `stage` counts on a prepare or commit). */
  summary:
    | {
        converted: number;
        skipped: number;
        failed: number;
        stage?: { staged: number; alreadyStaged: number; discarded: number; failedCheck: number };
      }
    | undefined;
}

export async function seglift(args: string[], env: Record<string, string> = {}): Promise<MigrateResult> {
  const r = await run(CLI, args, {
    env: { ...process.env, ...env },
    timeoutMs: 300_000,
  });
  const lines = r.stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l));
  return {
    ...r,
    segments: lines.filter((l) => l.type === 'segment'),
    summary: lines.find((l) => l.type === 'summary'),
  };
}

/** sha256 of every file under a directory, by relative path (to prove a tree was left alone). */
export function treeDigest(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string, rel: string) => {
    for (const f of readdirSync(d).sort()) {
      const p = join(d, f);
      if (statSync(p).isDirectory()) walk(p, `${rel}${f}/`);
      else out[`${rel}${f}`] = createHash('sha256').update(readFileSync(p)).digest('hex');
    }
  };
  if (existsSync(dir)) walk(dir, '');
  return out;
}
