export { COMMANDS, mainHelp, runCli } from './cli.js';
export type { Command, CommandContext } from './command.js';
export {
  type AuditOptions,
  audit,
  auditCommand,
  auditPartitions,
  DEFAULT_SAMPLE_BYTES,
  type PartitionAudit,
} from './commands/audit.js';
export { type ConfigPrintOptions, configCommand, configPrint } from './commands/config.js';
export { type ConvertCliOptions, convert, convertCommand } from './commands/convert.js';
export { baseOffsetOfFile, type InspectOptions, inspect, inspectCommand } from './commands/inspect.js';
export { type MigrateCliOptions, migrateCommand, migrateDirs } from './commands/migrate.js';
export { type VerifyOptions, verify, verifyCommand } from './commands/verify.js';
export { type DecodedEntry, decodeEntry } from './decode.js';
export { type BatchView, formatBatchLine, formatRecordLine, type RecordView } from './dump-format.js';
export { EXIT_CODES_HELP, ExitCode, exitCodeOf, formatError, UsageError } from './exit-codes.js';
export { type CliIO, LineWriter, processIO } from './io.js';
export { LogFileReader } from './log-reader.js';
