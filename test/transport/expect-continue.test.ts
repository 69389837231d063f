/**
 * `Expect: 100-continue` (RFC 9110 §10.1.1): the field is forwarded, the backend's interim 100 Continue
 * is relayed to the HTTP/1.1 client, then the final response; a client that waits for the 100 before
 * sending its body is not stuck.
 */
import t, { type Test } from 'tap';
import { rawBackend } from '../helpers/backend';
import { RawClient, sleep } from '../helpers/client';
import { checkTransitions, startTransport } from '../helpers/transport';

/** A backend that answers the head with 100 Continue, then 200 with the body it read. */
async function continueBackend(t: Test) {
  const backend = await rawBackend({
    onRequestHead: (c, head) => {
      if (/100-continue/i.test(head.headers['expect'] ?? '')) c.write('HTTP/1.1 100 Continue\r\n\r\n');
    },
    onRequest: (c, req) => c.respond(200, `got ${req.body.toString()}`),
  });
  t.teardown(() => backend.close());
  return backend;
}

t.test('body sent at once: the client sees 100 Continue, then 200', async (t) => {
  const backend = await continueBackend(t);
  const h = await startTransport(t, backend.url);
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write('POST /c HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\nhello');
  const first = await c.message(1);
  const final = await c.finalResponse();
  t.equal(first.status, 100, 'first the interim 100');
  t.ok(first.interim);
  t.equal(final.status, 200, 'then the final response');
  t.equal(final.body.toString(), 'got hello');
  t.ok(c.raw.toString('latin1').startsWith('HTTP/1.1 100 Continue\r\n'), '100 Continue is the first thing on the wire');
  t.equal(c.responses.length, 2, 'exactly two responses');
  t.equal(backend.conns[0]?.requests[0]?.headers['expect'], '100-continue', 'Expect was forwarded');
  t.equal(h.faults.length, 0);
});

t.test('a client that waits for the 100 before sending its body', async (t) => {
  const backend = await continueBackend(t);
  const h = await startTransport(t, backend.url);
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write('PUT /c HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 11\r\n\r\n');
  const interim = await c.message(1, 3000);
  t.equal(interim.status, 100, 'the 100 arrives while the body is still held back');
  t.equal(backend.conns[0]?.requests.length, 0, 'the backend has not got a complete request yet');
  await c.write('hello ');
  await sleep(20);
  await c.write('world');
  const final = await c.finalResponse();
  t.equal(final.status, 200);
  t.equal(final.body.toString(), 'got hello world');
  t.equal(h.faults.length, 0);
  // The connection is reusable afterwards.
  await c.write('GET /after HTTP/1.1\r\nHost: a\r\n\r\n');
  const after = await c.finalResponse(5000, 2);
  t.equal(after.status, 200);
});

t.test('a backend that answers 417 instead of 100: the client gets 417 and the body is not expected', async (t) => {
  const backend = await rawBackend({
    onRequestHead: (c) => {
      c.write('HTTP/1.1 417 Expectation Failed\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
      c.socket.end();
    },
  });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write('POST /c HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n');
  const res = await c.finalResponse(3000);
  t.equal(res.status, 417);
  t.equal(res.headers['connection'], 'close', 'the unsent body makes the connection unusable: close');
  t.ok(await c.waitClose(2000), 'closed');
});

t.test('a backend that sends 100 Continue and then closes: the client sees the 100, then the 502 fault', async (t) => {
  const backend = await rawBackend({
    onRequestHead: (c) => {
      c.write('HTTP/1.1 100 Continue\r\n\r\n');
      setTimeout(() => c.socket.end(), 30);
    },
  });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write('POST /c HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\nhello');
  const final = await c.finalResponse(3000);
  t.same(
    c.responses.map((r) => r.status),
    [100, 502],
  );
  t.equal(JSON.parse(final.body.toString()).fault.code, 101505 + 4, 'closed at RESPONSE_HEAD(4): the interim began the response head');
  t.equal(h.faults.length, 1);
});

checkTransitions(t);
