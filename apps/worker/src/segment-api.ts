import type { ConvertFn } from './types.js';

/**
 * @seglift/segment's entry points, loaded lazily and typed structurally (the worker depends only
 * on the documented contract).
 */
export interface SegmentApi {
  convertSegment: ConvertFn;
  recoverLeftovers: (partitionDir: string) => Promise<unknown>;
}

export async function loadSegmentApi(): Promise<SegmentApi> {
  const mod = (await import('@seglift/segment')) as unknown as Partial<SegmentApi>;
  if (typeof mod.convertSegment !== 'function' || typeof mod.recoverLeftovers !== 'function') {
    throw new Error('@seglift/segment does not export convertSegment/recoverLeftovers');
  }
  return { convertSegment: mod.convertSegment, recoverLeftovers: mod.recoverLeftovers };
}
