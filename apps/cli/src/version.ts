import { readFileSync } from 'node:fs';

/** The package version; package.json sits one level above both src/ and dist/. */
export function cliVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  return pkg.version;
}
