/**
 * A real GraphQL backend for the tests: the schema below served by `graphql-http` (GraphQL over HTTP) and
 * `graphql-ws` (graphql-transport-ws subscriptions) on one loopback listener, port 0. It records the
 * bodies it receives, so a test can show a query reached it unchanged. `legacyBackend()` speaks the
 * legacy graphql-ws protocol (subscriptions-transport-ws) over `ws`.
 */
import * as http from 'node:http';
import type * as net from 'node:net';
import { buildSchema } from 'graphql';
import { createHandler } from 'graphql-http/lib/use/http';
import { WebSocketServer } from 'ws';

export const SDL = `
type Query {
  hello(name: String): String
  user(id: ID!): User
  secret: String
  limited: Int
}
type User {
  id: ID!
  name: String
  friends: [User]
}
type Mutation {
  addOrder(item: String!): String
}
type Subscription {
  ticks(count: Int!): Int
}
`;

export interface GraphqlBackend {
  readonly port: number;
  /** Bodies of the HTTP requests received (utf8), in order. */
  readonly bodies: string[];
  /** Subscribe messages' queries received over WebSocket. */
  readonly subscriptions: string[];
  close(): Promise<void>;
}

interface UseServer {
  useServer(
    options: { schema: unknown; roots?: unknown; onSubscribe?: (ctx: unknown, id: string, payload: { query: string }) => void },
    ws: WebSocketServer,
  ): { dispose(): Promise<void> | void };
}

const user = (id: string, depth = 0): Record<string, unknown> => ({
  id,
  name: `user ${id}`,
  friends: depth > 4 ? [] : () => [user(`${id}.1`, depth + 1)],
});

/** `perMessageDeflate`: the WebSocket server agrees to permessage-deflate (RFC 7692) when a client offers it, compressing every message. */
export async function graphqlBackend(o: { perMessageDeflate?: boolean } = {}): Promise<GraphqlBackend> {
  const schema = buildSchema(SDL);
  let counter = 0;
  const root = {
    hello: ({ name }: { name?: string }) => `hello ${name ?? 'world'}`,
    user: ({ id }: { id: string }) => user(id),
    secret: () => 's3cret',
    limited: () => ++counter,
    addOrder: ({ item }: { item: string }) => `ordered ${item}`,
  };
  const bodies: string[] = [];
  const subscriptions: string[] = [];
  const handler = createHandler({ schema, rootValue: root });
  const server = http.createServer((req, res) => {
    // graphql-http sets the stream's encoding: chunks arrive as strings.
    let body = '';
    req.on('data', (c: Buffer | string) => (body += typeof c === 'string' ? c : c.toString('utf8')));
    req.on('end', () => bodies.push(body));
    // graphql-http reads the body itself; the copy above only records it.
    void handler(req, res);
  });
  const wss = new WebSocketServer({ server, ...(o.perMessageDeflate === true ? { perMessageDeflate: { threshold: 0 } } : {}) });
  // graphql-ws 6 publishes its ws adapter only through package exports, which this project's module
  // resolution does not read for types: the one function used is typed above.
  const { useServer } = require('graphql-ws/use/ws') as UseServer;
  const roots = {
    subscription: {
      ticks: async function* ({ count }: { count: number }) {
        for (let i = 1; i <= count; i++) {
          await new Promise((r) => setTimeout(r, 5));
          yield { ticks: i };
        }
      },
    },
  };
  const disposable = useServer({ schema, roots, onSubscribe: (_ctx, _id, payload) => void subscriptions.push(payload.query) }, wss);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    port: (server.address() as net.AddressInfo).port,
    bodies,
    subscriptions,
    async close() {
      await disposable.dispose();
      for (const c of wss.clients) c.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * The legacy graphql-ws protocol (subscriptions-transport-ws) on a `ws` server: `connection_init` is
 * acknowledged, each `start` recorded (its payload's query) and answered with one `data` message, the
 * `ticks` field's first event, then `complete`. Messages are read as subscriptions-transport-ws reads
 * them: JSON.parse of the message, text or binary.
 */
export async function legacyBackend(): Promise<GraphqlBackend> {
  const subscriptions: string[] = [];
  const wss = new WebSocketServer({
    host: '127.0.0.1',
    port: 0,
    handleProtocols: (offered) => (offered.has('graphql-ws') ? 'graphql-ws' : false),
  });
  wss.on('connection', (ws) => {
    ws.on('message', (data: Buffer) => {
      const m = JSON.parse(data.toString('utf8')) as { type: string; id?: string; payload?: { query: string } };
      if (m.type === 'connection_init') ws.send(JSON.stringify({ type: 'connection_ack' }));
      if (m.type === 'start') {
        subscriptions.push(m.payload?.query ?? '');
        ws.send(JSON.stringify({ id: m.id, type: 'data', payload: { data: { ticks: 1 } } }));
        ws.send(JSON.stringify({ id: m.id, type: 'complete' }));
      }
    });
  });
  await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
  return {
    port: (wss.address() as net.AddressInfo).port,
    bodies: [],
    subscriptions,
    async close() {
      for (const c of wss.clients) c.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}
