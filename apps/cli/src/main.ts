import { runCli } from './cli.js';

// exitCode rather than exit(): pending stdout writes finish before the process ends.
process.exitCode = await runCli(process.argv.slice(2));
