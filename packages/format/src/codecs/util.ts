import { createRequire } from 'node:module';
import { DecompressionError, DecompressionLimitError, SegliftError } from '../errors.js';

/**
 * A native module, loaded (dlopened) at its first use rather than at start-up: a program that
 * never compresses, or a `--version`, pays nothing for it. Resolved from this file, or from the
 * program's bundle (scripts/bundle.mjs: each app depends on the native modules itself).
 */
export function lazyNative<T>(specifier: string): () => T {
  let loaded: T | undefined;
  return () => {
    loaded ??= createRequire(import.meta.url)(specifier) as T;
    return loaded;
  };
}

/** A zero-copy Buffer view (the native codecs want Buffers; callers may hand plain Uint8Arrays). */
export function asBuffer(data: Uint8Array): Buffer {
  return Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

/** Typed errors pass through; anything a codec library throws becomes a DecompressionError. */
export function wrapDecompressError(codec: string, err: unknown): SegliftError {
  if (err instanceof SegliftError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new DecompressionError(`${codec}: cannot decompress: ${message}`, {}, { cause: err });
}

export function limitError(codec: string, maxBytes: number, size?: number): DecompressionLimitError {
  const what = size === undefined ? 'more than' : `${size} bytes, more than`;
  return new DecompressionLimitError(
    maxBytes,
    `${codec}: decompressed data would be ${what} the limit of ${maxBytes} bytes`,
  );
}

/** Concatenates decoded chunks whose total is already known (and already checked). */
export function concatChunks(chunks: Uint8Array[], total: number): Buffer {
  if (chunks.length === 1 && chunks[0].byteLength === total) return asBuffer(chunks[0]);
  return Buffer.concat(chunks, total);
}
