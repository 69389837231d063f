/**
 * Idle pooled backend connections: evicted after poolIdleTimeout; one on which the backend sends bytes
 * that answer no request (RFC 9112 §9.3) is closed rather than trusted; one the backend closes leaves
 * the pool at once. In every case the next request is served on a fresh connection, without a fault.
 */
import t from 'tap';
import { rawBackend } from '../helpers/backend';
import { RawClient, get, sleep, until } from '../helpers/client';
import { checkTransitions, startTransport } from '../helpers/transport';

t.test('poolIdleTimeout evicts an idle backend connection', async (t) => {
  const backend = await rawBackend({ onRequest: (c, req) => c.respond(200, `${c.id} ${req.url}`) });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url, { settings: { poolIdleTimeout: 300 } });
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write(get('/1'));
  await c.finalResponse();
  t.equal(h.transport.connections().idleTargets, 1);
  t.ok(await until(() => backend.conns[0]?.closed === true, 2000), 'the proxy closed the idle backend connection');
  t.equal(h.transport.connections().targets, 0);
  await c.write(get('/2'));
  t.equal((await c.finalResponse(3000, 1)).body.toString(), '2 /2', 'the next request opens a fresh one');
  t.equal(h.faults.length, 0);
});

t.test('unsolicited bytes on an idle backend connection: it is closed, the next request uses a fresh one', async (t) => {
  const backend = await rawBackend({
    onRequest: (c, req) => {
      c.respond(200, `${c.id} ${req.url}`);
      if (c.id === 1) setTimeout(() => c.write('HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstale'), 30);
    },
  });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write(get('/1'));
  t.equal((await c.finalResponse()).body.toString(), '1 /1');
  t.ok(await until(() => backend.conns[0]?.closed === true, 2000), 'the connection that spoke out of turn was closed');
  await c.write(get('/2'));
  const second = await c.finalResponse(3000, 1);
  t.equal(second.body.toString(), '2 /2', 'not the unsolicited response');
  t.notOk(c.raw.toString('latin1').includes('stale'), 'the unsolicited bytes never reached a client');
  t.equal(h.faults.length, 0);
});

t.test('a backend that closes an idle connection: it leaves the pool at once', async (t) => {
  const backend = await rawBackend({
    onRequest: (c, req) => {
      c.respond(200, `${c.id} ${req.url}`);
      setTimeout(() => c.socket.end(), 20);
    },
  });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write(get('/1'));
  await c.finalResponse();
  t.ok(await until(() => h.transport.connections().targets === 0, 2000), 'the closed connection left the pool');
  await sleep(10);
  await c.write(get('/2'));
  t.equal((await c.finalResponse(3000, 1)).body.toString(), '2 /2');
  t.equal(h.transport.stats.retries, 0, 'no retry was needed');
  t.equal(h.faults.length, 0);
});

checkTransitions(t);
