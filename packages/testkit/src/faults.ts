/**
 * Faults in real seglift processes (fault-preload.mjs): the environment a test gives a process it
 * spawns so that the process, and each of its conversion threads, loads them.
 */
import { fileURLToPath } from 'node:url';

/** src/fault-preload.mjs (from src/ or dist/: it is not built), for `node --import`. */
export const FAULT_PRELOAD = fileURLToPath(new URL('../src/fault-preload.mjs', import.meta.url));

/**
 * `env` (SEGLIFT_TEST_KILL_AFTER, SEGLIFT_TEST_HOLD_AFTER and SEGLIFT_TEST_HOLD_WHILE,
 * SEGLIFT_TEST_THREAD_CRASH: fault-preload.mjs) with NODE_OPTIONS importing the preload.
 */
export function faultEnv(
  env: Record<string, string>,
  base: NodeJS.ProcessEnv = process.env,
): Record<string, string> {
  const options = [base.NODE_OPTIONS, `--import=${FAULT_PRELOAD}`].filter(Boolean).join(' ');
  return { ...env, NODE_OPTIONS: options };
}
