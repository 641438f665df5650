/**
 * @seglift/observability: structured logs (pino), Prometheus metrics (prom-client) and the
 * /metrics, /healthz, /readyz endpoints shared by the seglift CLI, worker and watcher.
 */

export { type HttpServerHandle, type HttpServerOptions, startHttpServer } from './http.js';
export {
  type CreateLoggerOptions,
  childLogger,
  createLogger,
  formatPretty,
  LOG_LEVELS,
  type Logger,
  type LogLevel,
  type SegmentLogContext,
} from './logger.js';
export {
  CONVERSION_DURATION_BUCKETS,
  createMetrics,
  metricsSnapshot,
  QUEUE_STATES,
  type QueueState,
  Registry,
  recordSegmentReport,
  reportToPushText,
  type SegliftMetrics,
  sampleQueueOnScrape,
  setQueueCounts,
} from './metrics.js';
export { isSecretKey, REDACTED, redactString, sanitize, serializeError } from './redact.js';
