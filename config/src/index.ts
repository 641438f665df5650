export { ConfigError, type ConfigProblem } from './errors.js';
export { FlagError, type FlagOptions, nearest, type ParsedFlags, parseFlags } from './flags.js';
export { type FormatConfigOptions, formatConfig } from './format.js';
export {
  conversionSettingsHelp,
  describeSettings,
  metricsPortInUse,
  type SettingHelp,
  undocumentedFlags,
  usageProblems,
} from './help.js';
export {
  type LoadConfigOptions,
  type LoadedConfig,
  loadConfig,
  loadConfigWithSources,
  unknownEnvWarnings,
  validateConfig,
} from './load.js';
export { CODECS, CONFIG_FILE_ENV, ENV_VARS, OTHER_ENV_VARS } from './names.js';
export {
  type ConversionSettings,
  conversionSettings,
  conversionSettingsKey,
  type PipelineOptions,
  pipelineOptions,
} from './pipeline.js';
export { REDACTED, redactConfig, redactUrl } from './redact.js';
export {
  type Config,
  type ConfigInput,
  ConfigSchema,
  ConversionSettingsSchema,
  DEFAULT_COALESCE_BYTES,
  DEFAULT_MAX_BATCH_BYTES,
  LOG_LEVELS,
  METRICS_PORTS,
  type MetricsProgram,
  metricsPort,
} from './schema.js';
export { useEnglishZodMessages } from './zod.js';
