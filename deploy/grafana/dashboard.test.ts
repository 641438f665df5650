/**
 * The dashboard against Grafana's own dashboard schema (the `Dashboard` type of @grafana/schema,
 * generated from Grafana's CUE kinds; no Grafana server is installable from the registries here),
 * as an object literal so that an unknown field is an error too; and every counter read through
 * rate() or increase(): a raw counter restarts with each pod and is gone with an exited Job pod.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const here = dirname(fileURLToPath(import.meta.url));
const file = join(here, 'seglift-dashboard.json');
const text = readFileSync(file, 'utf8');
// biome-ignore lint/suspicious/noExplicitAny: untyped JSON, every field used is asserted
const dashboard = JSON.parse(text) as Record<string, any>;
const require = createRequire(import.meta.url);
const tsc = require.resolve('typescript/bin/tsc');
const schemaTypes = join(dirname(require.resolve('@grafana/schema/package.json')), 'dist/types/index.d.ts');

/** tsc's errors for `json` checked as `satisfies Dashboard` (empty: it conforms). */
function schemaErrors(json: unknown): string[] {
  const dir = mkdtempSync(join(tmpdir(), 'seglift-dashboard-schema-'));
  try {
    // The JSON's own "__comment" is for people reading the file; Grafana ignores it on import.
    const { __comment: _c, ...body } = json as Record<string, unknown>;
    writeFileSync(
      join(dir, 'check.ts'),
      `import type { Dashboard } from '@grafana/schema';\nexport const d = ${JSON.stringify(body, null, 1)} satisfies Dashboard;\n`,
    );
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noEmit: true,
          target: 'es2022',
          module: 'nodenext',
          moduleResolution: 'nodenext',
          skipLibCheck: true,
          paths: { '@grafana/schema': [schemaTypes] },
        },
        files: ['check.ts'],
      }),
    );
    const r = spawnSync(process.execPath, [tsc, '-p', dir], { encoding: 'utf8' });
    return r.status === 0 ? [] : r.stdout.split('\n').filter((l) => l.includes('error TS'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("deploy/grafana/seglift-dashboard.json against Grafana's dashboard schema", () => {
  it('conforms to @grafana/schema Dashboard, field by field', () => {
    expect(schemaErrors(dashboard)).toEqual([]);
  }, 60_000);

  it('a field of the wrong type or unknown to Grafana would be caught', () => {
    const broken = structuredClone(dashboard);
    broken.panels[0].gridPos.h = 'five';
    broken.templating.list[1].definition = 'label_values(job)';
    const errors = schemaErrors(broken);
    expect(errors.some((e) => e.includes("Type 'string' is not assignable to type 'number'"))).toBe(true);
    expect(errors.some((e) => e.includes(`'"definition"' does not exist in type 'VariableModel'`))).toBe(
      true,
    );
  }, 60_000);
});

describe('counters are read as increases or rates', () => {
  // biome-ignore lint/suspicious/noExplicitAny: untyped JSON
  const queries = (dashboard.panels as any[]).flatMap((p) =>
    // biome-ignore lint/suspicious/noExplicitAny: untyped JSON
    (p.targets as any[]).map((t) => ({ panel: p.title as string, expr: t.expr as string })),
  );

  /** Counter series read outside rate()/increase() (histogram parts are counters too). */
  function rawCounters(expr: string): string[] {
    const wrapped = expr.replace(/\b(rate|increase)\((?:[^()]|\([^()]*\))*\)/g, '');
    return wrapped.match(/\b[a-z_:]+(_total|_bucket|_sum|_count)\b/g) ?? [];
  }

  it('no panel reads a raw counter', () => {
    for (const { panel, expr } of queries) expect(rawCounters(expr), `${panel}: ${expr}`).toEqual([]);
  });

  it('the stat panels total the time range: segments by result and the size ratio', () => {
    const exprOf = (title: string) => queries.find((q) => q.panel === title)?.expr;
    expect(exprOf('Segments handled, by result')).toBe(
      'sum by (result) (increase(seglift_segments_total{job=~"$job"}[$__range]))',
    );
    expect(exprOf('Size after / before')).toBe(
      'sum(increase(seglift_bytes_total{job=~"$job",direction="out"}[$__range])) / sum(increase(seglift_bytes_total{job=~"$job",direction="in"}[$__range]))',
    );
  });

  it('a raw counter would be caught', () => {
    expect(rawCounters('sum by (result) (seglift_segments_total{job=~"$job"})')).toEqual([
      'seglift_segments_total',
    ]);
    expect(rawCounters('sum(rate(seglift_bytes_total{direction="in"}[5m]))')).toEqual([]);
  });
});
