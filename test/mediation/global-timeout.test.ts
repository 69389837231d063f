/**
 * [mediation] engine.global_timeout_interval through the gateway (spec 001): a backend whose response head
 * has not arrived in time fails the call with 103064 (504); its late response is dropped, with a warning.
 */
import * as net from 'node:net';
import t from 'tap';
import { BASE_TOML, HOST, apiToml, request, startGateway, until } from '../gateway/helpers';

t.test('no response head within global_timeout_interval: 103064 (504) and a global_timeout warning', async (t) => {
  const late: net.Socket[] = [];
  const server = net.createServer((s) => {
    s.on('error', () => {});
    s.on('data', () => {
      late.push(s);
      setTimeout(() => {
        if (!s.destroyed) s.end('HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nlate');
      }, 1500);
    });
  });
  await new Promise<void>((r) => server.listen(0, HOST, () => r()));
  t.teardown(() => {
    for (const s of late) s.destroy();
    server.close();
  });
  const port = (server.address() as net.AddressInfo).port;
  const g = await startGateway(`${BASE_TOML}[mediation]\nengine.global_timeout_interval = 300\n`, {
    s: apiToml({ context: '/s', endpoint: `http://127.0.0.1:${port}`, resources: [['/*', ['GET']]] }),
  });
  t.teardown(() => g.close());
  const res = await request(g.port, '/s/1.0.0/slow');
  t.equal(res.status, 504);
  t.equal(res.json().fault.code, 103064);
  t.equal(res.json().fault.message, 'Gateway Timeout');
  const warn = g.logger.lines.find((l) => l.event === 'global_timeout');
  t.equal(warn?.level, 'warn');
  t.match(String(warn?.message), /late response is dropped/);
  // The gateway's FIN or RST reaches the backend's socket a moment after the 504 reaches the client.
  const closed = (): boolean => late[0]?.destroyed === true || late[0]?.readableEnded === true || late[0]?.closed === true;
  t.equal(await until(closed, 1000), true, 'the backend connection was closed by the gateway (before the late response at 1.5 s)');
});

t.test('the default (120 s) does not touch a prompt backend', async (t) => {
  const server = net.createServer((s) => {
    s.on('error', () => {});
    s.on('data', () => s.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok'));
  });
  await new Promise<void>((r) => server.listen(0, HOST, () => r()));
  t.teardown(() => server.close());
  const port = (server.address() as net.AddressInfo).port;
  const g = await startGateway(BASE_TOML, {
    s: apiToml({ context: '/s', endpoint: `http://127.0.0.1:${port}`, resources: [['/*', ['GET']]] }),
  });
  t.teardown(() => g.close());
  t.equal(g.gw.transport.settings.globalTimeout, 120000, "the spec's default reaches the transport");
  t.equal((await request(g.port, '/s/1.0.0/x')).body, 'ok');
});
