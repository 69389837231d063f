/**
 * WebSocket pass-through (RFC 6455) on the bare transport: `ws` as client and as backend, the handshake
 * routed like any request, then a tunnel: text, binary, fragmented messages, ping/pong, close codes,
 * frames counted both ways, the per-frame hook closing with 1008, a slow reader held back by
 * backpressure, and a backend that refuses the upgrade relayed as a plain response.
 */
import t from 'tap';
import * as net from 'node:net';
import { WebSocket, WebSocketServer, type RawData } from 'ws';
import { targetFromUrl, type TunnelInfo, type RouteFn } from '../../lib/transport';
import { FrameCounter, closeFrame } from '../../lib/transport/tunnel';
import { checkTransitions, startTransport } from '../helpers/transport';
import { HOST, until } from '../helpers/client';

interface Echo {
  readonly port: number;
  readonly server: WebSocketServer;
  readonly received: (string | Buffer)[];
  close(): Promise<void>;
}

async function echoBackend(onConnection?: (ws: WebSocket) => void): Promise<Echo> {
  const received: (string | Buffer)[] = [];
  const server = new WebSocketServer({ host: HOST, port: 0 });
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  server.on('connection', (ws) => {
    if (onConnection !== undefined) {
      onConnection(ws);
      return;
    }
    ws.on('message', (data: RawData, isBinary: boolean) => {
      const v = isBinary ? Buffer.from(data as Buffer) : data.toString();
      received.push(v);
      if (v === 'close-4001') ws.close(4001, 'asked to');
      else ws.send(v, { binary: isBinary });
    });
  });
  return {
    port: (server.address() as net.AddressInfo).port,
    server,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        for (const c of server.clients) c.terminate();
        server.close(() => resolve());
      }),
  };
}

function open(url: string, options: ConstructorParameters<typeof WebSocket>[2] = {}): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, options);
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
    ws.once('unexpected-response', (_req, res) => reject(new Error(`unexpected response ${res.statusCode}`)));
  });
}

function nextMessage(ws: WebSocket): Promise<{ data: string | Buffer; binary: boolean }> {
  return new Promise((resolve) =>
    ws.once('message', (data: RawData, binary: boolean) =>
      resolve({ data: binary ? Buffer.from(data as Buffer) : data.toString(), binary }),
    ),
  );
}

function wsRoute(backendPort: number, hooks: { onClientFrame?(ti: TunnelInfo): boolean; onClose?(ti: TunnelInfo): void } = {}): RouteFn {
  const target = targetFromUrl(`http://${HOST}:${backendPort}`);
  return (req) => (req.upgrade === true ? { target, websocket: hooks } : { target });
}

t.test('frame counter: headers split across reads, 16- and 64-bit lengths, masked frames', async (t) => {
  const frames = [
    Buffer.from([0x81, 0x85, 1, 2, 3, 4, 1, 2, 3, 4, 5]), // masked text, 5 bytes
    Buffer.concat([Buffer.from([0x82, 126, 0x01, 0x00]), Buffer.alloc(256)]), // binary, 16-bit length
    Buffer.concat([Buffer.from([0x02, 127, 0, 0, 0, 0, 0, 1, 0, 0]), Buffer.alloc(65536)]), // 64-bit length, not FIN
    Buffer.from([0x89, 0x00]), // ping, empty
  ];
  const all = Buffer.concat(frames);
  for (const step of [1, 3, 7, 1000, all.length]) {
    const c = new FrameCounter();
    for (let i = 0; i < all.length; i += step) c.scan(all, i, Math.min(all.length, i + step), undefined);
    t.equal(c.frames, 4, `4 frames when read ${step} bytes at a time`);
    t.ok(c.atBoundary, 'between frames at the end');
  }
  const c = new FrameCounter();
  const starts: number[] = [];
  t.equal(
    c.scan(all, 0, all.length, (s) => (starts.push(s), starts.length < 2)),
    frames[0]!.length,
    'refusing the second frame stops at its header',
  );
  t.same(starts, [0, frames[0]!.length]);
  t.same([...closeFrame(1008, 'x', false)], [0x88, 3, 0x03, 0xf0, 0x78], 'unmasked close frame toward the client');
});

t.test('echo through the tunnel: text, binary, fragmented, ping/pong, frames counted, close code', async (t) => {
  const backend = await echoBackend();
  t.teardown(() => backend.close());
  let closedInfo: TunnelInfo | undefined;
  const h = await startTransport(t, wsRoute(backend.port, { onClose: (ti) => (closedInfo = { ...ti }) }));
  const ws = await open(`ws://${HOST}:${h.port}/chat?room=1`);
  t.equal(h.transport.tunnels().length, 1, 'one tunnel open');
  t.equal(h.exchanges[0]?.status, 101, 'the handshake is an exchange with status 101');

  ws.send('hello');
  t.same(await nextMessage(ws), { data: 'hello', binary: false }, 'text echoed');
  const bin = Buffer.from([0, 1, 2, 254, 255]);
  ws.send(bin);
  const b = await nextMessage(ws);
  t.ok(b.binary && Buffer.compare(b.data as Buffer, bin) === 0, 'binary echoed byte for byte');
  const big = Buffer.alloc(200_000, 7);
  ws.send(big);
  const bb = await nextMessage(ws);
  t.equal((bb.data as Buffer).length, 200_000, 'a 200 KB message (64-bit length) echoed whole');

  // Fragmented: one message in three frames (RFC 6455 §5.4).
  ws.send('frag-', { fin: false });
  ws.send('ment-', { fin: false });
  ws.send('ed', { fin: true });
  t.same(await nextMessage(ws), { data: 'frag-ment-ed', binary: false }, 'fragments reassembled by the backend');

  const pong = new Promise<Buffer>((resolve) => ws.once('pong', (d) => resolve(d)));
  ws.ping(Buffer.from('are you there'));
  t.equal((await pong).toString(), 'are you there', 'ping answered with a pong through the tunnel');

  const info = h.transport.tunnels()[0] as TunnelInfo;
  t.equal(info.clientFrames, 7, 'client frames: text, binary, big, 3 fragments, ping');
  t.equal(info.backendFrames, 5, 'backend frames: 4 echoes and the pong');
  t.equal(info.state, 'open');

  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })),
  );
  ws.send('close-4001');
  t.same(await closed, { code: 4001, reason: 'asked to' }, "the backend's close code and reason reach the client");
  await until(() => closedInfo !== undefined, 3000);
  t.equal(closedInfo?.state, 'closed', 'the tunnel reports closed');
  t.equal(h.transport.tunnels().length, 0);
  t.equal(h.transport.connections().sources, 0, 'the client connection is gone');
  t.equal(h.faults.length, 0, 'a clean close is no fault');
});

t.test('client close code reaches the backend', async (t) => {
  let backendClose: ((v: { code: number; reason: string }) => void) | undefined;
  const got = new Promise<{ code: number; reason: string }>((resolve) => (backendClose = resolve));
  const backend = await echoBackend((ws) => ws.on('close', (code, reason) => backendClose?.({ code, reason: reason.toString() })));
  t.teardown(() => backend.close());
  const h = await startTransport(t, wsRoute(backend.port));
  const ws = await open(`ws://${HOST}:${h.port}/x`);
  ws.close(4321, 'bye');
  t.same(await got, { code: 4321, reason: 'bye' });
  await until(() => h.transport.tunnels().length === 0, 3000);
  t.equal(h.transport.tunnels().length, 0, 'tunnel closed');
});

t.test('per-frame hook: the third client frame is refused, 1008 to the client, fault 103082', async (t) => {
  const backend = await echoBackend();
  t.teardown(() => backend.close());
  const h = await startTransport(t, wsRoute(backend.port, { onClientFrame: (ti) => ti.clientFrames <= 2 }));
  const ws = await open(`ws://${HOST}:${h.port}/x`);
  ws.send('one');
  await nextMessage(ws);
  ws.send('two');
  await nextMessage(ws);
  const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
  ws.send('three');
  t.equal(await closed, 1008, 'policy violation close code');
  await until(() => backend.received.length >= 2 && h.faults.length > 0, 3000);
  t.same(backend.received, ['one', 'two'], 'the refused frame never reached the backend');
  t.equal(h.faults[0]?.code, 103082);
});

t.test('backpressure: a client that does not read stops the backend, nothing is lost', async (t) => {
  // 64 MiB: more than the kernel's socket buffers on both hops can hold.
  const total = 256;
  const chunk = Buffer.alloc(256 * 1024, 1);
  let sentAll: (() => void) | undefined;
  let bufferedMax = 0;
  const backend = await echoBackend((ws) => {
    let i = 0;
    const pump = (): void => {
      while (i < total) {
        ws.send(chunk);
        i++;
        bufferedMax = Math.max(bufferedMax, ws.bufferedAmount);
        if (ws.bufferedAmount > 1024 * 1024) {
          setTimeout(pump, 20);
          return;
        }
      }
      sentAll?.();
    };
    pump();
  });
  t.teardown(() => backend.close());
  const h = await startTransport(t, wsRoute(backend.port), { settings: { highWaterMark: 256 * 1024 } });
  // A raw client: handshake by hand, then it does not read for a while.
  const sock = net.connect(h.port, HOST);
  await new Promise<void>((resolve) => sock.once('connect', () => resolve()));
  // Not reading from the start (paused before any 'data' listener).
  sock.pause();
  sock.write(
    `GET /slow HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`,
  );
  let received = 0;
  sock.on('data', (d) => (received += d.length));
  await until(() => h.transport.tunnels().length === 1, 3000);
  let done = false;
  const allSent = new Promise<void>((resolve) => (sentAll = resolve)).then(() => (done = true));
  await new Promise((r) => setTimeout(r, 600));
  t.notOk(done, 'the backend could not send everything while the client did not read');
  t.ok(bufferedMax > 1024 * 1024, 'the backend saw its own buffer fill (the tunnel stopped reading it)');
  sock.resume();
  await allSent;
  const expected = total * (chunk.length + 10);
  await until(() => received >= expected, 15_000);
  t.ok(received >= expected, `every byte arrived once the client read (${received} >= ${expected})`);
  sock.destroy();
});

t.test('a backend that refuses the upgrade: its answer is relayed, no tunnel', async (t) => {
  const server = net.createServer((c) => {
    c.once('data', () => c.end('HTTP/1.1 403 Forbidden\r\nContent-Length: 2\r\nConnection: close\r\n\r\nno'));
  });
  await new Promise<void>((resolve) => server.listen(0, HOST, () => resolve()));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const h = await startTransport(t, wsRoute((server.address() as net.AddressInfo).port));
  await t.rejects(open(`ws://${HOST}:${h.port}/x`), /unexpected response 403/);
  t.equal(h.transport.tunnels().length, 0);
});

t.test('a 101 to a request the router did not mark as WebSocket is a protocol fault (101506 + state)', async (t) => {
  const backend = await echoBackend();
  t.teardown(() => backend.close());
  const target = targetFromUrl(`http://${HOST}:${backend.port}`);
  const h = await startTransport(t, () => ({ target }));
  const sock = net.connect(h.port, HOST);
  t.teardown(() => sock.destroy());
  let data = '';
  sock.on('data', (d) => (data += d.toString('latin1')));
  // The Upgrade field is dropped toward the backend, which then answers 400: no 101, no tunnel.
  sock.write(
    `GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`,
  );
  await until(() => data.includes('\r\n\r\n'), 3000);
  t.notMatch(data, /^HTTP\/1\.1 101/, 'never switched protocols');
  t.equal(h.transport.tunnels().length, 0);
});

t.test('wss:// backend: the tunnel runs over the outbound TLS socket', async (t) => {
  const { selfSigned } = await import('../../lib/tls/sample');
  const tls = await import('node:tls');
  const https = await import('node:https');
  const { checkServerIdentityFor } = await import('../../lib/transport/verify');
  const ca = selfSigned('ca', [], { ca: true, bits: 2048 });
  const cert = selfSigned('localhost', ['localhost', '127.0.0.1'], { issuer: ca, bits: 2048 });
  const server = https.createServer({ key: cert.keyPem, cert: cert.certPem });
  const wss = new WebSocketServer({ server });
  wss.on('connection', (ws) => ws.on('message', (d: RawData) => ws.send(`tls ${d.toString()}`)));
  await new Promise<void>((resolve) => server.listen(0, HOST, () => resolve()));
  t.teardown(() => new Promise<void>((resolve) => (wss.close(), server.closeAllConnections(), server.close(() => resolve()))));
  const target = targetFromUrl(`wss://localhost:${(server.address() as net.AddressInfo).port}`, {
    tls: { context: tls.createSecureContext({ ca: ca.certPem }), checkServerIdentity: checkServerIdentityFor('Strict') },
  });
  const h = await startTransport(t, () => ({ target, websocket: {} }));
  const ws = await open(`ws://${HOST}:${h.port}/x`);
  t.teardown(() => ws.terminate());
  ws.send('hello');
  t.same(await nextMessage(ws), { data: 'tls hello', binary: false });
  t.equal(h.transport.tunnels()[0]?.backendFrames, 1);
});

checkTransitions(t);
