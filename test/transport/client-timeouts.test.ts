/**
 * Inactivity on the client side (http.socket.timeout applies to both sides): a client that stops sending
 * its request body gets 408 (101504 + REQUEST_BODY(2) = 101506, source side) and the backend socket with
 * the partial request is closed; a client that stops reading a response is aborted (101504 +
 * RESPONSE_BODY(5), source side), and the backend is not blamed for the pause this forced on it.
 */
import t from 'tap';
import { rawBackend } from '../helpers/backend';
import { RawClient, toResult, until } from '../helpers/client';
import { MiB, piece } from '../helpers/bodies';
import { assertFault, assertFaultBody, checkTransitions, startTransport } from '../helpers/transport';

const SOCKET_TIMEOUT = 400;

t.test('a client that stops sending its body: 408 with 101506, Connection: close, backend socket closed', async (t) => {
  const backend = await rawBackend({ onRequest: (c) => c.respond(200, 'no') });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url, { settings: { socketTimeout: SOCKET_TIMEOUT } });
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write('POST /stall HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\n0123456789');
  const started = Date.now();
  const res = await c.finalResponse(5000);
  const took = Date.now() - started;
  assertFaultBody(t, toResult(c, res), 408, 101506, 101504, 2);
  t.equal(res.headers['connection'], 'close');
  t.ok(await c.waitClose(2000), 'closed');
  t.ok(took >= SOCKET_TIMEOUT, `after the socket timeout (${took} ms)`);
  t.ok(await until(() => backend.conns[0]?.closed === true, 2000), 'the backend socket with the partial body was closed');
  t.equal(h.faults.length, 1, 'one fault');
  assertFault(t, h.faults[0], { code: 101506, base: 101504, state: 2, side: 'source', reason: 'client_timeout', httpStatus: 408 });
});

t.test('a client that stops reading a large response: aborted after the socket timeout, source side', async (t) => {
  const backend = await rawBackend({
    onRequest: (c) => {
      void (async () => {
        await c.writeDrained(Buffer.from(`HTTP/1.1 200 OK\r\nContent-Length: ${256 * MiB}\r\n\r\n`));
        for (let i = 0; i < 4096; i++) await c.writeDrained(piece(i));
      })().catch(() => {});
    },
  });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url, { settings: { socketTimeout: SOCKET_TIMEOUT, highWaterMark: 64 * 1024 } });
  const c = await RawClient.connect(h.port, { keepBody: false, record: false });
  t.teardown(() => c.destroy());
  await c.write('GET /big HTTP/1.1\r\nHost: a\r\n\r\n');
  t.ok(await until(() => c.receivedBytes > 0), 'the response started');
  c.socket.pause(); // and never reads again
  t.ok(await until(() => h.faults.length === 1, 5000), 'a fault is reported');
  assertFault(t, h.faults[0], { code: 101509, base: 101504, state: 5, side: 'source', reason: 'client_timeout' });
  t.ok(await until(() => backend.conns[0]?.closed === true, 2000), 'the backend socket is closed');
  t.ok(await until(() => h.transport.connections().sources === 0, 2000), 'the client connection is gone');
  t.equal(h.faults.length, 1, 'the backend, paused for the client, is not blamed with a timeout of its own');
  c.socket.resume();
  t.ok(await c.waitClose(2000));
});

checkTransitions(t);
