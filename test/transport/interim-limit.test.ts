/**
 * The cap on interim responses (docs/transport.md, "Expect: 100-continue"): a backend may send 1xx
 * responses before its final one (RFC 9110 §15.2), and each is relayed, but only up to [throughway]
 * max_interim_responses (10) per request. One more faults the backend with 103163 (502): its connection is
 * closed and the client gets the fault after the interim responses already relayed. Exactly the cap passes.
 */
import t from 'tap';
import { rawBackend, type BackendConn } from '../helpers/backend';
import { RawClient, until } from '../helpers/client';
import { assertFault, checkTransitions, startTransport } from '../helpers/transport';

const INTERIM = [
  'HTTP/1.1 100 Continue\r\n\r\n',
  'HTTP/1.1 102 Processing\r\n\r\n',
  'HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload; as=style\r\n\r\n',
];

/** Writes 1xx responses until the socket closes (the gateway must cut it); stops by itself after 10 s. */
function interimForever(c: BackendConn): void {
  const started = Date.now();
  let i = 0;
  const pump = (): void => {
    while (!c.socket.destroyed && Date.now() - started < 10_000) {
      if (!c.socket.write(INTERIM[i++ % INTERIM.length] as string)) {
        c.socket.once('drain', pump);
        return;
      }
      if (i % 64 === 0) {
        setImmediate(pump);
        return;
      }
    }
  };
  pump();
}

/** `n` interim responses, then a final 200 in the same write. */
function interimThenFinal(c: BackendConn, n: number, body: string): void {
  let out = '';
  for (let i = 0; i < n; i++) out += INTERIM[i % INTERIM.length] as string;
  c.write(`${out}HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
}

t.test('a backend that sends 1xx forever: 10 relayed, then 502 with 103163 and the backend connection closed', async (t) => {
  const backend = await rawBackend({ onRequestHead: (c) => interimForever(c) });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write('GET /hints HTTP/1.1\r\nHost: a\r\n\r\n');
  const final = await c.finalResponse(8000);
  t.equal(final.status, 502);
  const body = JSON.parse(final.body.toString()) as { fault: { code: number; message: string } };
  t.equal(body.fault.code, 103163);
  t.equal(body.fault.message, 'Too many interim responses');
  const interim = c.responses.filter((m) => m.interim);
  t.equal(interim.length, 10, 'the first 10 interim responses were relayed, no more');
  t.same(
    interim.slice(0, 3).map((m) => m.status),
    [100, 102, 103],
  );
  t.equal(c.responses.length, 11, '10 interim responses and the fault');
  assertFault(t, h.faults[0], { code: 103163, base: 103163, state: 4, side: 'target', reason: 'too_many_interim', httpStatus: 502 });
  t.match(h.faults[0]?.description ?? '', /more than 10 interim responses/);
  t.ok(await until(() => backend.conns[0]?.closed === true, 3000), 'the gateway closed the backend connection');
  t.equal(h.faults.length, 1);
  // The client's connection is still good: the request was complete, so only the backend's was dropped.
  t.notOk(c.closed, 'the client connection stays open');
});

t.test('exactly the cap passes, on every request of a kept-alive backend connection', async (t) => {
  let n = 0;
  const backend = await rawBackend({ onRequest: (c) => interimThenFinal(c, 10, `done ${++n}`) });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write('GET /one HTTP/1.1\r\nHost: a\r\n\r\n');
  const first = await c.finalResponse(5000);
  t.equal(first.status, 200);
  t.equal(first.body.toString(), 'done 1');
  t.equal(c.responses.length, 11, '10 interim responses, then the final one');
  const hints = c.responses[2];
  t.equal(hints?.status, 103);
  t.equal(hints?.headers['link'], '</s.css>; rel=preload; as=style', '103 Early Hints relayed with its Link field');
  // The count is per request: the next one on the same backend socket may send 10 again.
  await c.write('GET /two HTTP/1.1\r\nHost: a\r\n\r\n');
  const second = await c.finalResponse(5000, 11);
  t.equal(second.status, 200);
  t.equal(second.body.toString(), 'done 2');
  t.equal(c.responses.length, 22);
  t.equal(backend.conns.length, 1, 'both requests went over the one kept-alive backend connection');
  t.equal(h.faults.length, 0);
});

t.test('max_interim_responses = 2: a third 1xx faults; 0: the first does, and nothing is relayed', async (t) => {
  const backend = await rawBackend({ onRequest: (c) => interimThenFinal(c, 3, 'late') });
  t.teardown(() => backend.close());
  const two = await startTransport(t, backend.url, { settings: { maxInterimResponses: 2 } });
  const c = await RawClient.connect(two.port);
  t.teardown(() => c.destroy());
  await c.write('GET /three HTTP/1.1\r\nHost: a\r\n\r\n');
  const res = await c.finalResponse(5000);
  t.equal(res.status, 502);
  t.equal(JSON.parse(res.body.toString()).fault.code, 103163);
  t.same(
    c.responses.map((m) => m.status),
    [100, 102, 502],
    'two relayed, the third refused, the 200 behind it never reaches the client',
  );

  const zero = await startTransport(t, backend.url, { settings: { maxInterimResponses: 0 } });
  const d = await RawClient.connect(zero.port);
  t.teardown(() => d.destroy());
  await d.write('GET /none HTTP/1.1\r\nHost: a\r\n\r\n');
  const none = await d.finalResponse(5000);
  t.equal(none.status, 502);
  t.same(
    d.responses.map((m) => m.status),
    [502],
    'no interim response relayed',
  );
  assertFault(t, zero.faults[0], { code: 103163, base: 103163, state: 4, side: 'target', reason: 'too_many_interim', httpStatus: 502 });
});

t.test('an HTTP/1.0 client gets no interim response relayed; the cap still ends a backend that sends them forever', async (t) => {
  const backend = await rawBackend({ onRequestHead: (c) => interimForever(c) });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write('GET /old HTTP/1.0\r\nHost: a\r\n\r\n');
  const res = await c.finalResponse(8000);
  t.equal(res.status, 502);
  t.same(
    c.responses.map((m) => m.status),
    [502],
  );
  assertFault(t, h.faults[0], { code: 103163, base: 103163, state: 4, side: 'target', reason: 'too_many_interim', httpStatus: 502 });
  t.ok(await until(() => backend.conns[0]?.closed === true, 3000), 'backend connection closed');
});

checkTransitions(t);
