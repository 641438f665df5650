/**
 * The YAML parser, in a module of its own that the loader imports only to read a YAML file
 * (load.ts). Imported by name here, not with `import('yaml')` there: yaml is CommonJS, and a
 * bundle's dynamic import of CommonJS gives its exports as `default` only.
 */
export { parse as parseYaml } from 'yaml';
