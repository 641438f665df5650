import { isSecretKey, REDACTED, redactString } from '@seglift/observability';
import { stringify as toYaml } from 'yaml';
import type { Config } from './schema.js';

export { REDACTED };

/** A redis URL with its password replaced (the user name is kept: it helps debugging and is not secret). */
export function redactUrl(url: string): string {
  return redactString(url);
}

/** Redacts a value found at `path` (used for config error messages too): observability's rule. */
export function redactValue(path: string, value: unknown): unknown {
  const key = path.slice(path.lastIndexOf('.') + 1);
  if (typeof value !== 'string') return value;
  return isSecretKey(key) ? REDACTED : redactString(value);
}

/** A deep copy with the redis password (and any password/secret/token field) replaced by [REDACTED]. */
export function redactConfig<T>(config: T): T {
  return walk(config, '') as T;
}

function walk(v: unknown, path: string): unknown {
  if (Array.isArray(v)) return v.map((x, i) => walk(x, `${path}.${i}`));
  if (typeof v === 'object' && v !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[k] = walk(x, path === '' ? k : `${path}.${k}`);
    return out;
  }
  return redactValue(path, v);
}

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
