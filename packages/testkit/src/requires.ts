/**
 * "Require or skip": the one rule for tests that need something outside the repository (a
 * program, a Python module, ../shared fixtures, root, a built dist/).
 * - Present: the tests run.
 * - Missing with CI set: the tests are replaced by one failing test that names what is missing
 *   and why it is needed. CI must never pass while a cross-check silently did not run.
 * - Missing without CI: the tests are skipped with the reason in their meta (scripts/test.mjs
 *   lists every skipped test with it) and the reason is printed once per test file.
 * Probes run once, lazily, and are cached.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it, type TestContext } from 'vitest';

declare module 'vitest' {
  interface TaskMeta {
    /** Why this test was skipped (set by the requirement helpers). */
    skipReason?: string;
    /** The bug a `knownBug` test shows (it asserts the correct behaviour and fails today). */
    knownBug?: string;
  }
}

/** CI runs (CI=true, as .ci/run sets) turn every missing requirement into a failure. */
export const IN_CI = !['', '0', 'false', 'no'].includes((process.env.CI ?? '').trim().toLowerCase());

/** The checkout (packages/testkit/{src,dist}/ → ../../..). */
export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
/**
 * Fixtures shared beside the checkout (read-only, never copied into the repo); a clone elsewhere
 * names them with SEGLIFT_TEST_SHARED_DIR.
 */
export const SHARED_DIR = path.resolve(
  process.env.SEGLIFT_TEST_SHARED_DIR || path.join(REPO_ROOT, '..', 'shared'),
);
export const REAL_FIXTURES = path.join(SHARED_DIR, 'fixtures', 'real');
export const KAFKAJS_FIXTURES = path.join(SHARED_DIR, 'fixtures', 'kafkajs');

export interface Requirement {
  /** What is needed, e.g. 'redis-server'. */
  readonly name: string;
  /** Why the tests need it, and how to get it. */
  readonly why: string;
  /** Undefined when present; otherwise what the probe found missing. */
  readonly missing: string | undefined;
  readonly present: boolean;
}

/**
 * A requirement whose `probe` returns undefined when it is met, or what is missing. The probe
 * runs on first use only (an unused requirement costs nothing).
 */
export function requirement(name: string, why: string, probe: () => string | undefined): Requirement {
  let probed = false;
  let missing: string | undefined;
  const get = () => {
    if (!probed) {
      probed = true;
      try {
        missing = probe();
      } catch (err) {
        missing = `probe failed: ${(err as Error).message.split('\n')[0]}`;
      }
    }
    return missing;
  };
  return {
    name,
    why,
    get missing() {
      return get();
    },
    get present() {
      return get() === undefined;
    },
  };
}

/** Undefined when `cmd args` exits 0, else why not (not found, or its exit status and stderr). */
export function commandMissing(cmd: string, args: string[]): string | undefined {
  const r = spawnSync(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'], timeout: 30_000 });
  if (r.error)
    return `\`${cmd}\` cannot be run (${(r.error as NodeJS.ErrnoException).code ?? r.error.message})`;
  if (r.status !== 0) {
    const err = String(r.stderr ?? '')
      .trim()
      .split('\n')
      .pop();
    return `\`${[cmd, ...args].join(' ')}\` exited ${r.status ?? r.signal}${err ? `: ${err}` : ''}`;
  }
  return undefined;
}

/** A requirement on a program: present when `cmd args` exits 0. */
export function program(cmd: string, args: string[], why: string, name = cmd): Requirement {
  return requirement(name, why, () => commandMissing(cmd, args));
}

/** A requirement on files or directories (absolute paths). */
export function files(name: string, why: string, paths: readonly string[]): Requirement {
  return requirement(name, why, () => {
    const absent = paths.filter((p) => !existsSync(p));
    return absent.length === 0 ? undefined : `missing: ${absent.join(', ')}`;
  });
}

/** Built output the tests spawn (`pnpm test` builds first; a bare `vitest` run may not). */
export function built(...paths: string[]): Requirement {
  return files('built dist/', 'these tests run the compiled programs: run `pnpm build` first', paths);
}

// Under scripts/test.mjs the closing summary lists every skip with its reason instead.
const sink = (line: string) => {
  if (!process.env.SEGLIFT_SKIP_SUMMARY) console.warn(line);
};
const printed = new Set<string>();

function unmet(reqs: readonly Requirement[]): Requirement[] {
  return reqs.filter((r) => !r.present);
}

/** One line naming every unmet requirement, what is missing and why it is needed. */
export function describeUnmet(reqs: readonly Requirement[]): string {
  return unmet(reqs)
    .map((r) => `${r.name} is missing (${r.missing}); needed because ${r.why}`)
    .join('; ');
}

/** The error a CI run fails with. */
export class MissingRequirementError extends Error {
  constructor(reqs: readonly Requirement[]) {
    super(`CI requires ${describeUnmet(reqs)}`);
    this.name = 'MissingRequirementError';
  }
}

function noteSkip(reqs: readonly Requirement[]): string {
  const reason = describeUnmet(reqs);
  if (!printed.has(reason)) {
    printed.add(reason);
    sink(`skipped: ${reason}`);
  }
  return reason;
}

type Body = () => unknown;

export interface Gate {
  /** True when every requirement is met. */
  readonly ok: boolean;
  /** A describe that runs when the requirements are met (see the module comment otherwise). */
  describe(name: string, body: () => void): void;
  /** An it that runs when the requirements are met. */
  it(name: string, body: (ctx: TestContext) => unknown, timeout?: number): void;
  /**
   * For a test that finds out at run time that it cannot check its property: fails under CI,
   * else skips with the reason recorded.
   */
  check(ctx: TestContext): void;
}

/** The gate of tests that need every one of `reqs`. */
export function needs(...reqs: Requirement[]): Gate {
  const ok = () => unmet(reqs).length === 0;
  const failing = (name: string) =>
    it(`${name} [requires ${unmet(reqs)
      .map((r) => r.name)
      .join(', ')}]`, () => {
      throw new MissingRequirementError(reqs);
    });
  return {
    get ok() {
      return ok();
    },
    describe(name, body) {
      if (ok()) describe(name, body);
      else if (IN_CI) describe(name, () => failing('every test of this suite'));
      else describe(name, { skip: true, meta: { skipReason: noteSkip(reqs) } }, body);
    },
    it(name, body, timeout) {
      if (ok()) it(name, body as Body, timeout);
      else if (IN_CI) failing(name);
      else it(name, { skip: true, meta: { skipReason: noteSkip(reqs) } }, body as Body);
    },
    check(ctx) {
      if (ok()) return;
      if (IN_CI) throw new MissingRequirementError(reqs);
      ctx.task.meta.skipReason = noteSkip(reqs);
      ctx.skip(ctx.task.meta.skipReason);
    },
  };
}

/**
 * A test of the correct behaviour that fails today because of `bug` (what is wrong, where it is
 * tracked). It runs as an expected failure: the suite stays green, scripts/test.mjs lists it, and
 * it fails the day the bug is fixed, so that it is turned into a plain `it`.
 */
export function knownBug(
  bug: string,
  name: string,
  body: (ctx: TestContext) => unknown,
  timeout?: number,
): void {
  it.fails(`${name} [known bug]`, { meta: { knownBug: bug }, timeout }, body as Body);
}
