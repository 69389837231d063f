/**
 * WebSocket APIs with the built-in key manager's tokens (integration of Steps 5, 6 and 8): the handshake
 * is authenticated (401 without a token, the tunnel opens with a bearer field or an access_token query),
 * and per-frame throttling: every client frame counts as one call against the handshake's quotas, so the
 * frame past the subscription's limit closes the tunnel with 1008 and is not forwarded.
 */
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import t from 'tap';
import { WebSocket, WebSocketServer, type RawData } from 'ws';
import { Metrics } from '../../lib/observability/metrics';
import { registerComponentMetrics } from '../../lib/observability/components';
import { parseMetrics } from '../observability/node-helpers';
import { startNode, type Node } from '../security/helpers';

const HOST = '127.0.0.1';
const FIXED = Date.UTC(2026, 10, 24, 12, 0, 30);
const POLICIES = `[[subscription]]\nname = "Five"\nrequest_count = 5\nunit_time = 1\ntime_unit = "min"\n`;

interface Backend {
  readonly port: number;
  readonly handshakes: string[];
  readonly messages: string[];
  close(): Promise<void>;
}

async function wsBackend(): Promise<Backend> {
  const handshakes: string[] = [];
  const messages: string[] = [];
  const server = new WebSocketServer({ host: HOST, port: 0 });
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  server.on('connection', (ws, req) => {
    handshakes.push(req.url ?? '');
    ws.on('message', (d: RawData) => {
      messages.push(d.toString());
      ws.send(`echo ${d.toString()}`);
    });
  });
  return {
    port: (server.address() as net.AddressInfo).port,
    handshakes,
    messages,
    close: () =>
      new Promise<void>((resolve) => {
        for (const c of server.clients) c.terminate();
        server.close(() => resolve());
      }),
  };
}

/** Opens a WebSocket; resolves with it, or with the status of a refused handshake. */
function open(url: string, headers: Record<string, string> = {}): Promise<WebSocket | number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    ws.once('open', () => resolve(ws));
    ws.once('unexpected-response', (_req, res) => {
      resolve(res.statusCode ?? 0);
      res.resume();
      ws.terminate();
    });
    ws.once('error', reject);
  });
}

function echo(ws: WebSocket, text: string): Promise<string> {
  return new Promise((resolve) => {
    ws.once('message', (d: RawData) => resolve(d.toString()));
    ws.send(text);
  });
}

let node: Node;
let backend: Backend;
let dir: string;

t.before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-ws-thr-'));
  const file = path.join(dir, 'policies.toml');
  fs.writeFileSync(file, POLICIES);
  backend = await wsBackend();
  const chat = {
    name: 'chat',
    context: '/chat',
    version: '1',
    type: 'WS',
    endpoints: { production: `ws://${HOST}:${backend.port}/socket` },
    resources: [{ path: '/*', methods: ['GET'] }],
  };
  node = await startNode(() => [chat], `[throughway.throttling]\npolicies_file = "${file}"\n`, { throttling: { now: () => FIXED } });
});
t.teardown(async () => {
  await node.close();
  await backend.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

async function tokenFor(name: string, tier: string): Promise<string> {
  const created = await node.km.manager.createApplication({ name, owner: 'admin' });
  const keys = await node.km.manager.generateKeys(created.id, { keyType: 'PRODUCTION' });
  await node.km.manager.addSubscription({ application: created.id, apiContext: '/chat', apiVersion: '1', tier });
  return node.token({ consumerKey: keys.consumerKey, consumerSecret: keys.consumerSecret });
}

t.test(
  'the handshake is authenticated: 401 without a token or with a bad one; a bearer field or access_token opens the tunnel',
  async (t) => {
    t.equal(await open(`ws://${HOST}:${node.port}/chat/1/room`), 401, 'no token');
    t.equal(await open(`ws://${HOST}:${node.port}/chat/1/room`, { Authorization: 'Bearer not-a-token' }), 401, 'an invalid token');
    t.equal(await open(`ws://${HOST}:${node.port}/chat/1/room?access_token=not-a-token`), 401, 'an invalid access_token');
    t.equal(backend.handshakes.length, 0, 'the backend saw no refused handshake');
    const token = await tokenFor('WsApp', 'Unlimited');
    const a = await open(`ws://${HOST}:${node.port}/chat/1/room`, { Authorization: `Bearer ${token}` });
    t.type(a, WebSocket, 'bearer field');
    if (typeof a === 'number') return;
    t.teardown(() => a.terminate());
    t.equal(await echo(a, 'hi'), 'echo hi');
    const b = await open(`ws://${HOST}:${node.port}/chat/1/room?access_token=${encodeURIComponent(token)}&x=1`);
    t.type(b, WebSocket, 'access_token query');
    if (typeof b === 'number') return;
    t.teardown(() => b.terminate());
    t.equal(await echo(b, 'yo'), 'echo yo');
    t.same(backend.handshakes, ['/socket/room', '/socket/room?x=1'], 'the token never reaches the backend in the URL');
  },
);

t.test('per-frame throttling: the frame past the subscription quota closes the tunnel with 1008', async (t) => {
  const token = await tokenFor('FrameApp', 'Five');
  const before = backend.messages.length;
  const ws = await open(`ws://${HOST}:${node.port}/chat/1/room`, { Authorization: `Bearer ${token}` });
  if (typeof ws === 'number') {
    t.fail(`handshake refused: ${ws}`);
    return;
  }
  const closed = new Promise<number>((resolve) => ws.once('close', (c: number) => resolve(c)));
  // The handshake was call 1 of 5: four frames pass.
  for (const m of ['1', '2', '3', '4']) t.equal(await echo(ws, m), `echo ${m}`);
  ws.send('5');
  t.equal(await closed, 1008, 'closed with policy violation (RFC 6455 §7.4.1)');
  t.same(backend.messages.slice(before), ['1', '2', '3', '4'], 'the refused frame was not forwarded');
  const again = await open(`ws://${HOST}:${node.port}/chat/1/room`, { Authorization: `Bearer ${token}` });
  t.equal(again, 429, 'the quota is used up: the next handshake is throttled (900804)');
  const m = new Metrics({ processMetrics: false });
  registerComponentMetrics(m, () => node.gw);
  const s = parseMetrics(await m.text());
  t.equal(s.value('throughway_throttled_requests_total', { level: 'subscription', code: '900804' }), 2, 'the frame and the handshake');
});
