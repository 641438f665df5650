// Process helpers the benchmarks share.
import { spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import os from 'node:os';

/** The median of `xs` (the mean of the middle two for an even count). */
export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** `cmd args` to completion; its stdout, or an error with its exit status and output. */
export const sh = (cmd, args, opts = {}) => {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, ...opts });
  if (r.status !== 0)
    throw new Error(`${cmd} ${args.join(' ')} exited with ${r.status}\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
};

/** A loopback TCP port free at the moment of asking. */
export const freePort = () =>
  new Promise((res, rej) => {
    const s = createServer();
    s.on('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => res(port));
    });
  });

/** A run's conditions, the first line of a bench's table: date, node, cores, load average. */
export const conditions = () =>
  `${new Date().toISOString().slice(0, 10)}, node ${process.version}, ${os.availableParallelism()} cores, load ${os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`;
