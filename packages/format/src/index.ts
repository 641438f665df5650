export * from './errors.js';
export * from './crc.js';
export * from './types.js';
