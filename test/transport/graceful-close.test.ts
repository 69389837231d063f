/**
 * Shutdown and the listener's limits: close() stops accepting, lets an in-flight exchange finish (its
 * response says Connection: close), serves a request that arrives on an idle keep-alive connection during
 * the drain with Connection: close, closes idle keep-alive connections after the drain window (lib/transport/index.ts
 * DRAIN_IDLE_MS), and destroys what is still busy at shutdownTimeout; max_open_connections refuses
 * connections above the limit.
 */
import t from 'tap';
import * as net from 'node:net';
import { rawBackend, type BackendConn } from '../helpers/backend';
import { HOST, RawClient, get, sleep, until } from '../helpers/client';
import { checkTransitions, startTransport } from '../helpers/transport';

t.test('close(): in-flight finishes with Connection: close, idle keep-alives close, new connections refused', async (t) => {
  const held: BackendConn[] = [];
  const backend = await rawBackend({
    onRequest: (c, req) => {
      if (req.url === '/slow') held.push(c);
      else c.respond(200, 'quick');
    },
  });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url, { settings: { shutdownTimeout: 3000 } });
  const idle = await RawClient.connect(h.port);
  const busy = await RawClient.connect(h.port);
  t.teardown(() => {
    idle.destroy();
    busy.destroy();
  });
  await idle.write(get('/quick'));
  await idle.finalResponse();
  await busy.write(get('/slow'));
  t.ok(await until(() => held.length === 1));

  const closing = h.close();
  t.ok(await idle.waitClose(5000), 'the idle keep-alive connection is closed after the drain window');
  const refused = await new Promise<boolean>((resolve) => {
    const s = net.connect({ port: h.port, host: HOST });
    s.once('connect', () => {
      s.destroy();
      resolve(false);
    });
    s.once('error', () => resolve(true));
  });
  t.ok(refused, 'new connections are refused');
  t.notOk(busy.closed, 'the busy connection is still open');
  held[0]?.respond(200, 'slow done');
  const res = await busy.finalResponse();
  t.equal(res.body.toString(), 'slow done', 'the in-flight exchange completes');
  t.equal(res.headers['connection'], 'close', 'and says the connection closes');
  t.ok(await busy.waitClose(1000));
  await closing;
  t.same(h.transport.connections(), { sources: 0, targets: 0, idleTargets: 0, inFlight: 0, queued: 0 }, 'nothing left');
  t.ok(await until(() => backend.open() === 0), 'backend connections closed too');
  t.equal(h.faults.length, 0);
});

t.test('close(): a request sent on an idle keep-alive connection while draining is served with Connection: close', async (t) => {
  const backend = await rawBackend({ onRequest: (c, req) => c.respond(200, req.url) });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url, { settings: { shutdownTimeout: 3000 } });
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write(get('/first'));
  t.equal((await c.finalResponse()).headers['connection'], undefined, 'kept alive before the close');
  const closing = h.close();
  // The client does not know yet: it sends its next request on the connection it holds.
  await c.write(get('/second'));
  const res = await c.finalResponse(5000, 1);
  t.equal(res.status, 200, 'the request that raced the close is served');
  t.equal(res.body.toString(), '/second');
  t.equal(res.headers['connection'], 'close', 'and told the connection closes');
  t.ok(await c.waitClose(3000), 'then the connection closes');
  await closing;
  t.equal(h.faults.length, 0);
});

t.test('close(): an exchange still busy at shutdownTimeout is aborted', async (t) => {
  const backend = await rawBackend({ onRequest: () => {} });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url, { settings: { shutdownTimeout: 200 } });
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write(get('/forever'));
  t.ok(await until(() => backend.conns[0]?.requests.length === 1));
  const started = Date.now();
  await h.close();
  const took = Date.now() - started;
  t.ok(took >= 150 && took < 3000, `close() returned at about shutdownTimeout (${took} ms)`);
  t.ok(await c.waitClose(1000), 'the client connection was closed');
  t.equal(c.responses.length, 0, 'no response');
  t.ok(await until(() => backend.open() === 0), 'the backend connection was closed');
  t.same(h.transport.connections(), { sources: 0, targets: 0, idleTargets: 0, inFlight: 0, queued: 0 });
});

t.test('maxOpenConnections 2: a third connection is refused, the first two are served', async (t) => {
  const backend = await rawBackend({ onRequest: (c, req) => c.respond(200, req.url) });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url, { settings: { maxOpenConnections: 2 } });
  const a = await RawClient.connect(h.port);
  const b = await RawClient.connect(h.port);
  t.teardown(() => {
    a.destroy();
    b.destroy();
  });
  await sleep(30);
  const third = await RawClient.connect(h.port);
  t.teardown(() => third.destroy());
  await third.write(get('/third')).catch(() => undefined);
  t.ok(await third.waitClose(1000), 'the third connection is closed without an answer');
  t.equal(third.responses.length, 0);
  await a.write(get('/a'));
  await b.write(get('/b'));
  t.equal((await a.finalResponse()).body.toString(), '/a');
  t.equal((await b.finalResponse()).body.toString(), '/b');
  a.destroy();
  t.ok(await until(() => h.transport.connections().sources === 1));
  const fourth = await RawClient.connect(h.port);
  t.teardown(() => fourth.destroy());
  await fourth.write(get('/fourth'));
  t.equal((await fourth.finalResponse()).body.toString(), '/fourth', 'accepted again once below the limit');
});

checkTransitions(t);
