import { CONVERSION_SETTINGS, type ConversionSettings, stageOptionsKey } from '@seglift/segment';
import type { Config } from './schema.js';

export type { ConversionSettings };

/** What the settings say about a conversion: the options every front door passes on. */
export type PipelineOptions = ConversionSettings & {
  /** In place: copy the originals to backupDir/<partition dir name>/ first. */
  backupDir?: string;
};

/**
 * The declared conversion settings (conversion-settings.ts), each from its config key: what a
 * conversion is asked for, and what a segment job carries from the watcher to the worker.
 */
export function conversionSettings(config: Config): ConversionSettings {
  const settings: Record<string, unknown> = {};
  for (const s of CONVERSION_SETTINGS) {
    let value: unknown = config;
    for (const k of s.path.split('.')) value = (value as Record<string, unknown>)[k];
    settings[s.name] = value;
  }
  return settings as ConversionSettings;
}

/**
 * The settings -> conversion options mapping, for the CLI, the worker and audit: the conversion
 * settings, and where originals go.
 */
export function pipelineOptions(config: Config): PipelineOptions {
  return { ...conversionSettings(config), backupDir: config.backupDir };
}

/**
 * The settings that change the bytes written, as text: a stage record's options (stageOptionsKey),
 * the key a segment job's id and done marker hash. Two settings with one key write the same bytes.
 */
export function conversionSettingsKey(settings: ConversionSettings): string {
  return JSON.stringify(stageOptionsKey(settings));
}
