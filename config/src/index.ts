export { ConfigError, type ConfigProblem } from './errors.js';
export { FlagError, type FlagOptions, nearest, type ParsedFlags, parseFlags } from './flags.js';
export {
  conversionSettingsHelp,
  describeSettings,
  metricsPortInUse,
  type SettingHelp,
  undocumentedFlags,
  usageProblems,
} from './help.js';
export {
  CONFIG_FILE_ENV,
  ENV_VARS,
  type LoadConfigOptions,
  type LoadedConfig,
  loadConfig,
  loadConfigWithSources,
  OTHER_ENV_VARS,
  unknownEnvWarnings,
  validateConfig,
} from './load.js';
export { type PipelineOptions, pipelineOptions } from './pipeline.js';
export { type FormatConfigOptions, formatConfig, REDACTED, redactConfig, redactUrl } from './redact.js';
export {
  CODECS,
  type Config,
  type ConfigInput,
  ConfigSchema,
  DEFAULT_COALESCE_BYTES,
  DEFAULT_MAX_BATCH_BYTES,
  LOG_LEVELS,
  METRICS_PORTS,
  type MetricsProgram,
  metricsPort,
} from './schema.js';
