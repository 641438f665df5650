/**
 * Fault injection for tests that run seglift in real processes: `node --import` this module
 * (faults.ts: `faultEnv`) and it wraps each thread's filesystem changes (the FsOps of
 * @seglift/segment's files/fsops.ts, through the FS_OPS_HOOK it reads at load) by the rules
 * below, read from the environment. Without one of them it installs nothing.
 *
 * SEGLIFT_TEST_KILL_AFTER:
 *   `<op>:<suffix>[@k]`  SIGKILL right after the k-th (default 1st) operation of kind <op> whose
 *                        path ends with <suffix>, e.g. `rename:.log.swap`
 *   `#N`                 SIGKILL right after the N-th filesystem change of this thread
 * SEGLIFT_TEST_HOLD_AFTER, same syntax, with SEGLIFT_TEST_HOLD_WHILE=<file>: right after that
 *   operation, wait while <file> exists (the event loop keeps running: aborts and lock renewals go
 *   on), so a test acts on a conversion held at a known point instead of racing it.
 * SEGLIFT_TEST_THREAD_CRASH=<text>: a conversion thread (never the main thread) ends at once, with
 *   exit code 70 (as an out-of-memory or native crash would), before its first change of a path
 *   containing <text>, so a pool's handling of a dead thread can be tested.
 */
import { existsSync } from 'node:fs';
import { isMainThread } from 'node:worker_threads';

const HOOK = Symbol.for('@seglift/segment.fsOps');

function parseRule(variable) {
  const spec = process.env[variable];
  if (!spec) return undefined;
  const n = /^#(\d+)$/.exec(spec);
  if (n) return { nth: Number(n[1]) };
  const m = /^([a-z-]+):([^@]+)(?:@(\d+))?$/.exec(spec);
  if (!m) throw new Error(`${variable}: cannot parse '${spec}' (<op>:<suffix>[@k] or #N)`);
  return { kind: m[1], suffix: m[2], nth: m[3] ? Number(m[3]) : 1 };
}

const killRule = parseRule('SEGLIFT_TEST_KILL_AFTER');
const holdRule = parseRule('SEGLIFT_TEST_HOLD_AFTER');
const holdWhile = process.env.SEGLIFT_TEST_HOLD_WHILE;
const exitOn = isMainThread ? undefined : process.env.SEGLIFT_TEST_THREAD_CRASH;

if (killRule || (holdRule && holdWhile) || exitOn) {
  let opCount = 0;
  /** Counts the operations matching a rule; true at its nth. */
  const matcher = (rule) => {
    let seen = 0;
    return (op) =>
      rule !== undefined &&
      (rule.kind === undefined
        ? opCount === rule.nth
        : op.kind === rule.kind && op.path.endsWith(rule.suffix) && ++seen === rule.nth);
  };
  const killHere = matcher(killRule);
  const holdHere = matcher(holdRule);

  const before = (path) => {
    if (exitOn && path.includes(exitOn)) process.exit(70);
  };
  const after = async (op) => {
    opCount++;
    if (killHere(op)) {
      process.kill(process.pid, 'SIGKILL');
      // SIGKILL is delivered before the kill call returns to this thread in practice; never go on.
      for (;;) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1000);
    }
    if (holdWhile && holdHere(op)) {
      while (existsSync(holdWhile)) await new Promise((r) => setTimeout(r, 20));
    }
  };
  const change =
    (kind, f, at = 0) =>
    async (...a) => {
      before(a[at]);
      const r = await f(...a);
      await after({ kind, path: a[at] });
      return r;
    };

  globalThis[HOOK] = (inner) => ({
    ...inner,
    async create(p, flags, mode) {
      before(p);
      const fh = await inner.create(p, flags, mode);
      try {
        await after({ kind: 'create', path: p });
      } catch (err) {
        await fh.close();
        throw err;
      }
      return fh;
    },
    write: change('write', inner.write, 1),
    fsync: change('fsync', inner.fsync, 1),
    fsyncDir: change('fsync-dir', inner.fsyncDir),
    rename: change('rename', inner.rename, 1),
    unlink: change('unlink', inner.unlink),
    link: change('link', inner.link, 1),
    utimes: change('utimes', inner.utimes),
    setMtime: change('utimes', inner.setMtime),
    chown: change('chown', inner.chown),
    chmod: change('chmod', inner.chmod),
    async mkdir(p) {
      before(p);
      const made = await inner.mkdir(p);
      if (made !== undefined) await after({ kind: 'mkdir', path: p });
      return made;
    },
    rmdir: change('rmdir', inner.rmdir),
  });
}
