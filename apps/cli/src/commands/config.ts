import { CONFIG_FILE_ENV, ENV_VARS, formatConfig, loadConfigWithSources } from '@seglift/config';
import { flag, parse, str } from '../args.js';
import type { Command, CommandContext } from '../command.js';
import { EXIT_CODES_HELP, ExitCode, UsageError } from '../exit-codes.js';

const ENV_WIDTH = Math.max(...ENV_VARS.map((v) => v.env.length));

const HELP = `Usage: seglift config print [--config FILE] [--json]

Print the effective configuration: defaults < config file (--config, else $SEGLIFT_CONFIG)
< SEGLIFT_* environment variables, loaded exactly as convert, migrate and audit load them
(their flags then override these settings for that run). Secrets (passwords in URLs) are redacted. The YAML form
marks every value that does not come from the defaults with '# from <source>'.

Options:
  --config FILE   YAML or JSON config file
  --json          print JSON instead of YAML
  -h, --help      this text

An invalid configuration lists every problem and exits with 2. A SEGLIFT_* variable that is
not one of these is ignored with a warning naming the nearest one.

Environment variables (every seglift program reads them; a flag beats its variable):
  ${CONFIG_FILE_ENV.padEnd(ENV_WIDTH)}  the config file
${ENV_VARS.map((v) => `  ${v.env.padEnd(ENV_WIDTH)}  ${v.path}`).join('\n')}

${EXIT_CODES_HELP}
`;

export interface ConfigPrintOptions {
  config?: string;
  json?: boolean;
}

export const configCommand: Command = {
  name: 'config',
  help: HELP,
  async run(argv, ctx) {
    const p = parse('config', argv, { config: { type: 'string' }, json: { type: 'boolean' } });
    const [sub, ...extra] = p.positionals;
    if (sub !== 'print') {
      throw new UsageError(
        sub === undefined ? 'missing subcommand (print)' : `unknown subcommand '${sub}'`,
        'config',
      );
    }
    if (extra.length > 0) throw new UsageError(`unexpected argument '${extra[0]}'`, 'config');
    return configPrint(ctx, { config: str(p, 'config'), json: flag(p, 'json') });
  },
};

export async function configPrint(ctx: CommandContext, options: ConfigPrintOptions = {}): Promise<number> {
  const { config, sources, warnings } = await loadConfigWithSources({
    file: options.config,
    env: ctx.io.env,
  });
  for (const w of warnings) ctx.err.line(`warning: ${w}`);
  ctx.out.write(formatConfig(config, { format: options.json ? 'json' : 'yaml', sources }));
  return ExitCode.OK;
}
