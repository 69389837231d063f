/**
 * How backend responses are delimited, and what the proxy does with one that is malformed: a body
 * delimited by the close is relayed and ends the client connection too; bytes beyond a Content-Length
 * are not relayed (and the backend socket is not reused); Content-Length with Transfer-Encoding, an
 * oversize head and an unrequested 101 are protocol violations at RESPONSE_HEAD(4): 101510, 502.
 * Interim 1xx responses (103 Early Hints) are relayed to HTTP/1.1 clients, then the final one.
 */
import t from 'tap';
import { rawBackend } from '../helpers/backend';
import { RawClient, get, rawRequest, sleep } from '../helpers/client';
import { assertFault, assertFaultBody, checkTransitions, saysClose, startTransport } from '../helpers/transport';

t.test('a body delimited by the close: relayed whole, the client connection closes after it', async (t) => {
  const backend = await rawBackend({
    onRequest: (c) => {
      c.write('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil ');
      setTimeout(() => {
        c.write('the close');
        c.socket.end();
      }, 30);
    },
  });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const res = await rawRequest(h.port, get('/eof'), { waitClose: true });
  t.equal(res.status, 200);
  t.equal(res.text, 'until the close');
  t.ok(res.response.complete, 'complete at the close');
  t.ok(saysClose(res), 'the client is told the connection closes (its body is delimited by it)');
  t.ok(res.closed);
  t.equal(h.faults.length, 0, 'a close-delimited body is not a fault');
});

t.test('bytes after a Content-Length body are not relayed, and that backend socket is not reused', async (t) => {
  let served = 0;
  const backend = await rawBackend({
    onRequest: (c, req) => {
      if (served++ === 0) c.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA BYTES');
      else c.respond(200, `again ${req.url}`);
    },
  });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write(get('/one'));
  const first = await c.finalResponse();
  t.equal(first.body.toString(), 'ok');
  await sleep(30);
  t.notOk(c.raw.toString('latin1').includes('EXTRA'), 'the extra bytes never reach the client');
  t.notOk(c.closed, 'the client connection is fine');
  await c.write(get('/two'));
  const second = await c.finalResponse(5000, 1);
  t.equal(second.body.toString(), 'again /two');
  t.equal(backend.conns.length, 2, 'the second request needed a new backend connection');
  t.ok(backend.conns[0]?.closed, 'the one that sent extra bytes was closed');
});

const VIOLATIONS = [
  ['Content-Length with Transfer-Encoding', 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'],
  ['two different Content-Lengths', 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 7\r\n\r\nhello'],
  ['a head over maxResponseHeaderSize', `HTTP/1.1 200 OK\r\nX-Big: ${'b'.repeat(3000)}\r\nContent-Length: 0\r\n\r\n`],
  [
    '101 Switching Protocols that was not asked for',
    'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n',
  ],
  [
    'an unrequested 101 that also says Content-Length: 0',
    'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nContent-Length: 0\r\n\r\n',
  ],
] as const;

for (const [what, bytes] of VIOLATIONS) {
  t.test(`backend response with ${what}: 101510 (101506 + 4), 502`, async (t) => {
    const backend = await rawBackend({ onRequest: (c) => c.write(bytes) });
    t.teardown(() => backend.close());
    const h = await startTransport(t, backend.url, { settings: { maxResponseHeaderSize: 2048 } });
    const res = await rawRequest(h.port, get('/bad'));
    assertFaultBody(t, res, 502, 101510, 101506, 4);
    t.equal(res.responses.length, 1, 'only the fault reached the client');
    t.equal(h.faults.length, 1);
    assertFault(t, h.faults[0], { code: 101510, base: 101506, state: 4, side: 'target', reason: 'protocol' });
    await sleep(20);
    t.ok(backend.conns[0]?.closed, 'the backend connection was closed');
  });
}

t.test('103 Early Hints is relayed to an HTTP/1.1 client before the final response', async (t) => {
  const backend = await rawBackend({
    onRequest: (c) => {
      c.write('HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n');
      setTimeout(() => c.respond(200, 'final'), 30);
    },
  });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const res = await rawRequest(h.port, get('/hints'));
  t.same(
    res.responses.map((r) => r.status),
    [103, 200],
  );
  t.equal(res.responses[0]?.headers['link'], '</style.css>; rel=preload', 'the interim fields are relayed');
  t.equal(res.text, 'final');
  t.equal(h.faults.length, 0);
});

t.test('a response written one byte at a time is relayed whole (head and chunked body across reads)', async (t) => {
  const RESPONSE = 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Slow: yes\r\n\r\n5\r\nhello\r\n0\r\n\r\n';
  const backend = await rawBackend({
    onRequest: (c) => {
      let i = 0;
      const timer = setInterval(() => {
        c.write(RESPONSE.charAt(i++));
        if (i === RESPONSE.length) clearInterval(timer);
      }, 1);
    },
  });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write(get('/a') + get('/b'));
  await c.message(2, 5000);
  for (const r of c.responses) {
    t.equal(r.headers['x-slow'], 'yes');
    t.equal(r.rawBody.toString(), '5\r\nhello\r\n0\r\n\r\n');
  }
  t.equal(backend.conns.length, 1, 'and the connection is reused after it');
  t.equal(h.faults.length, 0);
});

t.test('an HTTP/1.0 backend without keep-alive: its response is relayed, its connection not reused', async (t) => {
  const backend = await rawBackend({ onRequest: (c) => c.write('HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok') });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write(get('/a') + get('/b'));
  await c.message(2, 5000);
  t.same(
    c.responses.map((r) => [r.version, r.status, r.body.toString()]),
    [
      ['HTTP/1.1', 200, 'ok'],
      ['HTTP/1.1', 200, 'ok'],
    ],
    "relayed with the proxy's own version",
  );
  t.notOk(c.closed, 'the client connection stays');
  t.equal(backend.conns.length, 2, 'a new backend connection for each');
  t.equal(h.transport.stats.targetsReused, 0);
});

t.test(
  'an HTTP/1.0 backend response with Transfer-Encoding and keep-alive: relayed, its connection not reused (RFC 9112 §6.1)',
  async (t) => {
    const backend = await rawBackend({
      onRequest: (c) => c.write('HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n'),
    });
    t.teardown(() => backend.close());
    const h = await startTransport(t, backend.url);
    const c = await RawClient.connect(h.port);
    t.teardown(() => c.destroy());
    await c.write(get('/a'));
    t.equal((await c.message(1, 5000)).body.toString(), 'ok');
    await c.write(get('/b'));
    t.equal((await c.message(2, 5000)).body.toString(), 'ok');
    t.notOk(c.closed, 'the client connection stays');
    t.equal(backend.conns.length, 2, 'faulty framing: the backend connection is closed after each response');
    t.equal(h.transport.stats.targetsReused, 0);
  },
);

checkTransitions(t);
