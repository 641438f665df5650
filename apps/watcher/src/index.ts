export { type RunOnceOptions, type RunOnceResult, runOnce } from './once.js';
export { startWatching, type WatchHandle, type WatchOptions } from './watch.js';
