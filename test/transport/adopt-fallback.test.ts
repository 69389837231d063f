/**
 * The listener's two ways of serving an accepted socket (docs/transport.md, "Read buffers"): re-wrapped to
 * read into connection-owned buffers (the default), and as Node accepted it, the fallback taken on a Node
 * line without the undocumented details the re-wrap relies on (test/transport/node-internals.test.ts
 * checks those). Both must give the same bytes: a small GET, keep-alive reuse, pipelined requests, a
 * 1 MiB upload checked by sha256, a client that half-closes; and both must leave no connection behind.
 */
import t, { type Test } from 'tap';
import { createTransport, targetFromUrl, type RouteFn, type Transport } from '../../lib/transport';
import { rawBackend } from '../helpers/backend';
import { HOST, RawClient, until } from '../helpers/client';
import { Digest, MiB, writeBody } from '../helpers/bodies';
import { TEST_SETTINGS } from '../helpers/transport';

async function start(
  t: Test,
  backendUrl: string,
  adopt: boolean,
  maxOpenConnections = -1,
): Promise<{ transport: Transport; port: number; peers: string[] }> {
  const target = targetFromUrl(backendUrl);
  // The client's address and port as the router sees them: read from the socket net accepted when adopted.
  const peers: string[] = [];
  const route: RouteFn = (req) => {
    peers.push(`${req.remoteAddress}:${req.remotePort}`);
    return { target };
  };
  const transport = createTransport({
    route,
    settings: { ...TEST_SETTINGS, socketTimeout: 20_000, maxOpenConnections },
    adoptAcceptedSockets: adopt,
  });
  const { port } = await transport.listen({ port: 0, host: HOST });
  t.teardown(() => transport.close());
  return { transport, port, peers };
}

for (const adopt of [true, false]) {
  const how = adopt ? 're-wrapped (own read buffers)' : 'as accepted (the fallback)';
  t.test(`sockets served ${how}`, async (t) => {
    const backend = await rawBackend({
      keepBody: false,
      record: false,
      onRequestHead: (c) => {
        c.data['digest'] = new Digest();
      },
      onRequestBody: (c, p) => {
        (c.data['digest'] as Digest).update(p);
      },
      onRequest: (c, req) => {
        const d = c.data['digest'] as Digest;
        c.respond(200, `${req.method} ${req.url} ${d.bytes} ${d.hex()}`);
      },
    });
    t.teardown(() => backend.close());
    const { transport, port, peers } = await start(t, backend.url, adopt);

    const c = await RawClient.connect(port);
    t.teardown(() => c.destroy());
    await c.write('GET /one HTTP/1.1\r\nHost: a\r\n\r\n');
    const one = await c.finalResponse();
    t.equal(one.status, 200);
    t.match(one.body.toString(), /^GET \/one 0 /);
    t.same(peers, [`${c.socket.localAddress}:${c.socket.localPort}`], "the router sees the client's address and port");
    await c.write('GET /two HTTP/1.1\r\nHost: a\r\n\r\nGET /three HTTP/1.1\r\nHost: a\r\n\r\n');
    const two = await c.finalResponse(5000, 1);
    const three = await c.finalResponse(5000, 2);
    t.same([two.status, three.status], [200, 200], 'pipelined on the same connection');
    t.match(two.body.toString(), /^GET \/two /);
    t.match(three.body.toString(), /^GET \/three /);

    await c.write(`POST /up HTTP/1.1\r\nHost: a\r\nContent-Length: ${MiB}\r\n\r\n`);
    const sent = await writeBody(c.socket, MiB);
    const up = await c.finalResponse(30_000, 3);
    t.equal(up.status, 200);
    t.equal(up.body.toString(), `POST /up ${MiB} ${sent.sha256}`, 'the backend got exactly the bytes sent');

    // A client that half-closes after its request still gets its answer (allowHalfOpen), then the
    // connection is gone on both paths.
    const h = await RawClient.connect(port);
    await h.write('GET /half HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n');
    h.socket.end();
    const half = await h.finalResponse();
    t.equal(half.status, 200);
    t.ok(await h.waitClose(), 'closed after the answer');

    c.destroy();
    t.ok(await until(() => transport.connections().sources === 0, 5000), 'no client connection left');
    t.equal(transport.stats.illegalTransitions, 0);
  });
}

// The plain listener counts its own connections for max_open_connections on both paths: a re-wrapped
// connection leaves Node's server count as soon as it is adopted (docs/transport.md).
for (const adopt of [true, false]) {
  const how = adopt ? 're-wrapped' : 'as accepted';
  t.test(`maxOpenConnections 1, sockets served ${how}: the second is closed unanswered, a later one served`, async (t) => {
    const backend = await rawBackend({ onRequest: (c, req) => c.respond(200, req.url) });
    t.teardown(() => backend.close());
    const { transport, port } = await start(t, backend.url, adopt, 1);
    const first = await RawClient.connect(port);
    t.teardown(() => first.destroy());
    await first.write('GET /first HTTP/1.1\r\nHost: a\r\n\r\n');
    t.equal((await first.finalResponse()).body.toString(), '/first');
    const second = await RawClient.connect(port);
    t.teardown(() => second.destroy());
    await second.write('GET /second HTTP/1.1\r\nHost: a\r\n\r\n').catch(() => undefined);
    t.ok(await second.waitClose(2000), 'over the limit: closed');
    t.equal(second.responses.length, 0, 'without an answer');
    first.destroy();
    t.ok(await until(() => transport.connections().sources === 0, 5000));
    const third = await RawClient.connect(port);
    t.teardown(() => third.destroy());
    await third.write('GET /third HTTP/1.1\r\nHost: a\r\n\r\n');
    t.equal((await third.finalResponse()).body.toString(), '/third', 'the count went down when the first closed');
  });
}
