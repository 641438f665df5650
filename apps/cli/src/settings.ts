import path from 'node:path';
import { CODECS, type LoadedConfig, loadConfigWithSources, pipelineOptions } from '@seglift/config';
import { type ReadinessRules, readinessRules } from '@seglift/segment';
import { intOpt, type Parsed, str } from './args.js';
import type { CommandContext } from './command.js';

/** The parseArgs options every pipeline command (convert, migrate) shares. */
export const PIPELINE_ARG_OPTIONS = {
  config: { type: 'string' },
  codec: { type: 'string' },
  level: { type: 'string' },
  grouping: { type: 'string' },
  'coalesce-bytes': { type: 'string' },
  'max-batch-bytes': { type: 'string' },
  'only-if-smaller': { type: 'boolean' },
  'index-interval-bytes': { type: 'string' },
  'segment-index-bytes': { type: 'string' },
  'max-decompressed-batch-bytes': { type: 'string' },
  'backup-dir': { type: 'string' },
} as const;

/** The help lines for PIPELINE_ARG_OPTIONS (without --backup-dir, whose meaning differs). */
export const PIPELINE_HELP = `  --config FILE             YAML or JSON config file (default $SEGLIFT_CONFIG); settings come
                            from defaults < config file < SEGLIFT_* environment < these flags
  --codec C                 target codec: ${CODECS.join('|')}, any case (default zstd, from the
                            config when set there; the summary names the codec used)
  --level N                 compression level, negative ones too (zstd -5); codec default
                            otherwise
  --grouping G              how legacy entries become v2 batches. coalesce (default): consecutive
                            records share batches of up to --coalesce-bytes, split where one
                            batch could not carry them as consumers read them today (timestamp
                            type, LogAppendTime); kafka: one batch per legacy entry, byte for
                            byte what Kafka 4's cleaner writes (much larger for small messages)
  --coalesce-bytes N        with --grouping coalesce: records per batch up to N bytes before
                            compression (default 1048576, 1 MiB)
  --max-batch-bytes N       largest batch written (default 1048588, the broker's default
                            message.max.bytes; set it to your topics' max.message.bytes or less)
  --only-if-smaller         keep a v2 batch in its codec when recompressing it would make it
                            larger (default off: every batch gets the target codec)
  --index-interval-bytes N  the topic's index.interval.bytes: an .index entry every N bytes of
                            log (default 4096)
  --segment-index-bytes N   the topic's segment.index.bytes: the active segment's rebuilt indexes
                            must fit in it (default 10m)
  --max-decompressed-batch-bytes N
                            refuse a batch that decompresses to more than N (default 64m)`;

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

/** Config keys (dotted) and the flag that sets each; sizes accept k/m/g. */
const INT_FLAGS: ReadonlyArray<{ flag: string; key: string; min: number; sizes: boolean }> = [
  { flag: 'level', key: 'level', min: -131072, sizes: false },
  { flag: 'coalesce-bytes', key: 'coalesceBytes', min: 1, sizes: true },
  { flag: 'max-batch-bytes', key: 'maxBatchBytes', min: 1, sizes: true },
  { flag: 'index-interval-bytes', key: 'indexIntervalBytes', min: 1, sizes: true },
  { flag: 'segment-index-bytes', key: 'segmentIndexBytes', min: 1, sizes: true },
  { flag: 'max-decompressed-batch-bytes', key: 'limits.maxDecompressedBatchBytes', min: 1, sizes: true },
];

/**
 * The effective settings of a command: @seglift/config's loader (the one the watcher, worker and
 * `seglift config print` use) with the command's flags as the highest-precedence source. Codec
 * and grouping go to the loader unchecked so one ConfigError lists every problem (exit 2).
 */
export function loadSettings(
  command: string,
  p: Parsed,
  ctx: CommandContext,
  extraFlags: Record<string, unknown> = {},
): LoadedConfig {
  const flags: Record<string, unknown> = { ...extraFlags };
  if (p.values.codec !== undefined) flags.codec = str(p, 'codec');
  if (p.values.grouping !== undefined) flags.grouping = str(p, 'grouping');
  if (p.values['only-if-smaller'] !== undefined) flags.onlyIfSmaller = p.values['only-if-smaller'] === true;
  for (const f of INT_FLAGS) {
    if (p.values[f.flag] === undefined) continue;
    flags[f.key] = intOpt(command, p, f.flag, { min: f.min, sizes: f.sizes });
  }
  const backupDir = str(p, 'backup-dir');
  // The schema wants an absolute path; a flag is relative to where seglift was started.
  if (backupDir !== undefined) flags.backupDir = path.resolve(ctx.io.cwd, backupDir);
  const loaded = loadConfigWithSources({ file: str(p, 'config'), env: ctx.io.env, flags });
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
  const extra: [string, string, unknown][] = [
    ['coalesceBytes', 'coalesce.bytes', config.coalesceBytes],
    ['maxBatchBytes', 'max.batch.bytes', config.maxBatchBytes],
    ['onlyIfSmaller', 'only.if.smaller', config.onlyIfSmaller],
    ['indexIntervalBytes', 'index.interval.bytes', config.indexIntervalBytes],
    ['segmentIndexBytes', 'segment.index.bytes', config.segmentIndexBytes],
    [
      'limits.maxDecompressedBatchBytes',
      'max.decompressed.batch.bytes',
      config.limits.maxDecompressedBatchBytes,
    ],
  ];
  for (const [key, label, value] of extra) {
    if (sources[key] !== undefined) parts.push(`${label} ${String(value)} (${sources[key]})`);
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
