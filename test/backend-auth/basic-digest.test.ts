/**
 * Basic (RFC 7617) and Digest (RFC 7616) backend security (docs/apis.md, "Backend security") against
 * backends that demand them: the Digest check of the test backend is written from RFC 7616 §3.4, not
 * from the gateway's code.
 */
import t from 'tap';
import * as net from 'node:net';
import { BASE_TOML, HOST, request, startGateway } from '../gateway/helpers';
import { basicBackend, digestBackend, securedApi } from './helpers';

t.test("basic: the endpoint's credentials replace the client's Authorization", async (t) => {
  const be = await basicBackend('svc', 'pä:ss');
  t.teardown(() => be.close());
  const gw = await startGateway(BASE_TOML, { b: securedApi('b', be.port, 'type = "basic"\nusername = "svc"\npassword = "pä:ss"') });
  t.teardown(() => gw.close());
  const res = await request(gw.port, '/b/1/x', { headers: { Authorization: 'Basic Y2xpZW50OnNlY3JldA==' } });
  t.equal(res.status, 200);
  t.same(
    be.hits[0]?.authorization,
    [`Basic ${Buffer.from('svc:pä:ss', 'utf8').toString('base64')}`],
    'one field, UTF-8 user-pass (RFC 7617 §2.1)',
  );
  t.notOk(JSON.stringify(gw.logger.lines).includes(Buffer.from('svc:pä:ss', 'utf8').toString('base64')), 'the credentials are not logged');

  const wrong = await startGateway(BASE_TOML, { b: securedApi('b', be.port, 'type = "basic"\nusername = "svc"\npassword = "nope"') });
  t.teardown(() => wrong.close());
  const refused = await request(wrong.port, '/b/1/x', { method: 'POST', body: 'data' });
  t.equal(refused.status, 502);
  t.equal(refused.json().fault.code, 103200);
  t.notOk(refused.headers['www-authenticate'], "the backend's challenge does not reach the client");
  t.equal(be.hits.length, 2, 'a refused Basic call is not sent again');
});

for (const algorithm of ['MD5', 'SHA-256'] as const) {
  t.test(`digest ${algorithm}: challenge answered and the call sent again; the nonce cached and counted`, async (t) => {
    const be = await digestBackend('svc', 'digest-pw', algorithm);
    t.teardown(() => be.close());
    const gw = await startGateway(BASE_TOML, { d: securedApi('d', be.port, 'type = "digest"\nusername = "svc"\npassword = "digest-pw"') });
    t.teardown(() => gw.close());
    const first = await request(gw.port, '/d/1/items?page=2', {
      method: 'POST',
      body: '{"a":1}',
      headers: { 'Content-Type': 'application/json', Authorization: 'Bearer client' },
    });
    t.equal(first.status, 200, first.body);
    t.equal(be.hits.length, 2, 'without credentials, then with the answer');
    t.same(be.hits[0]?.authorization, [], "the client's Authorization is never forwarded");
    t.equal(be.hits[0]?.status, 401);
    t.equal(be.hits[1]?.body, '{"a":1}', 'the body sent again');
    t.equal(be.hits[1]?.url, '/be/items?page=2');
    t.match(be.hits[1]?.authorization[0], new RegExp(`^Digest .*algorithm=${algorithm}.*nc=00000001`));
    t.equal(first.json().body, '{"a":1}');

    for (let i = 2; i <= 4; i++) {
      t.equal((await request(gw.port, `/d/1/n${i}`)).status, 200);
      t.match(be.hits.at(-1)?.authorization[0], new RegExp(`nc=0000000${i}`), `call ${i} answers the cached nonce with nc ${i}`);
    }
    t.equal(be.hits.length, 5, 'later calls go once each');
    t.equal(be.nonces.length, 1, 'one nonce for all of them');

    // Concurrent calls share the nonce, each with its own nc (none seen twice by the backend).
    const many = await Promise.all(Array.from({ length: 8 }, (_, i) => request(gw.port, `/d/1/c${i}`)));
    t.same(
      many.map((x) => x.status),
      Array(8).fill(200),
    );
    const ncs = be.hits.slice(5).map((h) => /nc=([0-9a-f]{8})/.exec(h.authorization[0] ?? '')?.[1]);
    t.same(
      [...ncs].sort(),
      ['00000005', '00000006', '00000007', '00000008', '00000009', '0000000a', '0000000b', '0000000c'],
      'nc counted on, in hex',
    );
    t.equal(be.nonces.length, 1);

    // A stale nonce (RFC 7616 §3.3 stale=true): the new nonce is answered and the call sent again.
    be.expireNonces();
    t.equal((await request(gw.port, '/d/1/after-stale', { method: 'PUT', body: 'x' })).status, 200);
    t.equal(be.nonces.length, 2);
    t.match(be.hits.at(-1)?.authorization[0], /nc=00000001/);
    t.equal(be.hits.at(-1)?.body, 'x');
  });
}

t.test('digest: wrong credentials are 103200 after one answer; a streamed body cannot answer a first challenge (103201)', async (t) => {
  const be = await digestBackend('svc', 'digest-pw', 'SHA-256');
  t.teardown(() => be.close());
  const wrong = await startGateway(BASE_TOML, { d: securedApi('d', be.port, 'type = "digest"\nusername = "svc"\npassword = "nope"') });
  t.teardown(() => wrong.close());
  const refused = await request(wrong.port, '/d/1/x');
  t.equal(refused.status, 502);
  t.equal(refused.json().fault.code, 103200);
  t.equal(be.hits.length, 2, 'answered once, then given up');

  const gw = await startGateway(BASE_TOML, {
    d: securedApi('d', be.port, 'type = "digest"\nusername = "svc"\npassword = "digest-pw"\nmax_replay_body = 4'),
  });
  t.teardown(() => gw.close());
  const big = await request(gw.port, '/d/1/upload', { method: 'POST', body: 'more than four bytes' });
  t.equal(big.status, 503);
  t.equal(big.json().fault.code, 103201);
  // The challenge is kept: the same call now goes once, streamed, with credentials.
  const before = be.hits.length;
  const again = await request(gw.port, '/d/1/upload', { method: 'POST', body: 'more than four bytes' });
  t.equal(again.status, 200);
  t.equal(be.hits.length, before + 1);
  t.equal(be.hits.at(-1)?.body, 'more than four bytes');
  const chunked = await request(gw.port, '/d/1/upload', {
    method: 'POST',
    body: 'chunked body',
    headers: { 'Transfer-Encoding': 'chunked' },
  });
  t.equal(chunked.status, 200, 'a chunked body is streamed with the cached nonce');
});

t.test('digest: a 401 body above 64 KiB is not gathered whole', async (t) => {
  // A raw backend whose 401 carries a large body: the challenge is read from a bounded gather only.
  const server = net.createServer((s) => {
    s.once('data', () => {
      const body = 'x'.repeat(70 * 1024);
      s.end(
        `HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Digest realm="r", nonce="n", qop="auth"\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, HOST, () => r()));
  t.teardown(() => server.close());
  const gw = await startGateway(BASE_TOML, {
    d: securedApi('d', (server.address() as net.AddressInfo).port, 'type = "digest"\nusername = "svc"\npassword = "pw"'),
  });
  t.teardown(() => gw.close());
  const res = await request(gw.port, '/d/1/x');
  t.equal(res.status, 500);
  t.equal(Math.floor(res.json().fault.code / 100), 1015, "the transport's 101510 + state: response above the gather limit");
});
