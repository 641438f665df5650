import { CONVERSION_SETTINGS, type ConversionSettings, type ConvertOptions } from '@seglift/segment';
import type { Config } from './schema.js';

/** What the settings say about a conversion: the options every front door passes on. */
export type PipelineOptions = ConversionSettings & Pick<ConvertOptions, 'backupDir'>;

/**
 * The settings -> conversion options mapping, for the CLI, the worker and audit: each declared
 * conversion setting from its config key (conversion-settings.ts), and where originals go.
 */
export function pipelineOptions(config: Config): PipelineOptions {
  const options: Record<string, unknown> = {};
  for (const s of CONVERSION_SETTINGS) {
    let value: unknown = config;
    for (const k of s.path.split('.')) value = (value as Record<string, unknown>)[k];
    options[s.name] = value;
  }
  options.backupDir = config.backupDir;
  return options as PipelineOptions;
}
