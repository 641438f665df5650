/**
 * A segment conversion: the one rewrite (rewrite.ts) composed with one of four placements
 * (placements.ts): into an out dir, in place (swap.ts), into a stage (prepare), or in place from a
 * stage (commit). A conversion is (settings, placement, hooks): the first two plain data (what a
 * conversion thread is sent), the hooks the calling thread's own (conversion.ts).
 */
import { InvalidArgumentError } from '@seglift/format';
import { targetCodec } from '../rewrite/codec.js';
import type { SegmentReport } from '../rewrite/report.js';
import { Conversion, type ConvertHooks, type ConvertSettings, type Placement } from './conversion.js';
import { inPlace, inPlaceFromStage, intoOutDir, intoStage } from './placements.js';

/**
 * Converts one segment: rewrites it (legacy entries upconverted, v2 batches recompressed, the
 * written files verified from disk) and places the result where `placement` says. Never throws
 * for a bad segment: the report says 'failed' with the typed error.
 */
export async function convertSegment(
  logPath: string,
  settings: ConvertSettings,
  placement: Placement,
  hooks: ConvertHooks = {},
): Promise<SegmentReport> {
  return new Conversion(logPath, settings, hooks).run(async (c) => {
    // An unknown codec name fails here, before anything is read.
    targetCodec(settings);
    hooks.signal?.throwIfAborted();
    switch (placement.kind) {
      case 'outDir':
        return intoOutDir(c, placement.dir);
      case 'stage':
        return intoStage(c, placement.dir);
      case 'inPlace':
        return inPlace(c, placement);
      case 'fromStage':
        return inPlaceFromStage(c, placement.dir, placement.backupDir);
      default:
        throw new InvalidArgumentError(
          `convertSegment: no placement '${(placement as { kind?: unknown }).kind}' (outDir, inPlace, stage or fromStage)`,
        );
    }
  });
}
