/**
 * The other process of bench/throttling.ts: a backend answering every request with a small 200, and a
 * keep-alive client. It prints `{"backend": port}`, then for each stdin line `<port> <path> <calls>
 * <concurrency>` runs that many GETs and prints `{"p50": ms, "p99": ms, "statuses": {...}}`. Kept out of
 * the gateway's process so that the gateway's CPU time is its own.
 */
import * as http from 'node:http';
import { performance } from 'node:perf_hooks';
import * as readline from 'node:readline';

const backend = http.createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': '11' });
  res.end('{"ok":true}');
});

async function run(
  port: number,
  path: string,
  calls: number,
  concurrency: number,
): Promise<{ p50: number; p99: number; statuses: Record<string, number> }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const times: number[] = [];
  const statuses: Record<string, number> = {};
  let next = 0;
  const one = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const t0 = performance.now();
      http
        .get({ host: '127.0.0.1', port, path, agent }, (res) => {
          res.resume();
          res.on('end', () => {
            times.push(performance.now() - t0);
            statuses[String(res.statusCode)] = (statuses[String(res.statusCode)] ?? 0) + 1;
            resolve();
          });
        })
        .on('error', reject);
    });
  const worker = async (): Promise<void> => {
    while (next++ < calls) await one();
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  agent.destroy();
  times.sort((a, b) => a - b);
  const at = (q: number): number => times[Math.min(times.length - 1, Math.floor(q * times.length))] as number;
  return { p50: at(0.5), p99: at(0.99), statuses };
}

backend.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ backend: (backend.address() as { port: number }).port })}\n`);
});
const lines = readline.createInterface({ input: process.stdin });
lines.on('line', (line) => {
  const [port, path, calls, concurrency] = line.trim().split(/\s+/);
  void run(Number(port), path as string, Number(calls), Number(concurrency)).then((r) => process.stdout.write(`${JSON.stringify(r)}\n`));
});
lines.on('close', () => backend.close());
