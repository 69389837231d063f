/**
 * Request smuggling through the Connection field (docs/security.md, "Request smuggling"): a Connection
 * field that lists Content-Length or Transfer-Encoding never takes the framing field out of the forwarded
 * head, in any spelling of its tokens (letter case, place among other tokens, several Connection fields,
 * optional whitespace, repeated and empty elements), in both directions: the request to the backend, and
 * the response to a client whose connection stays open; on the HTTP and the HTTPS listener.
 *
 * The backend is a raw `net` server that parses and counts the requests it receives; each attack's body is
 * itself a complete request (or response), so a head that lost its framing shows as one message too many
 * on the side that reads it, or as a response that never ends.
 */
import * as net from 'node:net';
import * as tls from 'node:tls';
import t, { type Test } from 'tap';
import { createTransport, targetFromUrl, type RouteFn, type TransportFault, type TransportSettings } from '../../lib/transport';
import { selfSigned } from '../../lib/tls/sample';
import { HOST, RawClient } from '../helpers/client';
import { MessageReader, type Message } from '../helpers/wire';
import { checkTransitions, routeTo, startTransport, TEST_SETTINGS } from '../helpers/transport';

/** A request or response smuggled as the body of another. */
const SMUGGLED_REQUEST = 'GET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n';
const SMUGGLED_RESPONSE = 'HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nsmuggled';

/** Connection field lines for a framing field `n` (lower case): every spelling the transport must see through. */
const SPELLINGS: readonly (readonly [string, (n: string) => string])[] = [
  ['lower case', (n) => `Connection: ${n}`],
  ['title case', (n) => `Connection: ${title(n)}`],
  ['upper case', (n) => `Connection: ${n.toUpperCase()}`],
  ['mixed case', (n) => `Connection: ${mixed(n)}`],
  ['after keep-alive', (n) => `Connection: keep-alive, ${n}`],
  ['before keep-alive', (n) => `Connection: ${n}, keep-alive`],
  ['among other tokens', (n) => `Connection: X-A, ${title(n)}, X-B`],
  ['in a second Connection field', (n) => `Connection: keep-alive\r\nConnection: ${n}`],
  ['in a first Connection field, a second one after', (n) => `Connection: ${n}\r\nConnection: keep-alive`],
  ['in both of two Connection fields', (n) => `Connection: x-a, ${n}\r\nConnection: ${n.toUpperCase()}`],
  ['spaces around the value', (n) => `Connection:    ${n}   `],
  ['tabs around the value', (n) => `Connection:\t${n}\t`],
  ['whitespace around the commas', (n) => `Connection: x-a ,\t${n} , x-b`],
  ['listed twice', (n) => `Connection: ${n}, ${n}`],
  ['among empty list elements', (n) => `Connection: , ,${n},`],
  ['with host', (n) => `Connection: host, ${n}, x-a`],
];

function title(n: string): string {
  return n.replace(/(^|-)([a-z])/g, (_, d: string, c: string) => d + c.toUpperCase());
}

function mixed(n: string): string {
  return [...n].map((c, i) => (i % 2 === 0 ? c.toUpperCase() : c)).join('');
}

type Framing = 'content-length' | 'transfer-encoding';

/** A message with `payload` as its body, framed by `framing`, with the given extra lines in its head. */
function framed(startLine: string, lines: string, framing: Framing, payload: string): string {
  if (framing === 'content-length') return `${startLine}\r\n${lines}\r\nContent-Length: ${payload.length}\r\n\r\n${payload}`;
  return `${startLine}\r\n${lines}\r\nTransfer-Encoding: chunked\r\n\r\n${payload.length.toString(16)}\r\n${payload}\r\n0\r\n\r\n`;
}

/** A raw backend that parses every request it receives; bytes that are no request are counted as garbage. */
interface RecordingBackend {
  readonly port: number;
  readonly url: string;
  readonly requests: Message[];
  garbage: number;
  close(): Promise<void>;
}

async function recordingBackend(t: Test, respond: (socket: net.Socket, req: Message) => void): Promise<RecordingBackend> {
  const sockets = new Set<net.Socket>();
  const backend = {
    port: 0,
    url: '',
    requests: [] as Message[],
    garbage: 0,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    const reader = new MessageReader('request');
    let seen = 0;
    socket.on('data', (chunk: Buffer) => {
      try {
        reader.push(chunk);
      } catch {
        backend.garbage++;
        socket.destroy();
        return;
      }
      while (seen < reader.messages.length) {
        const req = reader.messages[seen++] as Message;
        backend.requests.push(req);
        respond(socket, req);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen({ port: 0, host: HOST }, resolve));
  backend.port = (server.address() as net.AddressInfo).port;
  backend.url = `http://${HOST}:${backend.port}`;
  t.teardown(() => backend.close());
  return backend;
}

/** Plain replies naming the request's path: `/b` gets `b`. */
function plain(socket: net.Socket, req: Message): void {
  const body = req.url.slice(1);
  socket.write(`HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n${body}`, 'latin1');
}

const pki = selfSigned('localhost', ['localhost', HOST]);

interface Proxy {
  readonly faults: TransportFault[];
  /** A new client connection to the listener. */
  connect(): Promise<RawClient>;
}

/** A transport in front of `backendUrl` on an HTTP or an HTTPS listener. */
async function proxy(t: Test, secure: boolean, route: RouteFn | string, settings: Partial<TransportSettings> = {}): Promise<Proxy> {
  if (!secure) {
    const h = await startTransport(t, route, { settings });
    return { faults: h.faults, connect: () => RawClient.connect(h.port) };
  }
  const faults: TransportFault[] = [];
  const transport = createTransport({
    route: typeof route === 'string' ? routeTo(route) : route,
    settings: { ...TEST_SETTINGS, ...settings },
    events: { onFault: (f) => void faults.push(f) },
  });
  const server = await transport.listenTls({ port: 0, host: HOST }, { key: pki.keyPem, cert: pki.certPem });
  t.teardown(() => transport.close());
  const port = (server.address() as net.AddressInfo).port;
  return {
    faults,
    connect: () =>
      new Promise((resolve, reject) => {
        const socket = tls.connect({ port, host: HOST, servername: 'localhost', ca: pki.certPem });
        socket.once('error', reject);
        socket.once('secureConnect', () => {
          socket.off('error', reject);
          resolve(new RawClient(socket));
        });
      }),
  };
}

/** The `n`th response, or undefined when it never completes (a body whose framing was taken away). */
async function response(c: RawClient, n: number): Promise<Message | undefined> {
  try {
    return await c.message(n, 3000);
  } catch {
    return undefined;
  }
}

for (const secure of [false, true]) {
  const listener = secure ? 'HTTPS' : 'HTTP';
  for (const framing of ['content-length', 'transfer-encoding'] as const) {
    for (const [spelling, lines] of SPELLINGS) {
      const fieldLines = lines(framing);

      t.test(
        `${listener}, request, ${framing} ${spelling}: the backend parses the body as a body, and the next request as the next`,
        async (t) => {
          const backend = await recordingBackend(t, plain);
          const p = await proxy(t, secure, backend.url);
          const c = await p.connect();
          t.teardown(() => c.destroy());
          await c.write(framed('POST /a HTTP/1.1', `Host: a\r\n${fieldLines}`, framing, SMUGGLED_REQUEST));
          const a = await response(c, 1);
          t.equal(a?.body.toString('latin1'), 'a', 'the client gets the answer to its own request');
          await c.write('GET /b HTTP/1.1\r\nHost: a\r\n\r\n');
          const b = await response(c, 2);
          t.equal(b?.body.toString('latin1'), 'b', 'and to the next one on the same connection');
          t.same(
            backend.requests.map((r) => r.url),
            ['/a', '/b'],
            'the backend parsed exactly the two requests the client sent',
          );
          t.equal(backend.garbage, 0, 'and no bytes that were not a request');
          const first = backend.requests[0];
          t.equal(first?.body.toString('latin1'), SMUGGLED_REQUEST, "the first request's body reached the backend as its body");
          if (framing === 'content-length')
            t.equal(first?.headers['content-length'], String(SMUGGLED_REQUEST.length), 'with its Content-Length');
          else t.equal(first?.headers['transfer-encoding'], 'chunked', 'with its Transfer-Encoding');
          t.equal(first?.headers['connection'], 'keep-alive', "the backend sees the proxy's own Connection field only");
          t.equal(c.responses.length, 2, 'two responses to two requests');
          t.equal(p.faults.length, 0, 'no fault');
        },
      );

      t.test(
        `${listener}, response, ${framing} ${spelling}: the client reads the body as a body on its kept-alive connection`,
        async (t) => {
          const backend = await recordingBackend(t, (socket, req) => {
            if (req.url === '/a') socket.write(framed('HTTP/1.1 200 OK', fieldLines, framing, SMUGGLED_RESPONSE), 'latin1');
            else plain(socket, req);
          });
          const p = await proxy(t, secure, backend.url);
          const c = await p.connect();
          t.teardown(() => c.destroy());
          await c.write('GET /a HTTP/1.1\r\nHost: a\r\n\r\n');
          const a = await response(c, 1);
          t.ok(a?.complete === true, 'the first response ends where its framing says');
          t.equal(a?.body.toString('latin1'), SMUGGLED_RESPONSE, 'its body is the backend body, whole');
          if (framing === 'content-length')
            t.equal(a?.headers['content-length'], String(SMUGGLED_RESPONSE.length), 'with its Content-Length');
          else t.equal(a?.headers['transfer-encoding'], 'chunked', 'with its Transfer-Encoding');
          t.notOk(c.closed, 'the connection stays open');
          await c.write('GET /b HTTP/1.1\r\nHost: a\r\n\r\n');
          const b = await response(c, 2);
          t.equal(b?.body.toString('latin1'), 'b', 'the next response answers the next request');
          t.equal(c.responses.length, 2, 'the client counted two responses');
          t.same(
            backend.requests.map((r) => r.url),
            ['/a', '/b'],
          );
          t.equal(p.faults.length, 0, 'no fault');
        },
      );
    }
  }
}

t.test('HTTP/1.0 keep-alive client: Connection: keep-alive, content-length keeps the framing both ways', async (t) => {
  const backend = await recordingBackend(t, (socket, req) => {
    if (req.url === '/a')
      socket.write(framed('HTTP/1.1 200 OK', 'Connection: keep-alive, Content-Length', 'content-length', SMUGGLED_RESPONSE), 'latin1');
    else plain(socket, req);
  });
  const p = await proxy(t, false, backend.url);
  const c = await p.connect();
  t.teardown(() => c.destroy());
  await c.write(framed('POST /a HTTP/1.0', 'Host: a\r\nConnection: keep-alive, Content-Length', 'content-length', SMUGGLED_REQUEST));
  const a = await response(c, 1);
  t.equal(a?.body.toString('latin1'), SMUGGLED_RESPONSE, 'the response body whole');
  t.equal(a?.headers['content-length'], String(SMUGGLED_RESPONSE.length));
  t.equal(a?.headers['connection'], 'keep-alive', 'the 1.0 client is kept alive');
  await c.write('GET /b HTTP/1.0\r\nHost: a\r\nConnection: keep-alive\r\n\r\n');
  const b = await response(c, 2);
  t.equal(b?.body.toString('latin1'), 'b');
  t.same(
    backend.requests.map((r) => r.url),
    ['/a', '/b'],
  );
  t.equal(backend.requests[0]?.body.toString('latin1'), SMUGGLED_REQUEST);
  t.equal(backend.garbage, 0);
});

t.test("a router's field list without the client's Content-Length: the backend still gets the client's framing", async (t) => {
  const backend = await recordingBackend(t, plain);
  const target = targetFromUrl(backend.url);
  const route: RouteFn = (req) => {
    // Every field but Content-Length, and one the router adds: its Transfer-Encoding must not frame the body either.
    const fields: string[] = [];
    for (let i = 0; i < req.headers.length; i += 2)
      if (req.headers[i]?.toLowerCase() !== 'content-length') fields.push(req.headers[i] as string, req.headers[i + 1] as string);
    if (req.url === '/a') fields.push('Transfer-Encoding', 'chunked');
    return { target, headers: fields };
  };
  const p = await proxy(t, false, route);
  const c = await p.connect();
  t.teardown(() => c.destroy());
  await c.write(framed('POST /a HTTP/1.1', 'Host: a\r\nX-Kept: 1', 'content-length', SMUGGLED_REQUEST));
  t.equal((await response(c, 1))?.body.toString('latin1'), 'a');
  await c.write('GET /b HTTP/1.1\r\nHost: a\r\n\r\n');
  t.equal((await response(c, 2))?.body.toString('latin1'), 'b');
  t.same(
    backend.requests.map((r) => r.url),
    ['/a', '/b'],
  );
  t.equal(backend.garbage, 0);
  const first = backend.requests[0];
  t.equal(first?.headers['content-length'], String(SMUGGLED_REQUEST.length), "the client's Content-Length");
  t.equal(first?.headers['transfer-encoding'], undefined, "not the router's Transfer-Encoding");
  t.equal(first?.headers['x-kept'], '1', "the router's other fields stay");
});

t.test('a router dropping Content-Length from responses (dropResponseHeaders): the client still gets the framing', async (t) => {
  const backend = await recordingBackend(t, (socket, req) => {
    if (req.url === '/a') socket.write(framed('HTTP/1.1 200 OK', 'X-Dropped: 1', 'content-length', SMUGGLED_RESPONSE), 'latin1');
    else plain(socket, req);
  });
  const target = targetFromUrl(backend.url);
  const route: RouteFn = () => {
    return { target, dropResponseHeaders: ['content-length', 'transfer-encoding', 'x-dropped'] };
  };
  const p = await proxy(t, false, route);
  const c = await p.connect();
  t.teardown(() => c.destroy());
  await c.write('GET /a HTTP/1.1\r\nHost: a\r\n\r\n');
  const a = await response(c, 1);
  t.equal(a?.body.toString('latin1'), SMUGGLED_RESPONSE);
  t.equal(a?.headers['content-length'], String(SMUGGLED_RESPONSE.length), 'Content-Length kept');
  t.equal(a?.headers['x-dropped'], undefined, 'the other listed field dropped');
  await c.write('GET /b HTTP/1.1\r\nHost: a\r\n\r\n');
  t.equal((await response(c, 2))?.body.toString('latin1'), 'b');
  t.equal(c.responses.length, 2);
});

for (const [what, decision] of [
  ['a request field value', { headers: ['Host', 'a', 'X-Script', 'v\r\nContent-Length: 40'] }],
  ['a request field name', { headers: ['X-A\r\nTransfer-Encoding', 'chunked'] }],
  ['a field value (NUL)', { headers: ['X-Nul', 'a\u0000b'] }],
  ['a long field value (past the short scan)', { headers: ['X-Long', 'v'.repeat(100) + '\r\nContent-Length: 40'] }],
  ['a short field value, at its end', { headers: ['X-End', 'v\n'] }],
  ['a response field value', { responseHeaders: ['X-R', 'a\r\nSet-Cookie: x=1'] }],
  ['the path (LF)', { path: '/a\nHost: b' }],
  ['the path (a space)', { path: '/a HTTP/1.1\r' }],
  ['the path (a space, short)', { path: '/a b' }],
  ['a long path (a space)', { path: '/' + 'p'.repeat(100) + ' x' }],
] as const) {
  t.test(`a line break in ${what} of a route decision: 500 (101510 + state), nothing forwarded`, async (t) => {
    const backend = await recordingBackend(t, plain);
    const target = targetFromUrl(backend.url);
    const h = await startTransport(t, () => ({ target, ...decision }));
    const c = await RawClient.connect(h.port);
    t.teardown(() => c.destroy());
    await c.write('GET /a HTTP/1.1\r\nHost: a\r\n\r\n');
    const res = await response(c, 1);
    t.equal(res?.status, 500);
    t.equal(h.faults.length, 1);
    const f = h.faults[0];
    t.match(f, {
      base: 101510,
      side: 'target',
      reason: 'processing',
      cause: 'a field or path of the route decision holds CR, LF or NUL, or the path a space',
    });
    t.equal(f?.code, 101510 + (f?.state ?? -1), 'code = base + state');
    t.equal(backend.requests.length, 0, 'nothing reached the backend');
  });
}

/**
 * forward's check remembers frozen lists and the last path it found clean (lib/transport/forward.ts); each
 * case hands out a clean decision first, then one that must still be refused on the same connection.
 */
const frozenClean = Object.freeze(['X-Frozen', 'clean']);
const otherFrozenClean = Object.freeze(['X-Other', 'clean']);
const mutable = ['X-Mutable', 'clean'];
interface Step {
  readonly headers?: readonly string[];
  readonly responseHeaders?: readonly string[];
  readonly path?: string;
  /** Run as the decision is handed out. */
  readonly change?: () => void;
}
const memoCases: readonly (readonly [string, readonly Step[]])[] = [
  ['a frozen list after a clean frozen one', [{ headers: frozenClean }, { headers: Object.freeze(['X-F', 'v\r\nContent-Length: 40']) }]],
  [
    'a frozen list after two clean frozen ones, the first again',
    [{ headers: frozenClean }, { headers: otherFrozenClean }, { headers: frozenClean }, { headers: Object.freeze(['X-F', 'v\n']) }],
  ],
  ['a list found clean, then changed in place', [{ headers: mutable }, { headers: mutable, change: () => (mutable[1] = 'v\r\nX-In: 1') }]],
  [
    'a frozen response list after a clean one',
    [{ responseHeaders: frozenClean }, { responseHeaders: Object.freeze(['X-R', 'a\r\nSet-Cookie: x=1']) }],
  ],
  ['a path after the same path found clean', [{ path: '/a' }, { path: '/a' }, { path: '/a b' }]],
  ['a path after a different path found clean', [{ path: '/a' }, { path: '/a\nHost: b' }]],
];
for (const [what, decisions] of memoCases) {
  t.test(`${what}: the clean ones are forwarded, the last is refused with 101510 + state`, async (t) => {
    const backend = await recordingBackend(t, plain);
    const target = targetFromUrl(backend.url);
    let n = 0;
    const h = await startTransport(t, () => {
      const { change, ...d } = decisions[n++] as Step;
      change?.();
      return { target, ...d };
    });
    const c = await RawClient.connect(h.port);
    t.teardown(() => c.destroy());
    for (let i = 0; i < decisions.length; i++) {
      await c.write('GET /a HTTP/1.1\r\nHost: a\r\n\r\n');
      const res = await response(c, i + 1);
      t.equal(res?.status, i < decisions.length - 1 ? 200 : 500, `request ${i + 1}`);
    }
    t.equal(backend.requests.length, decisions.length - 1, 'only the clean ones reached the backend');
    t.equal(h.faults.length, 1);
    t.match(h.faults[0], { base: 101510, reason: 'processing' });
  });
}

t.test("the client's own list, edited in place by the router after it was forwarded clean once, is refused", async (t) => {
  const backend = await recordingBackend(t, plain);
  const target = targetFromUrl(backend.url);
  let n = 0;
  const h = await startTransport(t, (ex) => {
    const headers = ex.headers as string[];
    if (n++ === 1) headers.push('X-Edited', 'v\r\nContent-Length: 40');
    return { target, headers };
  });
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write('GET /a HTTP/1.1\r\nHost: a\r\n\r\n');
  t.equal((await response(c, 1))?.status, 200);
  await c.write('GET /a HTTP/1.1\r\nHost: a\r\n\r\n');
  t.equal((await response(c, 2))?.status, 500);
  t.equal(backend.requests.length, 1);
});

checkTransitions(t);
