import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createMetrics } from '@seglift/observability';
import { describe, expect, it } from 'vitest';

// The Grafana dashboard shipped for operators of a migration: every query must name series the
// programs export (a renamed metric would leave a panel silently empty).

// biome-ignore lint/suspicious/noExplicitAny: untyped JSON, every field used is asserted
type Obj = Record<string, any>;

const file = join(dirname(fileURLToPath(import.meta.url)), 'grafana', 'seglift-dashboard.json');
const dashboard = JSON.parse(readFileSync(file, 'utf8')) as Obj;
const panels = dashboard.panels as Obj[];
const queries = panels.flatMap((p) =>
  (p.targets as Obj[]).map((t) => ({ panel: p.title as string, expr: t.expr as string })),
);

/** Every series name the programs export, with the labels each may carry. */
async function exported(): Promise<Map<string, Set<string>>> {
  const { registry } = createMetrics();
  const series = new Map<string, Set<string>>();
  for (const m of registry.getMetricsAsArray()) {
    const { name, labelNames = [] } = m as unknown as { name: string; labelNames?: string[] };
    const type = (await m.get()).type;
    const labels = new Set([...labelNames, 'job', 'instance']);
    if (type === 'histogram') {
      series.set(`${name}_bucket`, new Set([...labels, 'le']));
      series.set(`${name}_sum`, labels);
      series.set(`${name}_count`, labels);
    } else series.set(name, labels);
  }
  return series;
}

/** PromQL words that are not series names. */
const PROMQL = new Set([
  'sum',
  'max',
  'min',
  'avg',
  'by',
  'without',
  'rate',
  'increase',
  'histogram_quantile',
  'label_values',
]);

/** The series names a PromQL expression reads: identifiers followed by `{` or `[`, or bare ones. */
function seriesOf(expr: string): string[] {
  const stripped = expr.replace(/"[^"]*"/g, '""').replace(/\[[^\]]*\]/g, '');
  const ids = stripped.match(/[a-zA-Z_:][a-zA-Z0-9_:]*/g) ?? [];
  const inBraces = new Set(
    [...stripped.matchAll(/\{([^}]*)\}/g)].flatMap((m) => m[1].match(/[a-zA-Z_]\w*/g) ?? []),
  );
  const inBy = new Set([...stripped.matchAll(/\bby \(([^)]*)\)/g)].flatMap((m) => m[1].split(/\s*,\s*/)));
  return ids.filter((id) => !PROMQL.has(id) && !inBraces.has(id) && !inBy.has(id));
}

/** The labels an expression matches on or groups by. */
function labelsOf(expr: string): string[] {
  const stripped = expr.replace(/"[^"]*"/g, '""');
  return [
    ...[...stripped.matchAll(/\{([^}]*)\}/g)].flatMap((m) =>
      [...m[1].matchAll(/([a-zA-Z_]\w*)\s*(=~|!=|!~|=)/g)].map((x) => x[1]),
    ),
    ...[...stripped.matchAll(/\bby \(([^)]*)\)/g)].flatMap((m) => m[1].split(/\s*,\s*/)),
  ];
}

describe('deploy/grafana/seglift-dashboard.json', () => {
  it('is a Grafana dashboard: uid, title, unique panel ids, a Prometheus data source variable', () => {
    expect(dashboard).toMatchObject({ uid: 'seglift-migration', title: 'seglift migration' });
    expect(new Set(panels.map((p) => p.id)).size).toBe(panels.length);
    const ds = (dashboard.templating.list as Obj[]).find((v) => v.type === 'datasource');
    expect(ds).toMatchObject({ name: 'datasource', query: 'prometheus' });
    for (const p of panels) {
      // biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's variable syntax
      expect(p.datasource.uid, p.title).toBe('${datasource}');
      expect(p.targets.length, p.title).toBeGreaterThan(0);
      expect(p.description, p.title).toBeTypeOf('string');
    }
  });

  it('every query reads only series the programs export, with labels those series have', async () => {
    const series = await exported();
    for (const { panel, expr } of queries) {
      const names = seriesOf(expr);
      expect(names.length, `${panel}: ${expr}`).toBeGreaterThan(0);
      const labels = new Set(names.flatMap((n) => [...(series.get(n) ?? [])]));
      for (const n of names) expect(series.has(n), `${panel}: ${n} is not exported`).toBe(true);
      for (const l of labelsOf(expr))
        expect(labels.has(l), `${panel}: no series of ${expr} has label ${l}`).toBe(true);
    }
  });

  it('shows what a migration is watched by: results, bytes in/out, throughput, queue, errors, durations', () => {
    const reads = (metric: string) =>
      queries.filter((q) => seriesOf(q.expr).includes(metric)).map((q) => q.panel);
    expect(reads('seglift_segments_total')).toContain('Segments by result');
    expect(reads('seglift_bytes_total')).toEqual(expect.arrayContaining(['Bytes in / out', 'Throughput']));
    expect(reads('seglift_queue_jobs')).toContain('Queue depth');
    expect(reads('seglift_errors_total')).toContain('Errors by code');
    expect(reads('seglift_conversion_duration_seconds_bucket')).toEqual(
      expect.arrayContaining(['Conversion duration', 'Conversion duration quantiles']),
    );
  });

  it('a misspelt metric would be caught', () => {
    expect(seriesOf('sum by (result) (increase(seglift_segment_total{job=~"$job"}[5m]))')).toEqual([
      'seglift_segment_total',
    ]);
    expect(labelsOf('max by (state) (seglift_queue_jobs{job=~"$job",x="1"})')).toEqual(['job', 'x', 'state']);
  });
});
