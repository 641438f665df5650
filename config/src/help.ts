/**
 * What a program's --help says about the settings it reads: each with the variable that sets it
 * (ENV_VARS, the one mapping) and what it is for, so that the help never names a variable that
 * does not exist.
 */
import { CONVERSION_SETTINGS, type ConversionSetting } from '@seglift/segment';
import type { FlagOptions } from './flags.js';
import { CONFIG_FILE_ENV, ENV_VARS } from './names.js';
import type { MetricsProgram } from './schema.js';

/** `[setting, what it does]`; the setting must be one of ENV_VARS' paths. */
export type SettingHelp = readonly [path: string, what: string];

export function describeSettings(settings: readonly SettingHelp[]): string {
  const lines: string[] = [];
  for (const [path, what] of settings) {
    const v = ENV_VARS.find((e) => e.path === path);
    if (v === undefined) throw new Error(`no environment variable sets ${path}`);
    lines.push(`  ${path}, ${v.env}`, ...wrap(what, 90).map((l) => `      ${l}`));
  }
  return [
    `Settings it reads: defaults < config file (--config, else $${CONFIG_FILE_ENV}) < SEGLIFT_*`,
    "environment < flags; 'seglift config print' shows the effective ones and where each came from.",
    ...lines,
  ].join('\n');
}

/** The conversion settings' lines of describeSettings, from their declarations. */
export function conversionSettingsHelp(): SettingHelp[] {
  return (CONVERSION_SETTINGS as readonly ConversionSetting[]).map((s) => [s.path, s.summary] as const);
}

function wrap(text: string, width: number): string[] {
  const out: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line !== '' && line.length + 1 + word.length > width) {
      out.push(line);
      line = word;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  if (line !== '') out.push(line);
  return out;
}

/**
 * The error of a metrics port already taken, naming every way to set it: with the defaults a
 * watcher and a worker do not collide, but two workers on one host, or one port set for both, do.
 */
export function metricsPortInUse(program: MetricsProgram, host: string, port: number): string {
  return (
    `${program}: the metrics port ${host}:${port} is in use (another seglift-worker or seglift-watcher ` +
    'on this host?); give this one another: --metrics-port N, metrics.port in the config file or ' +
    'SEGLIFT_METRICS_PORT (0: any free port, logged at start)'
  );
}

/**
 * The flags of `options` that `help` never mentions (`--name`, and `-x` for a short one): a
 * program's --help must list every flag it accepts.
 */
export function undocumentedFlags(options: FlagOptions, help: string): string[] {
  const missing: string[] = [];
  for (const [name, spec] of Object.entries(options)) {
    if (!new RegExp(`(^|[\\s,[])--${name}(?![\\w-])`, 'm').test(help)) missing.push(`--${name}`);
    if (spec.short !== undefined && !new RegExp(`(^|[\\s,[])-${spec.short}(?![\\w-])`, 'm').test(help))
      missing.push(`-${spec.short}`);
  }
  return missing;
}

/**
 * What is wrong with a program's usage module (its OPTIONS, HELP and EXIT_* codes), as a list of
 * problems: a flag the help never mentions, an exit code it does not list under "Exit codes", a
 * SEGLIFT_* variable that does not exist, one of `settings` it does not describe.
 */
export function usageProblems(usage: Record<string, unknown>, settings: readonly string[]): string[] {
  const help = String(usage.HELP);
  const problems = undocumentedFlags(usage.OPTIONS as FlagOptions, help).map((f) => `undocumented flag ${f}`);
  const codes = Object.entries(usage)
    .filter(([k]) => k.startsWith('EXIT_'))
    .map(([, v]) => v as number);
  if (codes.length < 3) problems.push(`only ${codes.length} exit codes defined`);
  const exitSection = help.slice(help.indexOf('Exit codes'));
  for (const c of codes)
    if (!new RegExp(`^ {2}${c} `, 'm').test(exitSection)) problems.push(`exit code ${c} not listed`);
  const known = new Set([...ENV_VARS.map((v) => v.env), CONFIG_FILE_ENV]);
  for (const v of help.match(/SEGLIFT_[A-Z_]+/g) ?? [])
    if (!known.has(v)) problems.push(`no such variable ${v}`);
  for (const s of settings) if (!help.includes(`  ${s}, `)) problems.push(`setting ${s} not described`);
  return problems;
}
