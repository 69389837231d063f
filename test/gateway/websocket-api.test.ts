/**
 * WebSocket APIs (type = "WS") through the gateway: the handshake is routed by context and version
 * through the phase chain, `access_token` becomes an Authorization field (and leaves the URL the backend
 * and the access log see), a plain call gets 103083, a handshake the chain refuses never opens a tunnel,
 * and an HTTP API answers a handshake without switching protocols.
 */
import * as net from 'node:net';
import t from 'tap';
import { WebSocket, WebSocketServer, type RawData } from 'ws';
import { BASE_TOML, HOST, apiToml, request, startGateway } from './helpers';
import { createTransport } from '../../lib/transport';

interface Backend {
  readonly port: number;
  readonly handshakes: { url: string; authorization: string | undefined }[];
  close(): Promise<void>;
}

async function wsBackend(): Promise<Backend> {
  const handshakes: Backend['handshakes'] = [];
  const server = new WebSocketServer({ host: HOST, port: 0 });
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  server.on('connection', (ws, req) => {
    handshakes.push({ url: req.url ?? '', authorization: req.headers.authorization });
    ws.on('message', (d: RawData, binary: boolean) => ws.send(binary ? d : `echo ${d.toString()}`, { binary }));
  });
  return {
    port: (server.address() as net.AddressInfo).port,
    handshakes,
    close: () =>
      new Promise<void>((resolve) => {
        for (const c of server.clients) c.terminate();
        server.close(() => resolve());
      }),
  };
}

function open(url: string, headers: Record<string, string> = {}): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
    ws.once('unexpected-response', (_req, res) => reject(new Error(`unexpected response ${res.statusCode}`)));
  });
}

const wsApi = (port: number, type = 'WS'): string =>
  apiToml({
    name: 'Chat',
    context: '/chat',
    version: '1.0.0',
    endpoint: `ws://${HOST}:${port}/socket`,
    resources: [['/*', ['GET']]],
    extra: `type = "${type}"`,
  });

t.test('a WebSocket API: handshake routed by context and version, echo through the tunnel', async (t) => {
  const backend = await wsBackend();
  const gw = await startGateway(BASE_TOML, { chat: wsApi(backend.port) });
  t.teardown(async () => {
    await gw.close();
    await backend.close();
  });
  const ws = await open(`ws://${HOST}:${gw.port}/chat/1.0.0/room/7?x=1`);
  t.teardown(() => ws.terminate());
  t.equal(backend.handshakes[0]?.url, '/socket/room/7?x=1', 'context and version replaced by the endpoint path');
  const reply = new Promise<string>((resolve) => ws.once('message', (d: RawData) => resolve(d.toString())));
  ws.send('hi');
  t.equal(await reply, 'echo hi');
  t.equal(gw.gw.transport.tunnels().length, 1);
  t.equal(gw.gw.transport.tunnels()[0]?.clientFrames, 1, 'frames counted for per-frame throttling');
});

t.test('access_token query parameter: an Authorization field toward the chain, gone from the URL', async (t) => {
  const backend = await wsBackend();
  // The token header is removed toward the backend by default; kept here so the backend shows what the chain saw.
  const gw = await startGateway(BASE_TOML + '[apim.oauth_config]\nenable_outbound_auth_header = true\n', { chat: wsApi(backend.port) });
  t.teardown(async () => {
    await gw.close();
    await backend.close();
  });
  const ws = await open(`ws://${HOST}:${gw.port}/chat/1.0.0/r?a=1&access_token=tok%2Ben&b=2`);
  t.teardown(() => ws.terminate());
  t.same(backend.handshakes[0], { url: '/socket/r?a=1&b=2', authorization: 'Bearer tok+en' });
  const ws2 = await open(`ws://${HOST}:${gw.port}/chat/1.0.0/r?access_token=ignored`, { Authorization: 'Bearer from-header' });
  t.teardown(() => ws2.terminate());
  t.equal(backend.handshakes[1]?.authorization, 'Bearer from-header', 'an Authorization field already sent wins');
});

t.test('a plain call to a WebSocket API: 103083 (400); a handshake to an HTTP API is not upgraded', async (t) => {
  const backend = await wsBackend();
  const gw = await startGateway(BASE_TOML, {
    chat: wsApi(backend.port),
    plain: wsApi(backend.port, 'HTTP').replace('/chat', '/plain').replace('"Chat"', '"Plain"'),
  });
  t.teardown(async () => {
    await gw.close();
    await backend.close();
  });
  const r = await request(gw.port, '/chat/1.0.0/room');
  t.equal(r.status, 400);
  t.equal(JSON.parse(r.body).fault.code, 103083);
  await t.rejects(
    open(`ws://${HOST}:${gw.port}/plain/1.0.0/room`),
    /unexpected response/,
    'the HTTP API forwards without Upgrade: the backend refuses',
  );
  t.equal(gw.gw.transport.tunnels().length, 0);
});

t.test('a handshake refused by the chain (an authentication phase saying 401) never opens a tunnel', async (t) => {
  const backend = await wsBackend();
  const gw = await startGateway(BASE_TOML, { chat: wsApi(backend.port) });
  t.teardown(async () => {
    await gw.close();
    await backend.close();
  });
  // A router in front of the gateway's chain standing in for the authentication phase.
  const transport = createTransport({
    route: (req) => {
      const decision = gw.gw.route(req);
      const auth = req.headers.findIndex((h, i) => i % 2 === 0 && h.toLowerCase() === 'authorization');
      return auth >= 0 && req.headers[auth + 1] === 'Bearer good' ? decision : { status: 401, body: '{"fault":{"code":900902}}' };
    },
  });
  const a = await transport.listen({ port: 0, host: HOST });
  t.teardown(() => transport.close());
  await t.rejects(open(`ws://${HOST}:${a.port}/chat/1.0.0/r?access_token=bad`), /unexpected response 401/);
  t.equal(backend.handshakes.length, 0, 'the backend never saw it');
  const ok = await open(`ws://${HOST}:${a.port}/chat/1.0.0/r?access_token=good`);
  t.teardown(() => ok.terminate());
  t.equal(backend.handshakes.length, 1, 'the good token passes: access_token reached the check as Authorization');
});
