/**
 * A GraphQL API's WebSocket reads every message the backend would read (docs/graphql.md "Subscriptions
 * over WebSocket"), with the `ws` client through the gateway to real backends: graphql-ws (which reads
 * binary messages as text) with permessage-deflate on, and a legacy graphql-ws protocol server
 * (subscriptions-transport-ws's `start`). A binary subscribe, a legacy `start` and a compressed message
 * are each judged like a text subscribe or refused; none reaches the backend unread. A plain WebSocket
 * API keeps its extensions negotiated end to end.
 */
import { deflateRawSync } from 'node:zlib';
import type { Socket } from 'node:net';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import t from 'tap';
import type { Test } from 'tap';
import { WebSocket, type RawData } from 'ws';
import { api, startNode, type Node } from '../security/helpers';
import { HOST } from '../gateway/helpers';
import { graphqlBackend, legacyBackend, SDL, type GraphqlBackend } from './backend';

let node: Node;
let backend: GraphqlBackend;
let legacy: GraphqlBackend;
let dir: string;
let readToken: string;
let plainToken: string;

t.before(async () => {
  backend = await graphqlBackend({ perMessageDeflate: true });
  legacy = await legacyBackend();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-gql-ws-'));
  const schema = path.join(dir, 'schema.graphql');
  fs.writeFileSync(schema, SDL);
  const operations = [{ type: 'SUBSCRIPTION', name: 'ticks', scopes: ['ticks:read'] }];
  node = await startNode(
    () => [
      api('gql', { type: 'GRAPHQL', graphql: { schema }, operations }, [], backend.port),
      api('legacy', { type: 'GRAPHQL', graphql: { schema }, operations }, [], legacy.port),
      api('plain', { type: 'WS', auth: 'none' }, undefined, backend.port),
    ],
    '',
    { scopes: ['ticks:read'] },
  );
  const app = await node.app('ws-app', { subscribe: ['gql', 'legacy'] });
  readToken = await node.token(app, { scope: 'ticks:read' });
  plainToken = await node.token(app);
});
t.teardown(async () => {
  await node?.close();
  await backend?.close();
  await legacy?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

type Message = { type: string; id?: string; payload?: unknown };
interface Opened {
  readonly ws: WebSocket;
  next(): Promise<Message>;
  readonly closed: Promise<number>;
  /** The client's socket, for frames the ws client would not write. */
  readonly raw: Socket;
}

/** A socket through the gateway with `protocol`, acknowledged (connection_init sent, connection_ack read). */
async function open(
  t: Test,
  pathname: string,
  protocol: string | undefined,
  token: string | undefined,
  perMessageDeflate = true,
): Promise<Opened> {
  const ws = new WebSocket(`ws://${HOST}:${node.port}${pathname}`, protocol ?? [], {
    perMessageDeflate,
    ...(token !== undefined ? { headers: { Authorization: `Bearer ${token}` } } : {}),
  });
  t.teardown(() => ws.terminate());
  const queue: Message[] = [];
  let wake: (() => void) | undefined;
  ws.on('message', (d: RawData) => {
    queue.push(JSON.parse(d.toString()) as Message);
    wake?.();
  });
  let closeCode: number | undefined;
  const closed = new Promise<number>((resolve) =>
    ws.once('close', (c: number) => {
      closeCode = c;
      wake?.();
      resolve(c);
    }),
  );
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  /** The next message; a socket closed with none left fails the wait with its close code. */
  const next = async (): Promise<Message> => {
    while (queue.length === 0) {
      if (closeCode !== undefined) throw new Error(`the socket closed (${closeCode}) before the message came`);
      await new Promise<void>((r) => (wake = r));
    }
    return queue.shift() as Message;
  };
  if (protocol !== undefined) {
    ws.send(JSON.stringify({ type: 'connection_init' }));
    t.equal((await next()).type, 'connection_ack');
  }
  return { ws, next, closed, raw: (ws as unknown as { _socket: Socket })._socket };
}

/** A masked client frame (RFC 6455 §5.2, §5.3): first byte `b0` (FIN, RSV, opcode) and the payload. */
function clientFrame(b0: number, payload: Buffer): Buffer {
  const key = Buffer.from([0x5a, 0x11, 0xc3, 0x7e]);
  const n = payload.length;
  const len = n < 126 ? Buffer.from([0x80 | n]) : Buffer.from([0x80 | 126, n >> 8, n & 0xff]);
  return Buffer.concat([Buffer.from([b0]), len, key, Buffer.from(payload.map((b, i) => b ^ (key[i % 4] as number)))]);
}

const subscribe = (id: string, type = 'subscribe'): string =>
  JSON.stringify({ id, type, payload: { query: 'subscription { ticks(count: 1) }' } });
const scopeError = {
  message: 'the access token lacks the scope the subscription field ticks requires: ticks:read',
  extensions: { code: 900910 },
};

t.test('a binary subscribe (graphql-ws reads it as text) is judged like a text one: refused for its scope, run with it', async (t) => {
  const before = backend.subscriptions.length;
  // Without permessage-deflate: the binary frame alone is what a tunnel that reads text frames only forwards unread.
  const s = await open(t, '/gql/1', 'graphql-transport-ws', plainToken, false);
  s.ws.send(Buffer.from(subscribe('b1')), { binary: true });
  t.same(await s.next(), { id: 'b1', type: 'error', payload: [scopeError] }, "the gateway's error for the binary message");
  t.equal(backend.subscriptions.length, before, 'the backend never saw it');

  const ok = await open(t, '/gql/1', 'graphql-transport-ws', readToken, false);
  ok.ws.send(Buffer.from(subscribe('b2')), { binary: true });
  t.same(await ok.next(), { id: 'b2', type: 'next', payload: { data: { ticks: 1 } } }, 'an allowed binary subscribe is forwarded as sent');
  t.equal((await ok.next()).type, 'complete');
  t.same(backend.subscriptions.slice(before), ['subscription { ticks(count: 1) }']);
});

t.test('a binary or text message that is not UTF-8 closes the socket with 1007', async (t) => {
  const s = await open(t, '/gql/1', 'graphql-transport-ws', readToken, false);
  s.raw.write(clientFrame(0x82, Buffer.from([0x7b, 0xff, 0xfe, 0x7d])));
  t.equal(await s.closed, 1007);
});

t.test("the legacy graphql-ws protocol: each start is judged like a subscribe, its error in that protocol's shape", async (t) => {
  const s = await open(t, '/legacy/1', 'graphql-ws', plainToken);
  t.equal(s.ws.protocol, 'graphql-ws', 'the legacy sub-protocol was negotiated with the backend');
  s.ws.send(subscribe('1', 'start'));
  t.same(await s.next(), { id: '1', type: 'error', payload: scopeError }, 'one error object, as subscriptions-transport-ws sends');
  s.ws.send(Buffer.from(subscribe('2', 'start')), { binary: true });
  t.same(await s.next(), { id: '2', type: 'error', payload: scopeError }, 'a binary start too');
  t.same(legacy.subscriptions, [], 'no refused start reached the backend');

  const ok = await open(t, '/legacy/1', 'graphql-ws', readToken);
  ok.ws.send(subscribe('3', 'start'));
  t.same(await ok.next(), { id: '3', type: 'data', payload: { data: { ticks: 1 } } });
  t.equal((await ok.next()).type, 'complete');
  ok.ws.send(JSON.stringify({ id: '3', type: 'stop' }));
  ok.ws.send(JSON.stringify({ type: 'connection_terminate' }));
  t.same(legacy.subscriptions, ['subscription { ticks(count: 1) }'], 'the allowed start ran; stop and connection_terminate passed');
});

t.test('a message of another type, or with a key twice (a first-key parser could read start), closes the socket with 4400', async (t) => {
  const other = await open(t, '/legacy/1', 'graphql-ws', readToken);
  other.ws.send(JSON.stringify({ id: '1', type: 'subscription_start', query: 'subscription { ticks(count: 1) }' }));
  t.equal(await other.closed, 4400, 'an unknown type');
  const twice = await open(t, '/legacy/1', 'graphql-ws', plainToken);
  twice.ws.send(`{"id":"1","type":"start","payload":{"query":"subscription { ticks(count: 1) }"},"type":"connection_init"}`);
  t.equal(await twice.closed, 4400, 'type twice');
  t.same(legacy.subscriptions, ['subscription { ticks(count: 1) }'], 'nothing more reached the backend');
});

t.test(
  'permessage-deflate is not negotiated on a GraphQL API: the offer never reaches the backend, a compressed frame closes with 1002',
  async (t) => {
    const before = backend.subscriptions.length;
    const s = await open(t, '/gql/1', 'graphql-transport-ws', plainToken);
    t.equal(s.ws.extensions, '', 'the client offered permessage-deflate, the backend (which accepts it) agreed to nothing');
    s.ws.send(Buffer.from(subscribe('c1')), { binary: true, compress: true });
    t.same(await s.next(), { id: 'c1', type: 'error', payload: [scopeError] }, "so the client's messages stay readable and are judged");
    const big = await open(t, '/gql/1', 'graphql-transport-ws', readToken);
    big.ws.send(
      JSON.stringify({ id: 'c2', type: 'subscribe', payload: { query: `subscription { ticks(count: 1) } # ${'x'.repeat(4000)}` } }),
      { compress: true },
    );
    t.same(
      await big.next(),
      { id: 'c2', type: 'next', payload: { data: { ticks: 1 } } },
      'a long message the client would have compressed is judged and runs',
    );
    t.equal(backend.subscriptions.length, before + 1);

    // A frame compressed anyway (RSV1, RFC 7692 §6): refused, neither read nor forwarded.
    const raw = await open(t, '/gql/1', 'graphql-transport-ws', plainToken, false);
    const deflated = deflateRawSync(Buffer.from(subscribe('c3')));
    raw.raw.write(clientFrame(0xc2, deflated.subarray(0, deflated.length - 4)));
    t.equal(await raw.closed, 1002);
    t.equal(backend.subscriptions.length, before + 1, 'the compressed subscribe never reached the backend');
  },
);

t.test('a reserved opcode closes with 1002, a fragmented binary message with 1003', async (t) => {
  const reserved = await open(t, '/gql/1', 'graphql-transport-ws', readToken, false);
  reserved.raw.write(clientFrame(0x83, Buffer.from(subscribe('r'))));
  t.equal(await reserved.closed, 1002);
  const fragment = await open(t, '/gql/1', 'graphql-transport-ws', readToken, false);
  fragment.raw.write(clientFrame(0x02, Buffer.from(subscribe('f'))));
  t.equal(await fragment.closed, 1003);
});

t.test('a plain WebSocket API (type WS) still negotiates permessage-deflate end to end', async (t) => {
  const s = await open(t, '/plain/1', undefined, undefined);
  t.match(s.ws.extensions, /^permessage-deflate/, 'the extension the backend agreed to');
});
