#!/usr/bin/env node
// Bundles a program into one file with esbuild: `dist/main.js` (+ .map), over tsc's own
// dist/main.js, from `src/main.ts` and the workspace packages' dist/; the launcher
// (scripts/stamp-bin.mjs) runs it as before. The rest of tsc's dist/ stays for the tests and
// the packages' public APIs. Why: node spends
// most of a start-up resolving, reading and compiling hundreds of modules (issue 26; measured in
// bench/startup.bench.mjs and docs/benchmarks.md). Run by each app's build from its directory:
//   node ../../scripts/bundle.mjs [--thread]
// --thread also bundles the conversion thread (packages/segment's conversion-thread.js) as
// `dist/conversion-thread.js`: the pool looks for it beside the module that starts it (pool.ts,
// conversionThreadPath), here the bundle.
// Not bundled: the native modules (loaded from node_modules at their first use; each app depends
// on them itself so that they resolve from its dist/). The maps chain through tsc's own, so a
// stack names our .ts files under `node --enable-source-maps`.
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

/** Native modules (dlopened .node files): never bundled. */
export const NATIVE_MODULES = ['zstd-napi', 'lz4-napi', 'snappy', '@node-rs/crc32', 'koffi'];

// CommonJS dependencies call require(): an ESM bundle has none of its own.
const BANNER =
  "import { createRequire as __segliftRequire } from 'node:module';\nconst require = __segliftRequire(import.meta.url);";

const REPO = fileURLToPath(new URL('..', import.meta.url));

/** Whether a resolved file is one of ours (a workspace package or app, not a dependency). */
const isOurs = (file) => file.startsWith(REPO) && !file.split(sep).includes('node_modules');

/**
 * What a module of ours (tsc's output) exports, and from where: exported name -> [file, name].
 * Reads `export { a, b as c } from './x.js'`, `export * from './y.js'` (y's own, recursively),
 * `export { d }` and `export const|function|class e`: the forms tsc writes.
 */
function exportsOf(file, seen = new Set()) {
  const map = new Map();
  if (seen.has(file)) return map;
  seen.add(file);
  const text = readFileSync(file, 'utf8');
  const list = (names, from) => {
    for (const spec of names
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean)) {
      const [name, as = name] = spec.split(/\s+as\s+/);
      map.set(as, [from, name]);
    }
  };
  for (const m of text.matchAll(/^export\s*\{([^}]*)\}\s*from\s*'(\.[^']+)';/gm)) {
    list(m[1], join(dirname(file), m[2]));
  }
  for (const m of text.matchAll(/^export \* from '(\.[^']+)';/gm)) {
    for (const [k, v] of exportsOf(join(dirname(file), m[1]), seen)) if (k !== 'default') map.set(k, v);
  }
  for (const m of text.matchAll(/^export\s*\{([^}]*)\};/gm)) list(m[1], file);
  for (const m of text.matchAll(
    /^export (?:async )?(?:function\*?|class|const|let|var) ([A-Za-z_$][\w$]*)/gm,
  )) {
    map.set(m[1], [file, m[1]]);
  }
  return map;
}

const IMPORT_FROM_WORKSPACE = /\b(import|export)\s*\{([^}]*)\}\s*from\s*'(@seglift\/[a-z-]+)';/g;

/**
 * Our workspace packages run nothing when imported (no top-level effects: a rule of the
 * repository), so a program loads only the modules whose exports it uses. Two steps: they are
 * marked free of side effects, and an import of names from a package's index is rewritten to
 * import each name from the module that defines it (an index is a list of re-exports): esbuild
 * would otherwise load every module an index names, so that `seglift inspect`, importing
 * parseFlags from @seglift/config, would load its zod schema, yaml and logger too. An import
 * naming anything not found so (a form exportsOf does not read) is left as it is.
 */
const workspaceModulesOnly = {
  name: 'workspace-modules-only',
  setup(b) {
    const indexes = new Map();
    b.onResolve({ filter: /.*/ }, async (args) => {
      if (args.pluginData === 'inner' || args.kind === 'entry-point') return undefined;
      const r = await b.resolve(args.path, {
        kind: args.kind,
        importer: args.importer,
        resolveDir: args.resolveDir,
        pluginData: 'inner',
      });
      // A package that is not installed (an optional peer, e.g. ioredis's or bullmq's drivers
      // for other servers) stays a require() that fails only if it runs, as it would unbundled.
      if (r.errors.length > 0 && !/^[./]/.test(args.path)) return { path: args.path, external: true };
      if (r.errors.length > 0 || r.external) return r;
      return isOurs(r.path) && !r.path.includes(`${sep}apps${sep}`) ? { ...r, sideEffects: false } : r;
    });
    b.onLoad({ filter: /\.(ts|js)$/ }, async (args) => {
      if (!isOurs(args.path)) return undefined;
      const text = readFileSync(args.path, 'utf8');
      if (!text.includes("from '@seglift/")) return undefined;
      const resolveDir = dirname(args.path);
      const index = async (pkg) => {
        if (!indexes.has(pkg)) {
          const r = await b.resolve(pkg, { kind: 'import-statement', resolveDir, pluginData: 'inner' });
          indexes.set(pkg, r.errors.length === 0 && isOurs(r.path) ? exportsOf(r.path) : new Map());
        }
        return indexes.get(pkg);
      };
      let out = '';
      let last = 0;
      for (const m of text.matchAll(IMPORT_FROM_WORKSPACE)) {
        const [, verb, names, pkg] = m;
        const map = await index(pkg);
        const specs = names
          .split(',')
          .map((x) => x.trim())
          .filter((x) => x && !x.startsWith('type '));
        const parts = specs.map((spec) => {
          const [name, local = name] = spec.split(/\s+as\s+/);
          const found = map.get(name);
          return found && `${verb} { ${found[1]} as ${local} } from ${JSON.stringify(found[0])};`;
        });
        if (parts.some((x) => !x)) continue;
        // As many lines as the original, so that the source maps still line up.
        const newlines = '\n'.repeat(m[0].split('\n').length - 1);
        out += text.slice(last, m.index) + parts.join(' ') + newlines;
        last = m.index + m[0].length;
      }
      if (last === 0) return undefined;
      return {
        contents: out + text.slice(last),
        loader: args.path.endsWith('.ts') ? 'ts' : 'js',
        resolveDir,
      };
    });
  },
};

const OPTIONS = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20.19',
  sourcemap: 'linked',
  // The maps name the files and lines; the sources themselves would triple their size.
  sourcesContent: false,
  minify: true,
  keepNames: true,
  external: NATIVE_MODULES.flatMap((m) => [m, `${m}/*`]),
  banner: { js: BANNER },
  plugins: [workspaceModulesOnly],
  logLevel: 'warning',
  // Chunks loaded on demand: `--version` compiles a few kB, not the whole program.
  splitting: true,
  chunkNames: 'chunks/[name]-[hash]',
};

/** Bundles `src/main.ts` (and the conversion thread with `thread`); returns the files written. */
export async function bundleProgram({ distDir = 'dist', thread = false } = {}) {
  const entryPoints = { main: join('src', 'main.ts') };
  if (thread) {
    // The app's own @seglift/segment (a workspace link): its package exports only its index.
    const entry = join('node_modules', '@seglift', 'segment', 'dist', 'conversion-thread.js');
    if (!existsSync(entry)) throw new Error(`${entry} is missing: build @seglift/segment first`);
    entryPoints['conversion-thread'] = entry;
  }
  rmSync(join(distDir, 'chunks'), { recursive: true, force: true });
  const r = await build({ ...OPTIONS, entryPoints, outdir: distDir, metafile: true });
  if (process.env.SEGLIFT_BUNDLE_META)
    writeFileSync(process.env.SEGLIFT_BUNDLE_META, JSON.stringify(r.metafile));
  return Object.keys(r.metafile.outputs);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const args = process.argv.slice(2);
  if (args.some((a) => a !== '--thread')) {
    console.error('usage: node scripts/bundle.mjs [--thread]   (from the app directory, after tsc)');
    process.exit(2);
  }
  await bundleProgram({ thread: args.includes('--thread') });
}
