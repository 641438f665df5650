import path from 'node:path';
import {
  conversionSettingsHelp,
  describeSettings,
  type FlagOptions,
  type LoadedConfig,
  loadConfigWithSources,
  pipelineOptions,
} from '@seglift/config';
import {
  CONVERSION_SETTINGS,
  type ConversionSetting,
  type ConversionSettingName,
  ioThrottle,
  type ReadinessRules,
  readinessRules,
} from '@seglift/segment';
import { intOpt, type Parsed, str } from './args.js';
import type { CommandContext } from './command.js';
import { formatBytes, formatDuration } from './table.js';

type Setting = ConversionSetting;
const SETTINGS = CONVERSION_SETTINGS as readonly Setting[];

/** The parseArgs options of the declared settings `names` (all of them by default), aliases included. */
export function settingArgOptions(names?: readonly ConversionSettingName[]): FlagOptions {
  const options: FlagOptions = {};
  for (const s of SETTINGS) {
    if (names !== undefined && !names.includes(s.name as ConversionSettingName)) continue;
    for (const f of [s.flag, ...(s.aliases ?? [])])
      options[f] = { type: s.type === 'bool' ? 'boolean' : 'string' };
  }
  return options;
}

/** The help lines of the declared settings `names` (all by default), the text at column `column`. */
export function settingsHelp(names?: readonly ConversionSettingName[], column = 28): string {
  const lines: string[] = [];
  for (const s of SETTINGS) {
    if (names !== undefined && !names.includes(s.name as ConversionSettingName)) continue;
    const head = `  --${s.flag}${s.arg === undefined ? '' : ` ${s.arg}`}`;
    const text = s.help.split('\n');
    for (const a of s.aliases ?? []) text.push(`(--${a}: its old name, with a warning)`);
    const indent = ' '.repeat(column);
    if (head.length < column) lines.push(head.padEnd(column) + text.shift());
    else lines.push(head);
    for (const t of text) lines.push(indent + t);
  }
  return lines.join('\n');
}

/**
 * A pipeline command's "Settings it reads" section: the conversion settings, then `others`
 * ([path, what]), each with its SEGLIFT_* variable.
 */
export function pipelineSettingsHelp(others: ReadonlyArray<readonly [string, string]>): string {
  return describeSettings([...conversionSettingsHelp(), ...others]);
}

/** The parseArgs options every pipeline command (convert, migrate) shares. */
export const PIPELINE_ARG_OPTIONS = {
  config: { type: 'string' },
  ...settingArgOptions(),
  'backup-dir': { type: 'string' },
} as const satisfies FlagOptions;

/** The help lines for PIPELINE_ARG_OPTIONS (without --backup-dir, whose meaning differs). */
export const PIPELINE_HELP = `  --config FILE             YAML or JSON config file (default $SEGLIFT_CONFIG); settings come
                            from defaults < config file < SEGLIFT_* environment < these flags
${settingsHelp()}`;

/**
 * The host's I/O limit (io.maxBytesPerSecond), a process setting beside the conversion settings:
 * its flag, help and value, for every command that reads or writes segments.
 */
export const IO_LIMIT_ARG_OPTIONS = {
  'max-io-bytes-per-second': { type: 'string' },
} as const satisfies FlagOptions;

export const IO_LIMIT_HELP = `  --max-io-bytes-per-second N
                            bytes read and written per second, all conversion threads together
                            (io.maxBytesPerSecond, Kafka's log.cleaner.io.max.bytes.per.second;
                            k/m/g suffixes; default no limit)`;

/** The config flag the command line gives io.maxBytesPerSecond, if any. */
export function ioLimitFlag(command: string, p: Parsed): Record<string, number> {
  const n = intOpt(command, p, 'max-io-bytes-per-second', { min: 1, sizes: true });
  return n === undefined ? {} : { 'io.maxBytesPerSecond': n };
}

/** `io limit 20.0 MiB/s: throttled 4.2 s` once the limit made anything wait, else undefined. */
export function ioLimitLine(): string | undefined {
  const t = ioThrottle();
  if (t === undefined || t.waitedMs === 0) return undefined;
  return `io limit ${formatBytes(t.maxBytesPerSecond)}/s: ${formatBytes(t.bytes)} read and written, threads waited ${formatDuration(t.waitedMs)} in all`;
}

/**
 * The flag of `s` the command line used: its own, else an old name (with a warning on stderr,
 * so that scripts move to the one name every program takes); undefined when neither.
 */
function usedFlag(s: Setting, p: Parsed, ctx: CommandContext): string | undefined {
  if (p.values[s.flag] !== undefined) return s.flag;
  const alias = (s.aliases ?? []).find((a) => p.values[a] !== undefined);
  if (alias !== undefined) ctx.err.line(`warning: --${alias} is an old name of --${s.flag}; use --${s.flag}`);
  return alias;
}

/**
 * The value the command line gives setting `s`, or undefined. Codec and grouping go to the loader
 * unchecked so one ConfigError lists every problem (exit 2); numbers are checked here (sizes
 * accept k/m/g).
 */
export function settingFlagValue(command: string, p: Parsed, ctx: CommandContext, s: Setting): unknown {
  const used = usedFlag(s, p, ctx);
  if (used === undefined) return undefined;
  switch (s.type) {
    case 'codec':
    case 'enum':
      return str(p, used);
    case 'bool':
      return p.values[used] === true;
    case 'level':
      return intOpt(command, p, used, { min: s.min });
    case 'int':
      return intOpt(command, p, used, { min: s.min, sizes: s.sizes });
  }
}

/**
 * The archive switch, as every front door's help states it: `readiness.requireRolled: false`
 * (the watcher, the worker, migrate and audit all follow it).
 */
export function archiveHelp(command: 'migrate' | 'audit'): string {
  return `Archives (no broker appends to them): set readiness.requireRolled: false in the config file
(or SEGLIFT_READINESS_REQUIRE_ROLLED=false). The newest segment of each partition is then
${command === 'audit' ? 'counted as converted' : 'converted'} too, once its .log has been unchanged for readiness.quietMs (default
300000, 5 min: a copy may still be writing it). seglift-watcher and seglift-worker follow the
same switch. --include-active is for a stopped broker: the newest segments at once.`;
}

/** What --include-active means in readiness terms: every newest segment, now (the broker is stopped). */
export function includeActiveRules(): ReadinessRules {
  return readinessRules({ includeActive: true });
}

/**
 * The effective settings of a command: @seglift/config's loader (the one the watcher, worker and
 * `seglift config print` use) with the command's flags as the highest-precedence source. Codec
 * and grouping go to the loader unchecked so one ConfigError lists every problem (exit 2).
 */
export async function loadSettings(
  command: string,
  p: Parsed,
  ctx: CommandContext,
  extraFlags: Record<string, unknown> = {},
): Promise<LoadedConfig> {
  const flags: Record<string, unknown> = { ...extraFlags };
  for (const s of SETTINGS) {
    const value = settingFlagValue(command, p, ctx, s);
    if (value !== undefined) flags[s.path] = value;
  }
  const backupDir = str(p, 'backup-dir');
  // The schema wants an absolute path; a flag is relative to where seglift was started.
  if (backupDir !== undefined) flags.backupDir = path.resolve(ctx.io.cwd, backupDir);
  const loaded = await loadConfigWithSources({ file: str(p, 'config'), env: ctx.io.env, flags });
  for (const w of loaded.warnings) ctx.err.line(`warning: ${w}`);
  return loaded;
}

/**
 * One line for the human summary: `settings: codec zstd (default), level 6 (file x.yaml), ...`;
 * settings left at their defaults other than codec/level are not repeated.
 */
export function settingsLine(loaded: LoadedConfig): string {
  const { config, sources } = loaded;
  const from = (key: string) => sources[key] ?? 'default';
  const parts = [
    `codec ${config.codec} (${from('codec')})`,
    `level ${config.level ?? 'codec default'} (${from('level')})`,
    `grouping ${config.grouping} (${from('grouping')})`,
  ];
  const options = pipelineOptions(config) as Record<string, unknown>;
  for (const s of SETTINGS) {
    if (s.name === 'codec' || s.name === 'level' || s.name === 'grouping') continue;
    // coalesceBytes -> coalesce.bytes
    const label = s.name.replace(/[A-Z]/g, (c) => `.${c.toLowerCase()}`);
    if (sources[s.path] !== undefined) parts.push(`${label} ${String(options[s.name])} (${sources[s.path]})`);
  }
  if (!config.readiness.requireRolled) {
    parts.push(
      `archive: newest segments once unchanged for ${config.readiness.quietMs} ms ` +
        `(readiness.requireRolled false, ${from('readiness.requireRolled')})`,
    );
  }
  return `settings: ${parts.join(', ')}`;
}

/**
 * The settings of a `--json` summary: the conversion options, with `level: null` when the codec's
 * default applies (a key a script can test, rather than one that is absent).
 */
export function settingsJson(loaded: LoadedConfig): Record<string, unknown> {
  return { ...pipelineOptions(loaded.config), level: loaded.config.level ?? null };
}
