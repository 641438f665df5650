import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';

// What the deploy/ tests share: the kustomizations under deploy/, their rendering with
// `kubectl kustomize`, YAML parsing.

// biome-ignore lint/suspicious/noExplicitAny: untyped YAML, every field used is asserted
export type Obj = Record<string, any>;

export const deployDir = dirname(fileURLToPath(import.meta.url));

/**
 * Every kustomization an operator applies, with the namespace its Jobs run in. A new one under
 * deploy/ must be added here: the tests check that the list is complete.
 */
export const KUSTOMIZATIONS = {
  base: 'kafka',
  'overlays/archive-bucket': 'seglift',
  'overlays/statefulset': 'kafka',
  'overlays/strimzi': 'kafka',
  'overlays/strimzi-jbod': 'kafka',
} as const;
export type KustomizationDir = keyof typeof KUSTOMIZATIONS;
export const kustomizationDirs = Object.keys(KUSTOMIZATIONS) as KustomizationDir[];

export function yamlFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? yamlFiles(join(dir, e.name)) : /\.ya?ml$/.test(e.name) ? [join(dir, e.name)] : [],
  );
}

export function parseText(text: string, label: string): Obj[] {
  const out: Obj[] = [];
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0) throw new Error(`${label}: ${doc.errors.map((e) => e.message).join('; ')}`);
    const value = doc.toJS() as Obj | null;
    if (value !== null) out.push(value);
  }
  return out;
}

export function parseFile(file: string): Obj[] {
  return parseText(readFileSync(file, 'utf8'), file);
}

/** The kustomization.yaml of a directory under deploy/ (a Kustomization or a Component). */
export function kustomization(dir: string): Obj {
  return parseFile(join(deployDir, dir, 'kustomization.yaml'))[0];
}

/** Every directory under deploy/ with a kustomization.yaml, relative to deploy/. */
export function kustomizationDirsOnDisk(): string[] {
  return yamlFiles(deployDir)
    .filter((f) => f.endsWith('/kustomization.yaml'))
    .map((f) => relative(deployDir, dirname(f)))
    .sort();
}

const rendered = new Map<string, Obj[]>();

/** `kubectl kustomize deploy/<dir>`, parsed (once per run). */
export function render(dir: string): Obj[] {
  let docs = rendered.get(dir);
  if (docs === undefined) {
    const out = execFileSync('kubectl', ['kustomize', join(deployDir, dir)], { encoding: 'utf8' });
    docs = parseText(out, `kubectl kustomize ${dir}`);
    rendered.set(dir, docs);
  }
  return structuredClone(docs);
}

export function find(docs: Obj[], kind: string, name: string): Obj {
  const found = docs.find((d) => d.kind === kind && d.metadata?.name === name);
  if (!found) throw new Error(`no ${kind} ${name}`);
  return found;
}

/** The workloads with a pod template. */
export function workloads(docs: Obj[]): Obj[] {
  return docs.filter((d) => d.kind === 'Job' || d.kind === 'Deployment');
}

export function container(workload: Obj, name: string): Obj {
  const c = (workload.spec.template.spec.containers as Obj[]).find((x) => x.name === name);
  if (!c) throw new Error(`no container ${name} in ${workload.metadata.name}`);
  return c;
}
