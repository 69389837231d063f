/**
 * gateway.on('fault' | 'request'): every fault once (a phase's and the transport's, with code, status and
 * source), every finished exchange once; off() stops delivery; a listener that throws is logged and the
 * traffic goes on; unknown event names are refused.
 */
import t from 'tap';
import type { ExchangeRecord } from '../../lib/transport/types';
import type { GatewayFaultEvent } from '../../lib/embed/events';
import { api, closedPort, echoBackend, embedded } from './helpers';

t.test('faults and exchanges are reported once each, with what happened', async (t) => {
  const backend = await echoBackend();
  const dead = await closedPort();
  const { gw } = embedded([api('Shop', '/shop', `http://127.0.0.1:${backend.port}`), api('Gone', '/gone', `http://127.0.0.1:${dead}`)]);
  t.teardown(async () => {
    await gw.close();
    await backend.close();
  });
  const faults: GatewayFaultEvent[] = [];
  const requests: ExchangeRecord[] = [];
  t.equal(
    gw.on('fault', (f) => faults.push(f)),
    gw,
    'on() returns the gateway (chaining)',
  );
  gw.on('request', (r) => requests.push(r));

  t.equal((await gw.inject({ url: '/shop/v1/a' })).status, 200);
  t.equal(faults.length, 0, 'a forwarded call is no fault');
  t.equal(requests.length, 1);
  t.match(requests[0], { method: 'GET', url: '/shop/v1/a', status: 200, target: `127.0.0.1:${backend.port}`, faultCode: undefined });

  t.equal((await gw.inject({ method: 'DELETE', url: '/missing/v1/x', remoteAddress: '198.51.100.4' })).status, 404);
  t.same(
    faults,
    [
      {
        code: 103005,
        status: 404,
        source: 'gateway',
        method: 'DELETE',
        url: '/missing/v1/x',
        remoteAddress: '198.51.100.4',
        transportFault: undefined,
      },
    ],
    "a phase's fault",
  );

  t.equal((await gw.inject({ url: '/gone/v1/x' })).status, 502);
  t.equal(faults.length, 2, 'the transport fault once (not again at the end of its exchange)');
  t.match(faults[1], {
    code: 101503,
    status: 502,
    source: 'transport',
    method: 'GET',
    url: '/gone/v1/x',
    transportFault: { base: 101503, state: 0, side: 'target' },
  });
  t.equal(requests.length, 3);
  t.same(
    requests.map((r) => r.status),
    [200, 404, 502],
  );
  t.same(
    requests.map((r) => r.faultCode),
    [undefined, 103005, 101503],
  );
});

t.test('off() stops delivery; a throwing listener is logged and the others still run', async (t) => {
  const { gw, logger } = embedded([]);
  t.teardown(() => gw.close());
  const seen: number[] = [];
  const first = (f: GatewayFaultEvent): void => {
    seen.push(f.code);
    throw new Error('listener bug');
  };
  const second = (f: GatewayFaultEvent): void => void seen.push(-f.code);
  gw.on('fault', first).on('fault', second);
  t.equal((await gw.inject({ url: '/x' })).status, 404, 'the client still gets its answer');
  t.same(seen, [103005, -103005]);
  t.match(
    logger.lines.find((l) => l.event === 'gateway_listener_failed'),
    { level: 'error', gatewayEvent: 'fault', message: 'listener bug' },
  );
  gw.off('fault', first).off('fault', second);
  await gw.inject({ url: '/y' });
  t.same(seen, [103005, -103005], 'nothing after off()');
  t.throws(() => gw.on('nope' as 'fault', () => undefined), { message: /unknown gateway event "nope"/ });
});

t.test('a gateway that needed no exchange records starts them with its first listener', async (t) => {
  // No APIs and no access log: the transport was created without onExchange.
  const loadedless = embedded([], {}, '');
  const gw = loadedless.gw;
  t.teardown(() => gw.close());
  const records: ExchangeRecord[] = [];
  gw.on('request', (r) => records.push(r));
  await gw.inject({ url: '/a' });
  t.equal(records.length, 1);
  t.equal(records[0]?.status, 404);
});
