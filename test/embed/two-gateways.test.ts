/**
 * No global state: two gateways in one process, with the same API context on different backends, keep
 * their own routes, faults (events and templates), counters and loggers; closing one leaves the other
 * serving. Also: API definitions given as objects say what a file can (same validator: diagnostics, state).
 */
import t from 'tap';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { api, echoBackend, embedded, HOST } from './helpers';

t.test('two gateways in one process do not interfere', async (t) => {
  const b1 = await echoBackend((_req, res) => (res.end('one'), true));
  const b2 = await echoBackend((_req, res) => (res.end('two'), true));
  const g1 = embedded([api('Shop', '/shop', `http://127.0.0.1:${b1.port}`)]);
  const g2 = embedded([api('Shop', '/shop', `http://127.0.0.1:${b2.port}`), api('Extra', '/extra', `http://127.0.0.1:${b2.port}`)]);
  // The second also listens on a port of its own and is mounted in a node:http app: three ways at once.
  const port2 = (await g2.gw.listen({ port: 0, host: HOST })).port;
  const app = http.createServer(g1.gw.handler);
  await new Promise<void>((r) => app.listen(0, HOST, () => r()));
  t.teardown(async () => {
    app.close();
    await g1.gw.close();
    await g2.gw.close();
    await b1.close();
    await b2.close();
  });
  const f1: number[] = [];
  const f2: number[] = [];
  g1.gw.on('fault', (f) => f1.push(f.code));
  g2.gw.on('fault', (f) => f2.push(f.code));

  t.equal((await g1.gw.inject({ url: '/shop/v1/x' })).body, 'one', 'same context, first gateway: first backend');
  t.equal((await g2.gw.inject({ url: '/shop/v1/x' })).body, 'two', 'same context, second gateway: second backend');
  t.equal(await (await fetch(`http://${HOST}:${port2}/shop/v1/x`)).text(), 'two');
  t.equal(await (await fetch(`http://${HOST}:${(app.address() as AddressInfo).port}/shop/v1/x`)).text(), 'one');

  t.equal((await g1.gw.inject({ url: '/extra/v1/x' })).status, 404, 'an API of the second is unknown to the first');
  t.equal((await g2.gw.inject({ url: '/extra/v1/x' })).status, 200);
  t.same(f1, [103005], 'faults reach the listener of their gateway only');
  t.same(f2, []);

  t.equal(g1.gw.transport.stats.sourcesAccepted, 3, 'counters: the first served 3 connections (2 injected, 1 from the app)');
  t.equal(g2.gw.transport.stats.sourcesAccepted, 3, 'the second 3 (2 injected, 1 on its port)');
  t.equal(b1.seen.length, 2);
  t.equal(b2.seen.length, 3);

  const warn = (lines: Record<string, unknown>[]): number => lines.filter((l) => l.event === 'api_deployed').length;
  t.equal(warn(g1.logger.lines), 1, "each logger has its own gateway's lines");
  t.equal(warn(g2.logger.lines), 2);

  await g1.gw.close();
  t.equal((await g2.gw.inject({ url: '/shop/v1/y' })).body, 'two', 'closing one leaves the other serving');
});

t.test('API definitions as objects: the validator of files, with diagnostics and states', async (t) => {
  const { gw, logger } = embedded([
    api('Good', '/good', 'http://127.0.0.1:9'),
    { name: 'Bad', context: '/bad', version: 'v1', endpoints: { production: 'ftp://x' }, resources: [] },
    {
      ...api('Blocked', '/blocked', 'http://127.0.0.1:9'),
      state: 'BLOCKED',
      cors: { enabled: true, allow_origins: ['https://app.example'] },
    },
  ]);
  t.teardown(() => gw.close());
  t.same(
    gw
      .deployed()
      .map((d) => d.path)
      .sort(),
    ['/blocked/v1', '/good/v1'],
  );
  const bad = gw.states().find((s) => s.api === undefined);
  t.ok(bad !== undefined && bad.diagnostics.some((d) => d.level === 'error'), 'the invalid definition is reported, not deployed');
  t.ok(
    logger.lines.some((l) => l.event === 'api_definition' && l.level === 'error'),
    'and logged',
  );
  const blocked = await gw.inject({ url: '/blocked/v1/x', headers: { Origin: 'https://app.example' } });
  t.equal(blocked.status, 503);
  t.match(blocked.json(), { fault: { code: 700700 } });
  t.equal(blocked.headers['access-control-allow-origin'], 'https://app.example', 'per-API CORS from the object applies to its faults');
});
