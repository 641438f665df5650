/**
 * `seglift config print`'s text. Apart from redact.ts (which the loader uses for its messages) so
 * that only `config print` loads the YAML writer (start-up: bench/startup.bench.mjs).
 */
import { stringify as toYaml } from 'yaml';
import { redactConfig } from './redact.js';
import type { Config } from './schema.js';

export interface FormatConfigOptions {
  format?: 'yaml' | 'json';
  /** From loadConfigWithSources: YAML output gets a trailing `# from ...` comment per non-default field. */
  sources?: Record<string, string>;
}

/** Text for `seglift config print`: the effective configuration, redacted. */
export function formatConfig(config: Config, options: FormatConfigOptions = {}): string {
  const redacted = redactConfig(config);
  if (options.format === 'json') return `${JSON.stringify(redacted, null, 2)}\n`;
  const text = toYaml(redacted, { lineWidth: 0 });
  const sources = options.sources;
  if (sources === undefined || Object.keys(sources).length === 0) return text;
  return annotate(text, sources);
}

/** Appends `# from <source>` to each `key: value` line whose dotted path has a recorded source. */
function annotate(text: string, sources: Record<string, string>): string {
  const stack: Array<{ indent: number; key: string }> = [];
  return text
    .split('\n')
    .map((line) => {
      const m = /^(\s*)([A-Za-z][A-Za-z0-9]*):/.exec(line);
      if (m === null) return line;
      const indent = m[1].length;
      while (stack.length > 0 && stack[stack.length - 1].indent >= indent) stack.pop();
      stack.push({ indent, key: m[2] });
      const source = sources[stack.map((s) => s.key).join('.')];
      return source === undefined ? line : `${line} # from ${source}`;
    })
    .join('\n');
}
