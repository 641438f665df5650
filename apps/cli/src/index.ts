export { COMMANDS, mainHelp, runCli } from './cli.js';
export type { Command, CommandContext } from './command.js';
export { type InspectOptions, inspect, inspectCommand } from './commands/inspect.js';
export { type BatchView, formatBatchLine, formatRecordLine, type RecordView } from './dump-format.js';
export { ExitCode, UsageError } from './exit-codes.js';
export { type CliIO, LineWriter } from './io.js';
