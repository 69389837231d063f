/**
 * Endpoint advanced configuration (spec 002, part 7, rule 3): a call failing with one of the endpoint's
 * suspend codes suspends it; calls meanwhile get 103007 (503, Retry-After) without a connection attempt;
 * later failures suspend for longer (factor, capped); an answer from the backend resets the progression.
 */
import * as net from 'node:net';
import t from 'tap';
import { BASE_TOML, closedPort, HOST, request, sleep, startGateway } from './helpers';
import { EndpointRuntime } from '../../lib/gateway/endpoints';
import { targetFromUrl } from '../../lib/transport/types';
import { makeFault } from '../../lib/transport/codes';
import { ProtocolState } from '../../lib/transport/states';

function api(port: number, advanced: string): string {
  return `name = "S"\ncontext = "/s"\nversion = "1"\nauth = "none"\n[endpoints.production]\nurl = "http://127.0.0.1:${port}"\n${advanced}\n[[resources]]\npath = "/*"\nmethods = ["GET"]\n`;
}

t.test('suspended after a suspend code; 103007 with Retry-After; tried again after the duration', async (t) => {
  const port = await closedPort();
  const g = await startGateway(BASE_TOML, { s: api(port, 'suspend_codes = [101503]\nsuspend_duration = 400') });
  t.teardown(() => g.close());
  let connects = 0;
  const first = await request(g.port, '/s/1/x');
  t.equal(first.status, 502);
  t.equal(first.json().fault.code, 101503);
  t.ok(g.logger.lines.some((l) => l.event === 'endpoint_suspended' && l.code === 101503 && l.durationMs === 400));
  const second = await request(g.port, '/s/1/x');
  t.equal(second.status, 503);
  t.same(second.json(), {
    fault: {
      code: 103007,
      type: 'Status report',
      message: 'Endpoint suspended',
      description: 'The backend endpoint is suspended after failing with one of its suspend codes (Retry-After gives the seconds left)',
    },
  });
  t.equal(second.headers['retry-after'], '1');
  // Bring the backend up on the same port: while suspended, nothing reaches it.
  const server = net.createServer((s) => {
    connects++;
    s.on('data', () => s.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok'));
  });
  await new Promise<void>((r) => server.listen(port, HOST, () => r()));
  t.teardown(() => server.close());
  t.equal((await request(g.port, '/s/1/x')).status, 503);
  t.equal(connects, 0, 'no connection attempt while suspended');
  await sleep(450);
  const back = await request(g.port, '/s/1/x');
  t.equal(back.status, 200, 'tried again once the suspension ran out');
  t.equal(connects, 1);
});

t.test('codes not listed do not suspend; base codes match every state', async (t) => {
  const port = await closedPort();
  const g = await startGateway(BASE_TOML, { s: api(port, 'suspend_codes = [101504]') });
  t.teardown(() => g.close());
  t.equal((await request(g.port, '/s/1/x')).status, 502);
  t.equal((await request(g.port, '/s/1/x')).status, 502, 'connection refused (101503) is not a suspend code here');
  const ep = new EndpointRuntime(
    {
      url: 'http://127.0.0.1:1',
      suspendCodes: [101504],
      suspendDuration: 1000,
      suspendMaxDuration: 1000,
      suspendFactor: 1,
      timeout: undefined,
      retryCodes: [],
      retryCount: 1,
    },
    targetFromUrl('http://127.0.0.1:1'),
  );
  t.ok(ep.matches(makeFault('socket_timeout', ProtocolState.RESPONSE_HEAD)), '101508 = 101504 + 4 matches base 101504');
  t.notOk(ep.matches(makeFault('connect_timeout', ProtocolState.REQUEST_READY)), '101508 = 101508 + 0 is another base');
  t.notOk(ep.matches(makeFault('client_timeout', ProtocolState.REQUEST_BODY)), 'client-side faults never suspend an endpoint');
});

t.test('progression: factor, cap, reset on success; in-flight failures count once', async (t) => {
  const def = {
    url: 'http://127.0.0.1:1',
    suspendCodes: [101503],
    suspendDuration: 1000,
    suspendMaxDuration: 3000,
    suspendFactor: 2,
    timeout: undefined,
    retryCodes: [],
    retryCount: 1,
  };
  const ep = new EndpointRuntime(def, targetFromUrl(def.url));
  const f = makeFault('connect_refused', ProtocolState.REQUEST_READY);
  let now = 10_000;
  t.equal(ep.failed(f, now), 1000);
  t.equal(ep.remaining(now + 400), 600);
  t.equal(ep.failed(f, now + 10), 0, 'a call already in flight when it was suspended');
  now += 1000;
  t.equal(ep.remaining(now), 0);
  t.equal(ep.failed(f, now), 2000, 'failing again right after: twice as long');
  now += 2000;
  t.equal(ep.failed(f, now), 3000, 'capped');
  now += 3000;
  ep.succeeded(now - 1);
  t.equal(ep.remaining(now - 1), 1, 'a late success does not lift a suspension in force');
  ep.succeeded(now);
  t.equal(ep.failed(f, now), 1000, 'after a success: from suspend_duration again');
  t.equal(ep.suspensions, 4);
});
