import { request } from 'node:http';
import { emptyReport } from '@seglift/segment';
import { afterEach, describe, expect, it } from 'vitest';
import { type HttpServerHandle, startHttpServer } from './http.js';
import { createMetrics, recordSegmentReport } from './metrics.js';

function get(
  port: number,
  path: string,
  method = 'GET',
): Promise<{ status: number; body: string; type: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        body += c;
      });
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, body, type: String(res.headers['content-type']) }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

describe('startHttpServer', () => {
  let server: HttpServerHandle | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('serves /metrics with the seglift series and the Prometheus content type', async () => {
    const metrics = createMetrics();
    recordSegmentReport(
      metrics,
      {
        ...emptyReport('/logs/t-0/00000000000000000000.log'),
        result: 'converted',
        bytesIn: 100,
        bytesOut: 50,
        batchesIn: 2,
        batchesOut: 1,
        recordsIn: 10,
        recordsOut: 10,
        durationMs: 3,
      },
      'lz4',
    );
    server = await startHttpServer({ port: 0, host: '127.0.0.1', registry: metrics.registry });
    expect(server.port).toBeGreaterThan(0);
    const res = await get(server.port, '/metrics');
    expect(res.status).toBe(200);
    expect(res.type).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(res.body).toContain('seglift_segments_total{result="converted"} 1\n');
    expect(res.body).toContain('seglift_bytes_total{direction="out",codec="lz4"} 50\n');
    expect(res.body).toContain('process_cpu_user_seconds_total');
  });

  it('answers /healthz always and /readyz from ready(), sync or async', async () => {
    let ready = false;
    server = await startHttpServer({
      port: 0,
      host: '127.0.0.1',
      registry: createMetrics().registry,
      ready: async () => ready,
    });
    expect(await get(server.port, '/healthz')).toMatchObject({ status: 200, body: 'ok\n' });
    expect(await get(server.port, '/readyz')).toMatchObject({ status: 503, body: 'not ready\n' });
    ready = true;
    expect(await get(server.port, '/readyz?verbose=1')).toMatchObject({ status: 200, body: 'ready\n' });
  });

  it('is not ready when ready() throws or is slower than the timeout', async () => {
    const registry = createMetrics().registry;
    server = await startHttpServer({
      port: 0,
      host: '127.0.0.1',
      registry,
      ready: () => {
        throw new Error('redis down');
      },
    });
    expect((await get(server.port, '/readyz')).status).toBe(503);
    await server.close();
    server = await startHttpServer({
      port: 0,
      host: '127.0.0.1',
      registry,
      readyTimeoutMs: 50,
      ready: () => new Promise<boolean>(() => {}),
    });
    expect((await get(server.port, '/readyz')).status).toBe(503);
  });

  it('is ready by default, 404 on unknown paths, 405 on other methods, empty body on HEAD', async () => {
    server = await startHttpServer({ port: 0, host: '127.0.0.1', registry: createMetrics().registry });
    expect((await get(server.port, '/readyz')).status).toBe(200);
    expect((await get(server.port, '/nope')).status).toBe(404);
    expect((await get(server.port, '/metrics', 'POST')).status).toBe(405);
    expect(await get(server.port, '/healthz', 'HEAD')).toMatchObject({ status: 200, body: '' });
  });

  it('rejects when the port is taken and closes cleanly', async () => {
    server = await startHttpServer({ port: 0, host: '127.0.0.1', registry: createMetrics().registry });
    await expect(
      startHttpServer({ port: server.port, host: '127.0.0.1', registry: createMetrics().registry }),
    ).rejects.toThrow(/EADDRINUSE/);
    const port = server.port;
    await server.close();
    server = undefined;
    await expect(get(port, '/healthz')).rejects.toThrow(/ECONNREFUSED/);
  });
});
