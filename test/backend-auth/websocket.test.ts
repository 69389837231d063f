/**
 * Backend security on a WebSocket API (docs/apis.md, "Backend security"): the handshake carries the
 * endpoint's credentials instead of the client's, and the tunnel works as usual.
 */
import type * as net from 'node:net';
import t from 'tap';
import { WebSocket, WebSocketServer, type RawData } from 'ws';
import { BASE_TOML, HOST, startGateway } from '../gateway/helpers';

t.test("a WebSocket handshake carries the endpoint's Basic credentials, never the client's", async (t) => {
  const seen: (string | undefined)[] = [];
  const server = new WebSocketServer({ host: HOST, port: 0 });
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  server.on('connection', (ws, req) => {
    seen.push(req.headers.authorization);
    ws.on('message', (d: RawData) => ws.send(`echo ${d.toString()}`));
  });
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        for (const c of server.clients) c.terminate();
        server.close(() => resolve());
      }),
  );
  const port = (server.address() as net.AddressInfo).port;
  const api = `name = "Chat"\ncontext = "/chat"\nversion = "1"\ntype = "WS"\nauth = "none"\nunauthenticated_policy = "Unlimited"\n[endpoints.production]\nurl = "ws://${HOST}:${port}/socket"\n[endpoints.production.security]\ntype = "basic"\nusername = "svc"\npassword = "ws-pw"\n[[resources]]\npath = "/*"\nmethods = ["GET"]\n`;
  const gw = await startGateway(BASE_TOML, { chat: api });
  t.teardown(() => gw.close());
  const ws = new WebSocket(`ws://${HOST}:${gw.port}/chat/1/room`, { headers: { Authorization: 'Bearer client-token' } });
  t.teardown(() => ws.terminate());
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  t.same(seen, [`Basic ${Buffer.from('svc:ws-pw').toString('base64')}`]);
  const reply = new Promise<string>((resolve) => ws.once('message', (d: RawData) => resolve(d.toString())));
  ws.send('hi');
  t.equal(await reply, 'echo hi');
});
