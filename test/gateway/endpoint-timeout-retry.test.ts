/**
 * The endpoint advanced configuration of an API file reaches the transport (spec 002 part 7 rule 3):
 * `timeout` bounds a call, `retry_codes` / `retry_count` retry it on a fresh connection.
 */
import * as net from 'node:net';
import t from 'tap';
import { BASE_TOML, HOST, closedPort, request, startGateway } from './helpers';

function api(port: number, advanced: string): string {
  return `name = "S"\ncontext = "/s"\nversion = "1"\nauth = "none"\n[endpoints.production]\nurl = "http://127.0.0.1:${port}"\n${advanced}\n[[resources]]\npath = "/*"\nmethods = ["GET"]\n`;
}

t.test('timeout: a slow backend gets 101507 (101504 + REQUEST_DONE), 504, well before it answers', async (t) => {
  const server = net.createServer((s) =>
    s.on('data', () => setTimeout(() => s.end('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok'), 2000)),
  );
  await new Promise<void>((r) => server.listen(0, HOST, () => r()));
  t.teardown(() => server.close());
  const g = await startGateway(BASE_TOML, { s: api((server.address() as net.AddressInfo).port, 'timeout = "200ms"') });
  t.teardown(() => g.close());
  const started = Date.now();
  const res = await request(g.port, '/s/1/x');
  t.equal(res.status, 504);
  t.equal(res.json().fault.code, 101507);
  t.ok(Date.now() - started < 1500, 'answered by the endpoint timeout');
});

t.test('retry_codes / retry_count: a refused call is retried retry_count times, then answered 502', async (t) => {
  const port = await closedPort();
  const g = await startGateway(BASE_TOML, { s: api(port, 'retry_codes = [101503]\nretry_count = 2') });
  t.teardown(() => g.close());
  const res = await request(g.port, '/s/1/x');
  t.equal(res.status, 502);
  t.equal(res.json().fault.code, 101503);
  const retries = g.logger.lines.filter((l) => l.event === 'endpoint_retry');
  t.equal(retries.length, 2, 'two retries, as retry_count says');
  t.same(
    retries.map((l) => l.attempt),
    [2, 3],
  );
  t.ok(retries.every((l) => l.code === 101503 && l.base === 101503 && l.state === 0));
});

t.test('without retry_codes a refused call is not retried', async (t) => {
  const port = await closedPort();
  const g = await startGateway(BASE_TOML, { s: api(port, '') });
  t.teardown(() => g.close());
  t.equal((await request(g.port, '/s/1/x')).status, 502);
  t.equal(g.logger.lines.filter((l) => l.event === 'endpoint_retry').length, 0);
});
