/**
 * A route at its per-route maximum ('http.max.connection.per.host.port'): a request that cannot get a
 * connection within connectTimeout fails with 101504 at state REQUEST_READY(0), answered 503; one that
 * gets the connection freed in time is served on it.
 */
import t from 'tap';
import { rawBackend, type BackendConn } from '../helpers/backend';
import { RawClient, get, rawRequest, sleep, until } from '../helpers/client';
import { assertFault, assertFaultBody, checkTransitions, startTransport } from '../helpers/transport';

const CONNECT_TIMEOUT = 300;

t.test('pool at its maximum of 1: the second request gets 101504 state 0, 503, after connectTimeout', async (t) => {
  const held: BackendConn[] = [];
  const backend = await rawBackend({ onRequest: (c) => held.push(c) }); // holds every request
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url, {
    settings: { maxConnectionsPerRoute: 1, connectTimeout: CONNECT_TIMEOUT, socketTimeout: 5000 },
  });
  const first = await RawClient.connect(h.port);
  t.teardown(() => first.destroy());
  await first.write(get('/first'));
  t.ok(await until(() => held.length === 1), 'the backend holds the first request');

  const started = Date.now();
  const res = await rawRequest(h.port, get('/second'));
  const took = Date.now() - started;
  assertFaultBody(t, res, 503, 101504, 101504, 0);
  t.ok(took >= CONNECT_TIMEOUT, `answered after connectTimeout (${took} ms)`);
  t.ok(took < CONNECT_TIMEOUT + 3000, `not much later (${took} ms)`);
  t.equal(backend.conns.length, 1, 'no second backend connection was opened');
  t.equal(h.faults.length, 1);
  assertFault(t, h.faults[0], {
    code: 101504,
    base: 101504,
    state: 0,
    side: 'target',
    reason: 'pool_full',
    httpStatus: 503,
    reused: false,
  });

  // The held request is unaffected and completes when the backend answers.
  held[0]?.respond(200, 'first done');
  const r1 = await first.finalResponse(5000);
  t.equal(r1.status, 200);
  t.equal(r1.body.toString(), 'first done');
  t.equal(h.faults.length, 1, 'no further fault');
});

t.test('a request waiting for the route gets the connection the first one frees', async (t) => {
  const held: BackendConn[] = [];
  const backend = await rawBackend({
    onRequest: (c, req) => {
      if (req.url === '/first') held.push(c);
      else c.respond(200, `served ${req.url}`);
    },
  });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url, { settings: { maxConnectionsPerRoute: 1, connectTimeout: 2000 } });
  const first = await RawClient.connect(h.port);
  t.teardown(() => first.destroy());
  await first.write(get('/first'));
  t.ok(await until(() => held.length === 1));
  const second = await RawClient.connect(h.port);
  t.teardown(() => second.destroy());
  await second.write(get('/second'));
  await sleep(100);
  t.equal(second.responses.length, 0, 'the second request waits');
  t.equal(h.transport.connections().targets, 1, 'still one backend connection');
  held[0]?.respond(200, 'first done');
  t.equal((await first.finalResponse()).status, 200);
  const r2 = await second.finalResponse();
  t.equal(r2.status, 200);
  t.equal(r2.body.toString(), 'served /second');
  t.equal(backend.conns.length, 1, 'both went over the one connection');
  t.equal(backend.conns[0]?.requests.length, 2);
  t.equal(h.faults.length, 0);
});

checkTransitions(t);
