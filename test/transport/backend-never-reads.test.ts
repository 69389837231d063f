/**
 * A backend that accepts and never reads, sent a large body: the proxy's writes to it back up, the client
 * is paused, and after the socket timeout with no progress the exchange fails with 101504 + 2 = 101506
 * (socket timeout at target state REQUEST_BODY), answered 504 with Connection: close.
 */
import t from 'tap';
import { rawBackend } from '../helpers/backend';
import { RawClient, sleep, toResult } from '../helpers/client';
import { MiB, writeBody } from '../helpers/bodies';
import { assertFault, assertFaultBody, checkTransitions, startTransport } from '../helpers/transport';

const SOCKET_TIMEOUT = 400;

t.test('backend never reads a large body: socket timeout at state 2 (101506), 504', async (t) => {
  const backend = await rawBackend({ neverRead: true });
  t.teardown(() => backend.close());
  // A small high-water mark so the proxy itself holds little before it pauses the client.
  const h = await startTransport(t, backend.url, { settings: { socketTimeout: SOCKET_TIMEOUT, highWaterMark: 64 * 1024 } });
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  const total = 256 * MiB; // far more than loopback socket buffers hold
  await c.write(`POST /big HTTP/1.1\r\nHost: a\r\nContent-Length: ${total}\r\n\r\n`);
  const started = Date.now();
  const sending = writeBody(c.socket, total);
  const res = await c.finalResponse(10_000);
  const took = Date.now() - started;
  c.destroy();
  const sent = await sending;
  t.ok(sent.cut, `the upload was cut short (${sent.bytes} of ${total} bytes written)`);
  t.ok(took >= SOCKET_TIMEOUT, `answered after the socket timeout (${took} ms)`);
  assertFaultBody(t, toResult(c, res), 504, 101506, 101504, 2);
  t.equal(res.headers['connection'], 'close', 'the rest of the body will not be read: Connection: close');
  t.equal(backend.conns.length, 1, 'the backend accepted one connection');
  t.equal(h.faults.length, 1, 'one fault');
  assertFault(t, h.faults[0], {
    code: 101506,
    base: 101504,
    state: 2,
    side: 'target',
    reason: 'socket_timeout',
    httpStatus: 504,
    reused: false,
  });
  await sleep(50);
  t.equal(h.transport.connections().targets, 0, 'the stuck backend socket was destroyed');
});

checkTransitions(t);
