/**
 * Stale keep-alive sockets: a backend closes a pooled connection just as the proxy reuses it, before any
 * response byte. A request whose body has not been sent (a GET) is retried once on a fresh connection
 * and the client never notices; one whose body went out (a POST) cannot be replayed and gets the 502
 * fault, reported with `reused: true`. And the pool keeps its idle time below the backend's announced
 * `Keep-Alive: timeout=N`, so the race is rare in the first place.
 */
import t from 'tap';
import { rawBackend, type BackendConn } from '../helpers/backend';
import { RawClient, get, sleep, until } from '../helpers/client';
import { assertFault, checkTransitions, startTransport } from '../helpers/transport';

/** Answers the first request on each connection; closes (FIN, no answer) when a second one arrives. */
function oneShotBackend() {
  return rawBackend({
    onRequest: (c: BackendConn, req) => {
      if (c.requests.length === 1) c.respond(200, `fresh ${c.id} ${req.url}`);
      else c.socket.end();
    },
  });
}

t.test('GET on a pooled socket the backend closes before answering: retried once, client sees 200', async (t) => {
  const backend = await oneShotBackend();
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write(get('/first'));
  t.equal((await c.finalResponse()).body.toString(), 'fresh 1 /first');
  t.equal(h.transport.connections().idleTargets, 1, 'the backend socket is pooled');
  await c.write(get('/second'));
  const res = await c.finalResponse(5000, 1);
  t.equal(res.status, 200, 'the client sees 200');
  t.equal(res.body.toString(), 'fresh 2 /second', 'served by a fresh connection');
  t.equal(h.transport.stats.retries, 1, 'stats.retries is 1');
  t.equal(h.faults.length, 0, 'no fault: the retry succeeded');
  t.equal(backend.conns.length, 2);
  t.equal(backend.conns[0]?.requests[1]?.url, '/second', 'the stale connection did receive the request before closing');
});

t.test('the classic stale socket: a backend that closes right after every response without Connection: close', async (t) => {
  const backend = await rawBackend({
    onRequest: (c, req) => {
      c.respond(200, `${c.id} ${req.url}`);
      c.socket.end(); // no Connection: close announced
    },
  });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  // Pipelined: the second request is sent on the pooled socket in the same turn the first response
  // arrives, before the backend's FIN is read; the backend never answers it.
  await c.write(get('/a') + get('/b'));
  await c.message(2, 5000);
  t.same(
    c.responses.map((r) => [r.status, r.body.toString()]),
    [
      [200, '1 /a'],
      [200, '2 /b'],
    ],
  );
  t.equal(h.transport.stats.retries, 1, 'the GET was retried once');
  t.equal(h.faults.length, 0);
  // And a later, non-pipelined request finds no stale socket: the pool noticed the FIN.
  await sleep(20);
  t.equal(h.transport.connections().idleTargets, 0, 'closed sockets do not stay in the pool');
  await c.write(get('/c'));
  const third = await c.finalResponse(5000, 2);
  t.equal(third.body.toString(), '3 /c');
  t.equal(h.transport.stats.retries, 1, 'no further retry');
});

t.test('POST whose body was sent on a stale socket: not retried, 502 fault with reused: true', async (t) => {
  const backend = await oneShotBackend();
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write(get('/first'));
  t.equal((await c.finalResponse()).status, 200);
  await c.write('POST /pay HTTP/1.1\r\nHost: a\r\nContent-Length: 7\r\n\r\npayment');
  const res = await c.finalResponse(5000, 1);
  t.equal(res.status, 502, 'the client gets the fault');
  const fault = JSON.parse(res.body.toString()).fault;
  t.equal(fault.code, 101508, '101505 + REQUEST_DONE(3)');
  t.match(fault.description, 'reused connection', 'the fault says the socket was a reused one');
  t.equal(h.transport.stats.retries, 0, 'not retried: the body cannot be sent twice');
  t.equal(backend.conns.length, 1, 'no second connection was opened for it');
  t.equal(h.faults.length, 1);
  assertFault(t, h.faults[0], { code: 101508, base: 101505, state: 3, side: 'target', reason: 'closed', httpStatus: 502, reused: true });
});

t.test('retryStale false: a stale GET fails with the fault, reused: true', async (t) => {
  const backend = await oneShotBackend();
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url, { settings: { retryStale: false } });
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write(get('/first'));
  await c.finalResponse();
  await c.write(get('/second'));
  const res = await c.finalResponse(5000, 1);
  t.equal(res.status, 502);
  t.equal(h.transport.stats.retries, 0);
  assertFault(t, h.faults[0], { code: 101508, base: 101505, state: 3, side: 'target', reason: 'closed', reused: true });
});

t.test('a retry that fails again is not retried a second time', async (t) => {
  // Every connection answers once, then closes on the next request; the retry's fresh connection is
  // refused because the backend is gone by then.
  let backendUp = true;
  const backend = await rawBackend({
    onRequest: (c) => {
      if (backendUp && c.requests.length === 1) c.respond(200, 'ok');
      else c.socket.end();
    },
  });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write(get('/first'));
  await c.finalResponse();
  backendUp = false;
  await c.write(get('/second'));
  const res = await c.finalResponse(5000, 1);
  t.equal(res.status, 502);
  t.equal(h.transport.stats.retries, 1, 'one retry only');
  t.equal(backend.conns.length, 2, 'the original connection and one fresh one');
  t.equal(h.faults.length, 1, 'one fault, for the fresh connection');
  assertFault(t, h.faults[0], { code: 101508, base: 101505, state: 3, side: 'target', reason: 'closed', reused: false });
});

t.test('Keep-Alive: timeout=1 from the backend: the pool evicts the idle socket before 1 s', async (t) => {
  const backend = await rawBackend({ onRequest: (c) => c.respond(200, 'ok', 'Keep-Alive: timeout=1\r\n') });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url, { settings: { poolIdleTimeout: 30_000 } });
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write(get('/ka'));
  const res = await c.finalResponse();
  const answered = Date.now();
  t.equal(res.status, 200);
  t.notOk(res.headers['keep-alive'], 'Keep-Alive is hop-by-hop: not relayed');
  t.equal(h.transport.connections().idleTargets, 1, 'pooled at first');
  t.ok(await until(() => backend.conns[0]?.ended === true, 2000), 'the proxy closes the idle socket itself');
  const after = (backend.conns[0]?.closedAt ?? Date.now()) - answered;
  t.ok(after < 1000, `closed ${after} ms after the response, before the backend's 1 s`);
  t.equal(h.transport.connections().idleTargets, 0, 'no idle socket left');
  t.equal(h.faults.length, 0);
});

t.test('without a Keep-Alive hint the pool keeps the socket for poolIdleTimeout and reuses it', async (t) => {
  const backend = await rawBackend({ onRequest: (c, req) => c.respond(200, `${c.id} ${req.url}`) });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url, { settings: { poolIdleTimeout: 30_000 } });
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write(get('/1'));
  await c.finalResponse();
  await sleep(1200);
  t.equal(h.transport.connections().idleTargets, 1, 'still pooled after 1.2 s');
  await c.write(get('/2'));
  t.equal((await c.finalResponse(5000, 1)).body.toString(), '1 /2', 'served on the same backend connection');
  t.equal(h.transport.stats.targetsReused, 1);
});

checkTransitions(t);
