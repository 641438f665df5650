/**
 * The test seams of @seglift/segment, not part of its API (never built, see tsconfig.json):
 * every filesystem change observed or crashed after (fsops.ts), and convert's hook before
 * verify. SEGLIFT_TEST_KILL_AFTER / SEGLIFT_TEST_HOLD_AFTER (fsops.ts) and
 * SEGLIFT_TEST_THREAD_CRASH (conversion-thread.ts) are read from the environment.
 */
export { crashFsOps, type FsOp, type FsOpKind, observeFsOps, SimulatedCrash } from '../files/fsops.js';
export type { ConvertTestHooks } from '../rewrite/rewrite.js';
