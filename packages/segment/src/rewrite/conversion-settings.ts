/**
 * The conversion settings, each declared once: the name of its conversion option, its type and
 * default, where the config file and the environment set it, its flag, its help, and whether it
 * changes the bytes written. Everything else is derived from this list: @seglift/config's schema
 * and ENV_VARS, the flags and help of every program, `pipelineOptions`, `stageOptionsKey` (from
 * `changesBytes`) and audit's estimate. Adding a setting is one entry here plus its use.
 *
 * Pure data: every package above @seglift/segment imports it. The defaults are the constants of
 * the layer that applies them (format, legacy), named here, so one value holds everywhere.
 */
import {
  CODEC_REGISTRY,
  DEFAULT_INDEX_INTERVAL_BYTES,
  DEFAULT_MAX_BATCH_BYTES,
  DEFAULT_MAX_DECOMPRESSED_BATCH_BYTES,
} from '@seglift/format';
import { DEFAULT_COALESCE_BYTES, DEFAULT_GROUPING } from '@seglift/legacy';

/** segment.index.bytes' default (LogConfig.DEFAULT_SEGMENT_INDEX_BYTES), 10 MiB. */
const DEFAULT_SEGMENT_INDEX_BYTES = 10 * 1024 * 1024;

const CODEC_NAMES = CODEC_REGISTRY.map((c) => c.name);
/** The lowest level any codec takes (zstd's); the codec's own range is checked with the codec. */
const LOWEST_LEVEL = Math.min(...CODEC_REGISTRY.map((c) => ('levels' in c ? c.levels.min : 0)));

interface Common {
  /** The conversion setting (RewriteSettings' field) it sets. */
  readonly name: string;
  /** Its key in the config file, dotted (`limits.maxDecompressedBatchBytes`). */
  readonly path: string;
  /** The environment variable that sets it. */
  readonly env: string;
  /** The flag of every program that takes it (without `--`). */
  readonly flag: string;
  /** Other spellings of the flag a program took once: still accepted, with a warning. */
  readonly aliases?: readonly string[];
  /** The flag's argument in the help (`--level N`); none for a boolean. */
  readonly arg?: string;
  /** The flag's help, wrapped for a 28-column flag column ('\n' breaks lines). */
  readonly help: string;
  /** One line for a program's "Settings it reads" (describeSettings), the default in parentheses. */
  readonly summary: string;
  /** Whether another value can change the bytes written (a staged segment made with another is stale). */
  readonly changesBytes: boolean;
  /** Read only when another setting has this value (coalesceBytes: grouping coalesce). */
  readonly onlyWhen?: { readonly setting: string; readonly is: string };
}

export type ConversionSetting = Common &
  (
    | {
        /** A codec name of format's registry, in any case. */
        readonly type: 'codec';
        readonly values: readonly string[];
        readonly default: string;
      }
    | { readonly type: 'enum'; readonly values: readonly string[]; readonly default: string }
    | {
        /** A codec level: checked against the codec's range; the codec's default when unset. */
        readonly type: 'level';
        readonly min: number;
        readonly default: undefined;
      }
    | {
        readonly type: 'int';
        readonly min: number;
        /** k/m/g suffixes on a flag. */
        readonly sizes: boolean;
        readonly default: number;
      }
    | { readonly type: 'bool'; readonly default: boolean }
  );

/** In the order programs list them. */
export const CONVERSION_SETTINGS = [
  {
    name: 'codec',
    path: 'codec',
    env: 'SEGLIFT_CODEC',
    flag: 'codec',
    arg: 'C',
    type: 'codec',
    values: CODEC_NAMES,
    default: 'zstd',
    changesBytes: true,
    help: `target codec: ${CODEC_NAMES.join('|')}, any case (default zstd, from the
config when set there; the summary names the codec used)`,
    summary: `target codec: ${CODEC_NAMES.join('|')}, any case (zstd)`,
  },
  {
    name: 'level',
    path: 'level',
    env: 'SEGLIFT_LEVEL',
    flag: 'level',
    arg: 'N',
    type: 'level',
    min: LOWEST_LEVEL,
    default: undefined,
    changesBytes: true,
    help: `compression level, negative ones too (zstd -5); codec default
otherwise`,
    summary: 'compression level (the codec default)',
  },
  {
    name: 'grouping',
    path: 'grouping',
    env: 'SEGLIFT_GROUPING',
    flag: 'grouping',
    arg: 'G',
    type: 'enum',
    values: ['kafka', 'coalesce'],
    default: DEFAULT_GROUPING,
    changesBytes: true,
    help: `how legacy entries become v2 batches. coalesce (default): consecutive
records share batches of up to --coalesce-bytes, split where one
batch could not carry them as consumers read them today (timestamp
type, LogAppendTime); kafka: one batch per legacy entry, byte for
byte what Kafka 4's cleaner writes (much larger for small messages)`,
    summary:
      'coalesce (default): consecutive legacy records share batches; kafka: one batch per legacy entry',
  },
  {
    name: 'coalesceBytes',
    path: 'coalesceBytes',
    env: 'SEGLIFT_COALESCE_BYTES',
    flag: 'coalesce-bytes',
    arg: 'N',
    type: 'int',
    min: 1,
    sizes: true,
    default: DEFAULT_COALESCE_BYTES,
    changesBytes: true,
    onlyWhen: { setting: 'grouping', is: 'coalesce' },
    help: `with --grouping coalesce: records per batch up to N bytes before
compression (default ${DEFAULT_COALESCE_BYTES}, 1 MiB)`,
    summary: `with coalesce: records per batch up to this many bytes (${DEFAULT_COALESCE_BYTES})`,
  },
  {
    name: 'maxBatchBytes',
    path: 'maxBatchBytes',
    env: 'SEGLIFT_MAX_BATCH_BYTES',
    flag: 'max-batch-bytes',
    arg: 'N',
    type: 'int',
    min: 1,
    sizes: true,
    default: DEFAULT_MAX_BATCH_BYTES,
    changesBytes: true,
    help: `largest batch written (default ${DEFAULT_MAX_BATCH_BYTES}, the broker's default
message.max.bytes; set it to your topics' max.message.bytes or less)`,
    summary: `largest batch written (${DEFAULT_MAX_BATCH_BYTES})`,
  },
  {
    name: 'indexIntervalBytes',
    path: 'indexIntervalBytes',
    env: 'SEGLIFT_INDEX_INTERVAL_BYTES',
    flag: 'index-interval-bytes',
    arg: 'N',
    type: 'int',
    min: 1,
    sizes: true,
    default: DEFAULT_INDEX_INTERVAL_BYTES,
    changesBytes: true,
    help: `the topic's index.interval.bytes: an .index entry every N bytes of
log (default ${DEFAULT_INDEX_INTERVAL_BYTES})`,
    summary: `the topic's index.interval.bytes (${DEFAULT_INDEX_INTERVAL_BYTES})`,
  },
  {
    name: 'onlyIfSmaller',
    path: 'onlyIfSmaller',
    env: 'SEGLIFT_ONLY_IF_SMALLER',
    flag: 'only-if-smaller',
    type: 'bool',
    default: false,
    changesBytes: true,
    help: `keep a v2 batch in its codec when recompressing it would make it
larger (default off: every batch gets the target codec)`,
    summary: 'keep a v2 batch in its codec when recompression would grow it (false)',
  },
  {
    name: 'segmentIndexBytes',
    path: 'segmentIndexBytes',
    env: 'SEGLIFT_SEGMENT_INDEX_BYTES',
    flag: 'segment-index-bytes',
    arg: 'N',
    type: 'int',
    min: 1,
    sizes: true,
    default: DEFAULT_SEGMENT_INDEX_BYTES,
    // A limit the rebuilt indexes are checked against, not a shape of them.
    changesBytes: false,
    help: `the topic's segment.index.bytes: the active segment's rebuilt indexes
must fit in it (default 10m)`,
    summary: "the topic's segment.index.bytes, for an archive's newest segment (10 MiB)",
  },
  {
    name: 'maxDecompressedBatchBytes',
    path: 'limits.maxDecompressedBatchBytes',
    env: 'SEGLIFT_LIMITS_MAX_DECOMPRESSED_BATCH_BYTES',
    flag: 'max-decompressed-batch-bytes',
    // verify's name for it until the names were made one.
    aliases: ['max-decompressed-bytes'],
    arg: 'N',
    type: 'int',
    min: 1,
    sizes: true,
    default: DEFAULT_MAX_DECOMPRESSED_BATCH_BYTES,
    // A refusal, never another output.
    changesBytes: false,
    help: 'refuse a batch that decompresses to more than N (default 64m)',
    summary: 'refuse a batch that decompresses to more (64 MiB)',
  },
] as const satisfies readonly ConversionSetting[];

type Declared = (typeof CONVERSION_SETTINGS)[number];
type ValueOf<S extends Declared> = S extends { type: 'codec' | 'enum' }
  ? S['values'][number]
  : S extends { type: 'bool' }
    ? boolean
    : number;

/** The settings of a conversion, by option name, as a front door passes them on. */
export type ConversionSettings = {
  -readonly [S in Declared as S['default'] extends undefined ? never : S['name']]: ValueOf<S>;
} & { -readonly [S in Declared as S['default'] extends undefined ? S['name'] : never]?: ValueOf<S> };

export type ConversionSettingName = Declared['name'];

/** The declaration of `name`. */
export function conversionSetting(name: ConversionSettingName): ConversionSetting {
  return (CONVERSION_SETTINGS as readonly ConversionSetting[]).find((s) => s.name === name)!;
}

/** `given`'s settings, each one it lacks at its declared default (level: none, the codec's own). */
export function conversionSettingsOf(given: Partial<ConversionSettings> = {}): ConversionSettings {
  const out: Record<string, unknown> = {};
  for (const s of CONVERSION_SETTINGS as readonly ConversionSetting[]) {
    out[s.name] = (given as Record<string, unknown>)[s.name] ?? s.default;
  }
  return out as ConversionSettings;
}
