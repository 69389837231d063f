/**
 * Pipelined requests (RFC 9112 §9.3.2): several requests in one write are answered in order, each
 * response complete before the next begins, even when the backend answers later requests faster.
 */
import t from 'tap';
import { rawBackend } from '../helpers/backend';
import { RawClient, sleep } from '../helpers/client';
import { Digest, MiB, piece } from '../helpers/bodies';
import { targetFromUrl } from '../../lib/transport';
import { checkTransitions, startTransport } from '../helpers/transport';

const DELAYS: Record<string, number> = { '/a': 120, '/b': 0, '/c': 40 };

t.test('three pipelined GETs in one write are answered in order', async (t) => {
  const backend = await rawBackend({
    onRequest: (c, req) => setTimeout(() => c.respond(200, `body of ${req.url}`, `X-Path: ${req.url}\r\n`), DELAYS[req.url] ?? 0),
  });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write(['/a', '/b', '/c'].map((p) => `GET ${p} HTTP/1.1\r\nHost: a\r\n\r\n`).join(''));
  await c.message(3, 5000);
  t.same(
    c.responses.map((r) => [r.status, r.headers['x-path'], r.body.toString()]),
    [
      [200, '/a', 'body of /a'],
      [200, '/b', 'body of /b'],
      [200, '/c', 'body of /c'],
    ],
    'responses in request order',
  );
  const raw = c.raw.toString('latin1');
  t.ok(raw.indexOf('body of /a') < raw.indexOf('X-Path: /b'), 'the second response starts after the first one ends');
  t.same(
    backend.conns.flatMap((x) => x.requests.map((r) => r.url)),
    ['/a', '/b', '/c'],
    'the backend received them in order',
  );
  await sleep(30);
  t.notOk(c.closed, 'the connection stays open');
  t.equal(h.faults.length, 0);
});

t.test('pipelined requests with bodies, split at awkward places, keep their order and bytes', async (t) => {
  const backend = await rawBackend({ onRequest: (c, req) => c.respond(200, `${req.method} ${req.url} [${req.body.toString()}]`) });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  const all =
    'POST /1 HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nfirst' +
    'POST /2 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nsec\r\n3\r\nond\r\n0\r\n\r\n' +
    'GET /3 HTTP/1.1\r\nHost: a\r\n\r\n' +
    'DELETE /4 HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n';
  // One byte at the boundaries between messages, the rest in two writes.
  const cut1 = all.indexOf('POST /2') + 1;
  const cut2 = all.indexOf('GET /3') - 2;
  for (const part of [all.slice(0, cut1), all.slice(cut1, cut2), all.slice(cut2)]) {
    await c.write(part);
    await sleep(10);
  }
  await c.message(4, 5000);
  t.same(
    c.responses.map((r) => r.body.toString()),
    ['POST /1 [first]', 'POST /2 [second]', 'GET /3 []', 'DELETE /4 []'],
  );
  t.equal(h.faults.length, 0);
  t.equal(h.transport.stats.requests, 4);
});

t.test('a pipelined request after a local answer (404) is still answered, in order', async (t) => {
  const backend = await rawBackend({ onRequest: (c, req) => c.respond(200, req.url) });
  t.teardown(() => backend.close());
  const target = targetFromUrl(backend.url);
  const h = await startTransport(t, (req) => (req.url === '/missing' ? undefined : { target }));
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write('GET /x HTTP/1.1\r\nHost: a\r\n\r\nGET /missing HTTP/1.1\r\nHost: a\r\n\r\nGET /y HTTP/1.1\r\nHost: a\r\n\r\n');
  await c.message(3, 5000);
  t.same(
    c.responses.map((r) => r.status),
    [200, 404, 200],
  );
  t.equal(c.responses[0]?.body.toString(), '/x');
  t.equal(JSON.parse(c.responses[1]?.body.toString() ?? '{}').fault.code, 103003);
  t.equal(c.responses[2]?.body.toString(), '/y');
});

t.test('pipelined requests with bodies behind an asynchronous router keep their order and bytes', async (t) => {
  const backend = await rawBackend({ onRequest: (c, req) => c.respond(200, `${req.url} [${req.body.toString()}]`) });
  t.teardown(() => backend.close());
  const target = targetFromUrl(backend.url);
  let n = 0;
  // Each decision takes a different time: later requests would overtake earlier ones if order slipped.
  const h = await startTransport(t, () => new Promise((resolve) => setTimeout(() => resolve({ target }), [40, 5, 20][n++ % 3])));
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write(
    'POST /1 HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\none' +
      'POST /2 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\ntwo\r\n0\r\n\r\n' +
      'POST /3 HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nthree',
  );
  await c.message(3, 5000);
  t.same(
    c.responses.map((r) => r.body.toString()),
    ['/1 [one]', '/2 [two]', '/3 [three]'],
  );
  t.equal(h.faults.length, 0);
});

t.test('three pipelined 1 MiB downloads arrive whole and in order', async (t) => {
  const sent: string[] = [];
  const backend = await rawBackend({
    onRequest: (c, req) => {
      void (async () => {
        const d = new Digest();
        const seed = Number(req.url.slice(1));
        await c.writeDrained(Buffer.from(`HTTP/1.1 200 OK\r\nContent-Length: ${MiB}\r\nX-N: ${seed}\r\n\r\n`));
        for (let i = 0; i < 16; i++) {
          const p = piece(seed * 100 + i);
          d.update(p);
          await c.writeDrained(p);
        }
        sent[seed] = d.hex();
      })().catch(() => {});
    },
  });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url, { settings: { highWaterMark: 64 * 1024 } });
  const digests: Digest[] = [];
  const c = await RawClient.connect(h.port, {
    keepBody: false,
    record: false,
    onHead: () => digests.push(new Digest()),
    onBody: (p) => digests[digests.length - 1]?.update(p),
  });
  t.teardown(() => c.destroy());
  await c.write('GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\nGET /3 HTTP/1.1\r\nHost: a\r\n\r\n');
  await c.message(3, 10_000);
  t.same(
    c.responses.map((r) => [r.headers['x-n'], r.bodyLength]),
    [
      ['1', MiB],
      ['2', MiB],
      ['3', MiB],
    ],
  );
  t.same(
    digests.map((d) => d.hex()),
    [sent[1], sent[2], sent[3]],
    'each body byte-exact',
  );
  t.equal(h.faults.length, 0);
});

checkTransitions(t);
