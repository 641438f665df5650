import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { type CodecName, codecId, validateLevel } from '@seglift/format';
import { conversionSetting } from '@seglift/segment';
import type * as z from 'zod/mini';
import { ConfigError, type ConfigProblem } from './errors.js';
import { nearest } from './flags.js';
import { CODECS, CONFIG_FILE_ENV, ENV_VARS, type EnvType, OTHER_ENV_VARS } from './names.js';
import { redactValue } from './redact.js';
import { type Config, ConfigSchema } from './schema.js';

/** The test harness's fault injection (SEGLIFT_TEST_KILL_AFTER, ...). */
const TEST_ENV_PREFIX = 'SEGLIFT_TEST_';

export interface LoadConfigOptions {
  /** YAML (.yaml/.yml) or JSON (.json) file; defaults to $SEGLIFT_CONFIG when set. */
  file?: string;
  env?: NodeJS.ProcessEnv;
  /** Highest precedence; nested objects or dotted keys (`{ 'worker.concurrency': 4 }`). */
  flags?: Record<string, unknown>;
}

export interface LoadedConfig {
  config: Config;
  /** Dotted field path -> where its value came from (fields left at their default are absent). */
  sources: Record<string, string>;
  /**
   * Things that do not stop a run but may not be what the operator meant: a SEGLIFT_* variable
   * that is no setting (a misspelt one would otherwise be ignored without a word). The programs
   * print or log each.
   */
  warnings: string[];
}

/**
 * defaults < SEGLIFT_* environment < flags, synchronously, reading no config file (a test's or a
 * tool's settings); throws one ConfigError listing every problem. The programs use
 * loadConfigWithSources, which reads the config file too.
 */
export function loadConfig(options: Omit<LoadConfigOptions, 'file'> = {}): Config {
  const env = options.env ?? process.env;
  const file = (options as LoadConfigOptions).file ?? nonEmpty(env[CONFIG_FILE_ENV]);
  if (file !== undefined)
    throw new Error(`loadConfig reads no config file (${file}): use loadConfigWithSources`);
  return settingsFrom(undefined, env, options.flags).config;
}

/**
 * defaults < config file < SEGLIFT_* environment < flags; throws one ConfigError listing every
 * problem. Asynchronous because a YAML file's parser is loaded only to read one: a run without a
 * config file (or with a JSON one) never loads it (start-up: bench/startup.bench.mjs).
 */
export async function loadConfigWithSources(options: LoadConfigOptions = {}): Promise<LoadedConfig> {
  const env = options.env ?? process.env;
  const path = options.file ?? nonEmpty(env[CONFIG_FILE_ENV]);
  return settingsFrom(path === undefined ? undefined : await readConfigFile(path), env, options.flags);
}

/** What a config file gave: its settings, or the problem reading it. */
interface ConfigFile {
  path: string;
  doc?: Record<string, unknown>;
  problem?: ConfigProblem;
}

function settingsFrom(
  file: ConfigFile | undefined,
  env: NodeJS.ProcessEnv,
  flags: Record<string, unknown> | undefined,
): LoadedConfig {
  const problems: ConfigProblem[] = [];
  const merged: Record<string, unknown> = {};
  const sources: Record<string, string> = {};

  if (file?.problem !== undefined) problems.push(file.problem);
  if (file?.doc !== undefined) mergeInto(merged, file.doc, sources, `file ${file.path}`, []);

  for (const v of ENV_VARS) {
    const raw = env[v.env];
    if (raw === undefined || raw === '') continue;
    setPath(merged, v.path.split('.'), convertEnv(raw, v.type));
    sources[v.path] = `env ${v.env}`;
  }

  if (flags !== undefined) mergeInto(merged, expandDotted(flags), sources, 'flag', []);

  const result = validateConfig(merged, sources);
  if (!result.ok) problems.push(...result.problems);
  if (problems.length > 0 || !result.ok) throw new ConfigError(problems);
  return { config: result.config, sources, warnings: unknownEnvWarnings(env) };
}

/**
 * One warning per SEGLIFT_* variable that is neither a setting nor one of the tools' variables,
 * naming the setting it was probably meant to be: a misspelt key in a config file is an error
 * (the schema is strict), a misspelt variable must not go unnoticed either.
 */
export function unknownEnvWarnings(env: NodeJS.ProcessEnv): string[] {
  const known = [CONFIG_FILE_ENV, ...ENV_VARS.map((v) => v.env)];
  const warnings: string[] = [];
  for (const name of Object.keys(env).sort()) {
    if (!name.startsWith('SEGLIFT_') || known.includes(name) || OTHER_ENV_VARS.includes(name)) continue;
    if (name.startsWith(TEST_ENV_PREFIX)) continue;
    const guess = nearest(name, known);
    warnings.push(
      `${name} is not a seglift setting and is ignored${guess ? `; did you mean ${guess}?` : ''} ` +
        `('seglift config print --help' lists the variables)`,
    );
  }
  return warnings;
}

/** Validates a merged input; every problem, including the codec/level cross-check. */
export function validateConfig(
  input: unknown,
  sources: Record<string, string> = {},
): { ok: true; config: Config } | { ok: false; problems: ConfigProblem[] } {
  const problems: ConfigProblem[] = [];
  const parsed = ConfigSchema.safeParse(input, { reportInput: true });
  if (!parsed.success) problems.push(...parsed.error.issues.flatMap((i) => issueProblems(i, sources)));
  problems.push(...levelProblems(input, sources));
  if (problems.length > 0 || !parsed.success) return { ok: false, problems };
  return { ok: true, config: parsed.data };
}

/** The level against the codec, by @seglift/format's rule (Kafka's ranges, KIP-390). */
function levelProblems(input: unknown, sources: Record<string, string>): ConfigProblem[] {
  if (!isPlainObject(input)) return [];
  const level = input.level;
  if (typeof level !== 'number' || !Number.isInteger(level)) return [];
  const raw = input.codec ?? conversionSetting('codec').default;
  const codec = typeof raw === 'string' ? (raw.toLowerCase() as CodecName) : undefined;
  if (codec === undefined || !CODECS.includes(codec)) return []; // the codec's own problem is reported
  try {
    validateLevel(codecId(codec), level);
    return [];
  } catch (err) {
    return [{ path: 'level', value: level, message: (err as Error).message, source: sources.level }];
  }
}

function issueProblems(issue: z.core.$ZodIssue, sources: Record<string, string>): ConfigProblem[] {
  const base = issue.path.map(String);
  if (issue.code === 'unrecognized_keys') {
    return issue.keys.map((k) => {
      const path = [...base, k].join('.');
      // Every setting has its variable: ENV_VARS names them all (a misspelt one gets the nearest).
      const guess = nearest(
        path,
        ENV_VARS.map((v) => v.path),
      );
      return {
        path,
        message: `unknown setting${guess ? `; did you mean ${guess}?` : ''}`,
        source: sourceOf(path, sources),
      };
    });
  }
  const path = base.join('.');
  const value = 'input' in issue ? issue.input : undefined;
  return [{ path, value: redactValue(path, value), message: issue.message, source: sourceOf(path, sources) }];
}

function sourceOf(path: string, sources: Record<string, string>): string | undefined {
  // roots.2 came from whatever set roots.
  for (let p = path; p !== ''; p = p.includes('.') ? p.slice(0, p.lastIndexOf('.')) : '') {
    if (sources[p] !== undefined) return sources[p];
  }
  return undefined;
}

async function readConfigFile(path: string): Promise<ConfigFile> {
  const problem = (message: string): ConfigFile => ({ path, problem: { path: '', message } });
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    return problem(`cannot read config file ${path}: ${(err as Error).message}`);
  }
  // The YAML parser (~120 KB) is loaded only to read a YAML file.
  const parse: (text: string) => unknown =
    extname(path).toLowerCase() === '.json' ? JSON.parse : (await import('./yaml.js')).parseYaml;
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (err) {
    return problem(`cannot parse config file ${path}: ${(err as Error).message}`);
  }
  if (doc === null || doc === undefined) return { path, doc: {} };
  if (!isPlainObject(doc)) return problem(`config file ${path} must contain a mapping of settings`);
  return { path, doc };
}

function convertEnv(raw: string, type: EnvType): unknown {
  const s = raw.trim();
  switch (type) {
    case 'int':
      // Anything that is not a plain integer is passed through so validation reports the raw text.
      return /^-?\d+$/.test(s) ? Number(s) : raw;
    case 'bool':
      if (/^(true|1|yes|on)$/i.test(s)) return true;
      if (/^(false|0|no|off)$/i.test(s)) return false;
      return raw;
    case 'list':
      return s
        .split(',')
        .map((x) => x.trim())
        .filter((x) => x !== '');
    default:
      return raw;
  }
}

function expandDotted(flags: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(flags)) {
    if (v === undefined) continue;
    if (k.includes('.')) {
      const nested: Record<string, unknown> = {};
      setPath(nested, k.split('.'), v);
      mergeInto(out, nested, {}, '', []);
    } else if (isPlainObject(v) && isPlainObject(out[k])) {
      mergeInto(out[k] as Record<string, unknown>, v, {}, '', []);
    } else {
      out[k] = v;
    }
  }
  return out;
}

/** Deep merge: objects merge, everything else (arrays included) replaces. Records each leaf's source. */
function mergeInto(
  target: Record<string, unknown>,
  src: Record<string, unknown>,
  sources: Record<string, string>,
  source: string,
  prefix: string[],
): void {
  for (const [k, v] of Object.entries(src)) {
    if (v === undefined) continue;
    const path = [...prefix, k];
    if (isPlainObject(v)) {
      if (!isPlainObject(target[k])) target[k] = {};
      mergeInto(target[k] as Record<string, unknown>, v, sources, source, path);
    } else {
      target[k] = v;
      if (source !== '') sources[path.join('.')] = source;
    }
  }
}

function setPath(target: Record<string, unknown>, path: string[], value: unknown): void {
  let t = target;
  for (const k of path.slice(0, -1)) {
    if (!isPlainObject(t[k])) t[k] = {};
    t = t[k] as Record<string, unknown>;
  }
  t[path[path.length - 1]] = value;
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function nonEmpty(s: string | undefined): string | undefined {
  return s === undefined || s === '' ? undefined : s;
}
