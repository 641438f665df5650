import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { codecId, defaultLevel } from '@seglift/format';
import { CONVERSION_SETTINGS, type ConversionSetting, conversionSetting } from '@seglift/segment';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const deploy = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../deploy');

/**
 * Conversion settings a deployment sets to something other than the declared default, each
 * with its reason. Empty: a Kubernetes run converts as `seglift migrate` with defaults does, and
 * `seglift audit` with defaults estimates it.
 */
const DELIBERATE_OVERRIDES: Record<string, string> = {};

/** The seglift.yaml of every ConfigMap under deploy/ (the base and its overlays' patches). */
function configMaps(): { file: string; settings: Record<string, unknown> }[] {
  const files = readdirSync(deploy, { recursive: true, encoding: 'utf8' })
    .filter((f) => /configmap[^/]*\.ya?ml$/.test(f))
    .sort();
  return files.flatMap((file) => {
    const doc = parse(readFileSync(path.join(deploy, file), 'utf8'));
    const text = doc?.kind === 'ConfigMap' ? doc.data?.['seglift.yaml'] : undefined;
    return typeof text === 'string' ? [{ file, settings: parse(text) }] : [];
  });
}

function at(settings: Record<string, unknown>, dotted: string): unknown {
  let v: unknown = settings;
  for (const k of dotted.split('.')) v = (v as Record<string, unknown> | undefined)?.[k];
  return v;
}

describe('deploy configmaps', () => {
  it('set every conversion setting to its declared default, or to a listed deliberate override', () => {
    const maps = configMaps();
    expect(maps.map((m) => m.file)).toContain(path.join('base', 'configmap.yaml'));
    for (const { file, settings } of maps) {
      const codec = String(at(settings, 'codec') ?? conversionSetting('codec').default).toLowerCase();
      for (const s of CONVERSION_SETTINGS as readonly ConversionSetting[]) {
        const value = at(settings, s.path);
        if (value === undefined || DELIBERATE_OVERRIDES[s.path] !== undefined) continue;
        // The level's default is the codec's own (zstd 3).
        const expected = s.type === 'level' ? defaultLevel(codecId(codec as 'zstd')) : s.default;
        expect({ file, setting: s.path, value }).toEqual({ file, setting: s.path, value: expected });
      }
    }
  });
});
