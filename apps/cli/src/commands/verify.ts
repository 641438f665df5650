import { conversionSetting, type VerifyReport, verifySegment } from '@seglift/segment';
import { flag, parse, requirePositionals } from '../args.js';
import type { Command, CommandContext } from '../command.js';
import { EXIT_CODES_HELP, ExitCode, UsageError } from '../exit-codes.js';
import { errorLine } from '../failures.js';
import { toJsonLine } from '../io.js';
import { settingArgOptions, settingFlagValue, settingsHelp } from '../settings.js';
import { count } from '../table.js';
import { noSegmentsMessage, resolveTargets } from '../targets.js';

const HELP = `Usage: seglift verify <segment.log|dir>... [options]

Check segments on disk (a directory: every segment under it, found as migrate finds them): every CRC (v2 CRC-32C, legacy outer and inner CRC-32), the structure
(every record decodes, counts and lengths agree), offsets strictly increasing and not below
the base offset, and the .index/.timeindex next to each .log against the log. A missing
index is reported but is not a failure (the broker rebuilds or creates it).

Options:
  --shallow                  CRCs, sizes and offsets only, no record decoding
  --accept-truncated-tail    a partial entry at the end of the log is not a failure
${settingsHelp(['maxDecompressedBatchBytes'], 29)}
  --json                     one NDJSON report per segment
  -h, --help                 this text

${EXIT_CODES_HELP}
`;

export interface VerifyOptions {
  shallow?: boolean;
  acceptTruncatedTail?: boolean;
  maxDecompressedBytes?: number;
  json?: boolean;
}

export const verifyCommand: Command = {
  name: 'verify',
  help: HELP,
  async run(argv, ctx) {
    const p = parse('verify', argv, {
      shallow: { type: 'boolean' },
      'accept-truncated-tail': { type: 'boolean' },
      ...settingArgOptions(['maxDecompressedBatchBytes']),
      json: { type: 'boolean' },
    });
    const args = requirePositionals('verify', p, '<segment.log|dir>...');
    const { partitions, ignored } = await resolveTargets(args, 'verify');
    const files = partitions.flatMap((t) => t.segments.map((s) => s.path));
    if (files.length === 0) throw new UsageError(noSegmentsMessage(args, ignored), 'verify');
    return verify(files, ctx, {
      shallow: flag(p, 'shallow'),
      acceptTruncatedTail: flag(p, 'accept-truncated-tail'),
      // The one flag every program takes for it; verify's old --max-decompressed-bytes warns.
      maxDecompressedBytes: settingFlagValue(
        'verify',
        p,
        ctx,
        conversionSetting('maxDecompressedBatchBytes'),
      ) as number | undefined,
      json: flag(p, 'json'),
    });
  },
};

function summaryOf(r: VerifyReport): string {
  const offsets = r.firstOffset === undefined ? 'no offsets' : `offsets ${r.firstOffset}..${r.lastOffset}`;
  const before = r.stoppedAtError ? 'before the error: ' : '';
  const index = r.hasIndex ? `.index ${count(r.indexEntries, 'entry', 'entries')}` : 'no .index';
  const timeIndex = r.hasTimeIndex
    ? `.timeindex ${count(r.timeIndexEntries, 'entry', 'entries')}`
    : 'no .timeindex';
  return `${before}${count(r.entries, 'batch', 'batches')}, ${count(r.records, 'record')}, ${count(r.bytes, 'byte')}, ${offsets}, ${index}, ${timeIndex}`;
}

export async function verify(
  files: string[],
  ctx: CommandContext,
  options: VerifyOptions = {},
): Promise<number> {
  let failed = 0;
  for (const file of files) {
    const r = await verifySegment(file, {
      shallow: options.shallow,
      acceptTruncatedTail: options.acceptTruncatedTail,
      maxDecompressedBytes: options.maxDecompressedBytes,
    });
    if (!r.ok) failed++;
    if (options.json) {
      ctx.out.line(toJsonLine({ type: 'verify', ...r }));
      continue;
    }
    if (r.error && r.entries === 0 && (r.error.code === 'NOT_A_SEGMENT' || r.error.code === 'IO')) {
      // Nothing was read: the reason is the whole story (and goes to stderr below).
      ctx.out.line(`FAILED ${file}: ${String(r.error.message)}`);
      ctx.err.line(errorLine(r.error));
      continue;
    }
    ctx.out.line(`${r.ok ? 'OK' : 'FAILED'} ${file}: ${summaryOf(r)}`);
    for (const p of r.problems) {
      const where = [
        p.position !== undefined ? `position ${p.position}` : '',
        p.offset ? `offset ${p.offset}` : '',
      ]
        .filter(Boolean)
        .join(', ');
      ctx.out.line(`  ${p.kind}: ${p.message}${where ? ` (${where})` : ''}`);
    }
    if (r.error) ctx.err.line(errorLine(r.error));
  }
  if (!options.json && files.length > 1) {
    ctx.out.line(`${files.length - failed} of ${files.length} segments OK`);
  }
  return failed > 0 ? ExitCode.SEGMENT_FAILED : ExitCode.OK;
}
