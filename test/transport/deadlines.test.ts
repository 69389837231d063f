/**
 * What closes a slow client (docs/transport.md, "Timeouts"): 'http.socket.timeout' is inactivity on both
 * sides, so a half-sent request head followed by silence is closed by it (408, client_timeout 101504 + 1),
 * not only by the longer header_timeout; and [throughway] body_timeout bounds a whole request body that
 * trickles in steadily enough never to be inactive (408, 103162).
 */
import t from 'tap';
import { rawBackend } from '../helpers/backend';
import { RawClient, sleep } from '../helpers/client';
import { assertFault, checkTransitions, startTransport } from '../helpers/transport';

t.test('a half-sent head then silence: closed by the socket timeout, not header_timeout', async (t) => {
  const backend = await rawBackend({ onRequest: (c) => c.respond(200, 'ok') });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url, { settings: { socketTimeout: 300, headerTimeout: 60_000 } });
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write('GET /half HTTP/1.1\r\nHost: a\r\nX-Partial: ');
  const res = await c.finalResponse(4000);
  t.equal(res.status, 408);
  assertFault(t, h.faults[0], { code: 101505, base: 101504, state: 1, side: 'source', reason: 'client_timeout', httpStatus: 408 });
  t.equal(backend.conns.length, 0);
});

t.test('a body trickling one byte at a time: cut at body_timeout with 408 and 103162', async (t) => {
  const backend = await rawBackend({ onRequest: (c) => c.respond(200, 'ok') });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url, { settings: { socketTimeout: 5000, bodyTimeout: 400 } });
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write('POST /slow HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\n');
  const response = c.finalResponse(6000);
  let stopped = false;
  void (async () => {
    for (let i = 0; i < 60 && !stopped && !c.closed; i++) {
      await sleep(50);
      await c.write('x').catch(() => undefined);
    }
  })();
  const res = await response;
  stopped = true;
  t.equal(res.status, 408);
  t.equal(JSON.parse(res.body.toString()).fault.code, 103162);
  assertFault(t, h.faults[0], { code: 103162, base: 103162, state: 2, side: 'source', reason: 'body_deadline', httpStatus: 408 });
});

checkTransitions(t);
