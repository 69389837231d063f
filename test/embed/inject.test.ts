/**
 * gateway.inject(): a request through the whole chain over an in-process connection (no client socket),
 * to a real backend: bodies both ways, fields, the client address, and faults from the phases and from
 * the transport, with their codes and bodies.
 */
import t from 'tap';
import { createHash } from 'node:crypto';
import { api, closedPort, echoBackend, embedded, field } from './helpers';

t.test('requests with and without bodies reach the real backend and come back whole', async (t) => {
  const backend = await echoBackend((req, res, body) => {
    if (req.url === '/base/big') {
      const big = Buffer.alloc(3 * 1024 * 1024, 'z');
      res.writeHead(200, { 'Content-Type': 'application/octet-stream' }); // chunked: no Content-Length
      res.end(big);
      return true;
    }
    if (req.url === '/base/hash') {
      res.end(createHash('sha256').update(Buffer.from(body, 'latin1')).digest('hex'));
      return true;
    }
    return false;
  });
  const { gw } = embedded([api('Shop', '/shop', `http://127.0.0.1:${backend.port}/base`)]);
  t.teardown(async () => {
    await gw.close();
    await backend.close();
  });

  const get = await gw.inject({ url: '/shop/v1/items/7?q=a%20b', headers: { 'X-Trace': 'abc' } });
  t.equal(get.status, 200);
  t.equal(get.headers['content-type'], 'application/json');
  const seen = get.json<{ method: string; url: string; headers: string[] }>();
  t.equal(seen.method, 'GET');
  t.equal(seen.url, '/base/items/7?q=a%20b', 'path rewritten to the endpoint, query untouched');
  t.equal(field(seen.headers, 'x-trace'), 'abc', 'fields pass through');
  t.equal(field(seen.headers, 'x-forwarded-for'), '127.0.0.1', 'the default client address');

  const upload = Buffer.alloc(1024 * 1024 + 17);
  for (let i = 0; i < upload.length; i++) upload[i] = (i * 31) & 0xff;
  const post = await gw.inject({ method: 'POST', url: '/shop/v1/hash', body: upload, remoteAddress: '203.0.113.9' });
  t.equal(post.status, 200);
  t.equal(post.body, createHash('sha256').update(upload).digest('hex'), '1 MiB + 17 bytes of binary body arrive intact');
  t.equal(field(backend.seen.at(-1)?.headers ?? [], 'x-forwarded-for'), '203.0.113.9', 'remoteAddress is the client the gateway reports');

  const json = await gw.inject({ method: 'PUT', url: '/shop/v1/items/7', body: { name: 'lamp', n: 2 } });
  const echoed = json.json<{ body: string; headers: string[] }>();
  t.same(JSON.parse(echoed.body), { name: 'lamp', n: 2 }, 'an object body is sent as JSON');
  t.equal(field(echoed.headers, 'content-type'), 'application/json');

  const big = await gw.inject({ url: '/shop/v1/big' });
  t.equal(big.status, 200);
  t.equal(big.rawBody.length, 3 * 1024 * 1024, 'a 3 MiB chunked response arrives whole');
  t.ok(big.rawBody.every((b) => b === 0x7a));

  const head = await gw.inject({ method: 'HEAD', url: '/shop/v1/items/1' });
  t.equal(head.status, 200);
  t.equal(head.rawBody.length, 0, 'HEAD: no body');

  const raw = await gw.inject({ url: '/shop/v1/x', headers: ['X-A', '1', 'x-a', '2'] });
  const rawSeen = raw.json<{ headers: string[] }>().headers;
  t.same(
    rawSeen.filter((_, i) => i % 2 === 0 && /^x-a$/i.test(rawSeen[i] as string)),
    ['X-A', 'x-a'],
    'raw pairs keep case, order and repeats',
  );
  t.equal(gw.transport.connections().sources, 0, 'every in-process connection is closed afterwards');
});

t.test('faults come back with their status, code and body', async (t) => {
  const backend = await echoBackend();
  const dead = await closedPort();
  const { gw } = embedded([
    api('Shop', '/shop', `http://127.0.0.1:${backend.port}`, [{ path: '/items/{id}', methods: ['GET'] }]),
    api('Gone', '/gone', `http://127.0.0.1:${dead}`),
  ]);
  t.teardown(async () => {
    await gw.close();
    await backend.close();
  });
  const missing = await gw.inject({ url: '/nowhere/v1/x' });
  t.equal(missing.status, 404);
  t.match(missing.json(), { fault: { code: 103005, message: 'No matching API' } });
  t.equal(missing.headers['content-type'], 'application/json; charset=UTF-8');

  const method = await gw.inject({ method: 'POST', url: '/shop/v1/items/1', body: 'x' });
  t.equal(method.status, 405);
  t.equal(method.headers.allow, 'GET, HEAD', 'GET allows HEAD (RFC 9110 §9.3.2)');
  t.match(method.json(), { fault: { code: 103006 } });

  const refused = await gw.inject({ url: '/gone/v1/x' });
  t.equal(refused.status, 502);
  t.match(refused.json(), { fault: { code: 101503, message: 'Connection failed' } }, 'a transport fault from the real connect');

  const bad = await gw.inject({ url: '/shop/v1/../admin' });
  t.equal(bad.status, 400);
  t.match(bad.json(), { fault: { code: 103009 } });
});

t.test('inject on a closed gateway rejects', async (t) => {
  const { gw } = embedded([]);
  await gw.close();
  await t.rejects(gw.inject({ url: '/x' }), 'no connection is served after close()');
});
