/**
 * gateway.handleUpgrade(req, socket, head) on a node:http server's 'upgrade' event: the socket goes to the
 * transport (Transport.tunnelsUpgrades) with the request head node:http consumed and the bytes after it
 * (`head`) replayed exactly. A WebSocket handshake to a WS API becomes a tunnel (a ws echo through the
 * app's server); an upgrade to an HTTP API is answered as a plain call; the handshake is authenticated.
 */
import t from 'tap';
import * as http from 'node:http';
import * as net from 'node:net';
import { WebSocket, WebSocketServer, type RawData } from 'ws';
import { api, echoBackend, embedded, field, HOST } from './helpers';

async function upgradeServer(
  onUpgrade: (req: http.IncomingMessage, socket: import('node:stream').Duplex, head: Buffer) => void,
): Promise<{ port: number; close(): Promise<void> }> {
  const server = http.createServer((_req, res) => res.end('plain'));
  server.on('upgrade', onUpgrade);
  await new Promise<void>((r) => server.listen(0, HOST, () => r()));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () =>
      new Promise((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}

/** Writes bytes, reads until the server closes (or, with `first`, until a whole response head arrived). */
function exchange(port: number, bytes: string, first = false): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, HOST, () => s.write(bytes));
    let got = '';
    s.on('data', (c: Buffer) => {
      got += c.toString('latin1');
      if (first && /\r\n\r\n[\s\S]*\}/.test(got)) {
        s.destroy();
        resolve(got);
      }
    });
    s.on('end', () => {
      s.end();
      resolve(got);
    });
    s.on('error', reject);
  });
}

async function wsEcho(): Promise<{ port: number; urls: string[]; close(): Promise<void> }> {
  const urls: string[] = [];
  const server = new WebSocketServer({ host: HOST, port: 0 });
  await new Promise<void>((r) => server.once('listening', () => r()));
  server.on('connection', (ws, req) => {
    urls.push(req.url ?? '');
    ws.on('message', (m: RawData) => ws.send(`echo ${m.toString()}`));
  });
  return {
    port: (server.address() as net.AddressInfo).port,
    urls,
    close: () =>
      new Promise((r) => {
        for (const c of server.clients) c.terminate();
        server.close(() => r());
      }),
  };
}

const wsApi = (port: number, auth = 'none'): Record<string, unknown> => ({
  name: 'Chat',
  context: '/chat',
  version: 'v1',
  type: 'WS',
  auth,
  endpoints: { production: `ws://${HOST}:${port}/socket` },
  resources: [{ path: '/*', methods: ['GET'] }],
});

t.test('a WebSocket through the app server: handleUpgrade hands the socket over, the gateway tunnels it', async (t) => {
  const echo = await wsEcho();
  const { gw } = embedded([wsApi(echo.port)]);
  t.equal(gw.transport.tunnelsUpgrades, true, 'the capability is declared on the Transport type');
  const faults: number[] = [];
  gw.on('fault', (f) => faults.push(f.code));
  const app = await upgradeServer(gw.handleUpgrade);
  t.teardown(async () => {
    await app.close();
    await gw.close();
    await echo.close();
  });
  const ws = new WebSocket(`ws://${HOST}:${app.port}/chat/v1/room?id=3`);
  t.teardown(() => ws.terminate());
  const replies: string[] = [];
  await new Promise<void>((resolve, reject) => {
    ws.on('open', () => ws.send('one'));
    ws.on('message', (m: RawData) => {
      replies.push(m.toString());
      if (replies.length === 1) ws.send('two');
      else resolve();
    });
    ws.on('error', reject);
  });
  t.same(replies, ['echo one', 'echo two']);
  t.same(echo.urls, ['/socket/room?id=3'], 'routed by context and version');
  t.equal(gw.transport.tunnels()[0]?.clientFrames, 2, 'the tunnel counts the frames');
  t.same(faults, []);
});

t.test('the handshake through handleUpgrade is authenticated: 401 without a token, no tunnel', async (t) => {
  const echo = await wsEcho();
  const { gw } = embedded([wsApi(echo.port, 'oauth2')]);
  const app = await upgradeServer(gw.handleUpgrade);
  t.teardown(async () => {
    await app.close();
    await gw.close();
    await echo.close();
  });
  const raw = await exchange(
    app.port,
    'GET /chat/v1/room HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
    true,
  );
  t.match(raw, /^HTTP\/1\.1 401 /);
  t.match(raw, /"code":900902/);
  t.same(echo.urls, [], 'the backend saw no handshake');
});

t.test('an upgrade to an HTTP API is answered as a plain call (Upgrade is hop-by-hop), not 103140', async (t) => {
  const backend = await echoBackend();
  const { gw } = embedded([api('Orders', '/orders', `http://127.0.0.1:${backend.port}`)]);
  const app = await upgradeServer(gw.handleUpgrade);
  t.teardown(async () => {
    await app.close();
    await gw.close();
    await backend.close();
  });
  const raw = await exchange(
    app.port,
    'GET /orders/v1/live HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade, close\r\nUpgrade: h2c\r\n\r\n',
  );
  t.match(raw, /^HTTP\/1\.1 200 OK\r\n/);
  t.equal(backend.seen.length, 1);
  t.equal(field(backend.seen[0]?.headers ?? [], 'upgrade'), undefined, 'Upgrade not forwarded');
});

t.test('hand-off: the consumed request head and the bytes after it are replayed to the transport', async (t) => {
  const backend = await echoBackend();
  const { gw } = embedded([api('Chat', '/chat', `http://127.0.0.1:${backend.port}/svc`)]);
  const app = await upgradeServer(gw.handleUpgrade);
  t.teardown(async () => {
    await app.close();
    await gw.close();
    await backend.close();
  });
  // node:http hands everything after the upgrade request's head over as `head`: here a second request.
  const raw = await exchange(
    app.port,
    'GET /chat/v1/room?id=1 HTTP/1.1\r\nHost: localhost\r\nX-Case-Kept: A b\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n' +
      'GET /chat/v1/second HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n',
  );
  t.equal(backend.seen.length, 2, 'both requests reached the transport');
  t.equal(backend.seen[0]?.url, '/svc/room?id=1');
  t.equal(field(backend.seen[0]?.headers ?? [], 'x-case-kept'), 'A b');
  t.equal(backend.seen[1]?.url, '/svc/second', 'the head bytes followed the replayed request');
  t.equal(raw.match(/HTTP\/1\.1 200 OK/g)?.length, 2);
});
