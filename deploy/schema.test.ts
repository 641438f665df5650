import { join } from 'node:path';
import { kubectl, needs } from '@seglift/testkit';
import ts from 'typescript';
import { beforeAll, expect, it } from 'vitest';
import { deployDir, kustomizationDirs, type Obj, render } from './kustomize.js';

// Every rendered kustomization against the Kubernetes API schemas, twice over, with the models of
// the `kubernetes-models` package (generated from the OpenAPI schemas of a current Kubernetes: its
// PodSpec has 1.34's hostnameOverride):
// - each object through its model's validate(), the OpenAPI schema compiled by ajv: types,
//   enums, formats, required fields. The schemas do not forbid unknown fields, and kubectl's
//   strict field validation would refuse one at apply time;
// - so also each object as a TypeScript object literal of the model's interface, compiled:
//   TypeScript's excess property check rejects a field the API does not have, at any depth.

/** The model module and interface of an apiVersion and kind. */
function model(doc: Obj): { module: string; iface: string } {
  const [group, version] = String(doc.apiVersion).includes('/')
    ? String(doc.apiVersion).split('/')
    : ['', String(doc.apiVersion)];
  const module =
    group === ''
      ? `kubernetes-models/${version}/${doc.kind}`
      : `kubernetes-models/${group}/${version}/${doc.kind}`;
  return { module, iface: `I${doc.kind}` };
}

async function validateWithModel(doc: Obj): Promise<void> {
  const { module } = model(doc);
  const mod = (await import(module)) as Record<string, new (data: Obj) => { validate(): void }>;
  const Model = mod[doc.kind as string];
  if (Model === undefined) throw new Error(`${module} has no model ${doc.kind}`);
  new Model(doc).validate();
}

interface Checked {
  label: string;
  docs: Obj[];
}

/** TypeScript's diagnostics for each document, compiled as `const d: I<Kind> = <document>`. */
function typeCheck(sets: Checked[]): Map<string, string[]> {
  const files = new Map<string, { text: string; spans: { start: number; end: number; what: string }[] }>();
  sets.forEach((set, i) => {
    const imports = new Set<string>();
    const spans: { start: number; end: number; what: string }[] = [];
    let body = '';
    set.docs.forEach((doc, j) => {
      const { module, iface } = model(doc);
      imports.add(`import type { ${iface} } from '${module}';\n`);
      const start = body.length;
      body += `export const d${j}: ${iface} = ${JSON.stringify(doc, null, 1)};\n`;
      spans.push({ start, end: body.length, what: `${doc.kind}/${doc.metadata?.name}` });
    });
    const head = [...imports].join('');
    files.set(join(deployDir, `__checked_${i}.ts`), {
      text: head + body,
      spans: spans.map((s) => ({ ...s, start: s.start + head.length, end: s.end + head.length })),
    });
  });
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: [],
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, lang, ...rest) => {
    const f = files.get(name);
    return f ? ts.createSourceFile(name, f.text, lang) : getSourceFile(name, lang, ...rest);
  };
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => files.has(name) || fileExists(name);
  const readFile = host.readFile.bind(host);
  host.readFile = (name) => files.get(name)?.text ?? readFile(name);
  const program = ts.createProgram([...files.keys()], options, host);
  const out = new Map<string, string[]>();
  [...files.entries()].forEach(([name, f], i) => {
    const problems = ts.getPreEmitDiagnostics(program, program.getSourceFile(name)).map((d) => {
      const span = f.spans.find((s) => d.start !== undefined && d.start >= s.start && d.start < s.end);
      return `${span?.what ?? 'imports'}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`;
    });
    out.set(sets[i].label, problems);
  });
  return out;
}

const OBJECTS = {
  base: 12,
  'overlays/archive-bucket': 14,
  'overlays/statefulset': 5,
  'overlays/strimzi': 5,
  'overlays/strimzi-jbod': 5,
};

const job = (spec: Obj): Obj => ({
  apiVersion: 'batch/v1',
  kind: 'Job',
  metadata: { name: 'bad' },
  spec: {
    template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'seglift' }] } },
    ...spec,
  },
});

needs(kubectl).describe('every rendered kustomization is valid against the Kubernetes API schemas', () => {
  let problems: Map<string, string[]>;
  beforeAll(() => {
    problems = typeCheck([
      ...kustomizationDirs.map((dir) => ({ label: dir, docs: render(dir) })),
      // A misspelled field, deep in the pod template, and one at the top of the spec.
      {
        label: 'unknown fields',
        docs: [
          job({ podFailurPolicy: { rules: [] } }),
          job({
            template: {
              spec: {
                restartPolicy: 'Never',
                containers: [
                  { name: 'c', image: 'seglift', securityContext: { readOnlyRootFileSystem: true } },
                ],
              },
            },
          }),
        ],
      },
    ]);
  }, 60_000);

  for (const dir of kustomizationDirs) {
    it(`${dir}: every object passes its model's OpenAPI validation and has only fields the API knows`, async () => {
      const docs = render(dir);
      expect(docs.length).toBe(OBJECTS[dir]);
      for (const doc of docs)
        await expect(validateWithModel(doc), `${doc.kind}/${doc.metadata.name}`).resolves.toBeUndefined();
      expect(problems.get(dir)).toEqual([]);
    });
  }

  it('the type check rejects a field the API does not have, at the top of a spec and deep in a pod template', () => {
    expect(problems.get('unknown fields')).toEqual([
      `Job/bad: Object literal may only specify known properties, and '"podFailurPolicy"' does not exist in type 'IJobSpec'.`,
      `Job/bad: Object literal may only specify known properties, and '"readOnlyRootFileSystem"' does not exist in type 'ISecurityContext'.`,
    ]);
  });

  it("the models' validation rejects a wrong type, a bad enum value and a missing required field", async () => {
    await expect(validateWithModel(job({ parallelism: 'two' }))).rejects.toThrow(/parallelism/);
    await expect(validateWithModel(job({ completionMode: 'Sequential' }))).rejects.toThrow(/completionMode/);
    const noImage = job({});
    delete noImage.spec.template.spec.containers[0].name;
    await expect(validateWithModel(noImage)).rejects.toThrow(/name/);
    await expect(validateWithModel(job({}))).resolves.toBeUndefined();
  });
});
