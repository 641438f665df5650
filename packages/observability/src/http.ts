import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

export interface HttpServerOptions {
  /** 0 picks a free port (tests). */
  port: number;
  /** Default `0.0.0.0` so the kubelet and Prometheus can reach it inside a pod. */
  host?: string;
  registry: Registry;
  /** Readiness (e.g. Redis answers PING). Default: always ready. */
  ready?: () => Promise<boolean> | boolean;
  /** A readiness check slower than this counts as not ready. Default 5000 ms. */
  readyTimeoutMs?: number;
}

export interface HttpServerHandle {
  /** The port actually bound (differs from the option when it was 0). */
  port: number;
  host: string;
  close(): Promise<void>;
}

/**
 * Serves `GET /metrics` (Prometheus text), `/healthz` (200 while the event loop answers) and
 * `/readyz` (200 when `ready()` resolves true, else 503). Anything else is 404; methods other
 * than GET/HEAD are 405.
 */
export async function startHttpServer(options: HttpServerOptions): Promise<HttpServerHandle> {
  const host = options.host ?? '0.0.0.0';
  const ready = options.ready ?? (() => true);
  const readyTimeoutMs = options.readyTimeoutMs ?? 5000;

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      send(res, 405, 'method not allowed\n', { allow: 'GET, HEAD' });
      return;
    }
    const path = (req.url ?? '/').split('?')[0];
    switch (path) {
      case '/metrics': {
        const body = await options.registry.metrics();
        send(res, 200, body, { 'content-type': options.registry.contentType });
        return;
      }
      case '/healthz':
        send(res, 200, 'ok\n');
        return;
      case '/readyz': {
        const ok = await checkReady(ready, readyTimeoutMs);
        send(res, ok ? 200 : 503, ok ? 'ready\n' : 'not ready\n');
        return;
      }
      default:
        send(res, 404, 'not found\n');
    }
  };

  const server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) send(res, 500, 'internal error\n');
      else res.destroy();
    });
  });
  // Probes and scrapes are short; idle keep-alive sockets must not hold close() open.
  server.keepAliveTimeout = 5000;

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  return {
    port: address.port,
    host,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      }),
  };
}

async function checkReady(ready: () => Promise<boolean> | boolean, timeoutMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs);
    timer.unref();
  });
  try {
    return (await Promise.race([Promise.resolve().then(ready), timeout])) === true;
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

function send(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, {
    'content-type': 'text/plain; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    ...headers,
  });
  res.end(res.req.method === 'HEAD' ? undefined : body);
}
