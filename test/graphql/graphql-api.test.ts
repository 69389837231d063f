/**
 * GraphQL APIs (type = "GRAPHQL", docs/graphql.md) through the gateway to a real GraphQL backend
 * (graphql-http and graphql-ws, ./backend.ts), with tokens of the in-process key manager: a valid query
 * proxied unchanged (POST JSON, POST application/graphql, GET), 900422 with the parser's line:column, a
 * schema validation fault listing the errors, a field's scope refused (900910) and granted, depth and
 * complexity limits, introspection refused and allowed per API, a per-field throttle (900802), a
 * mutation by GET (405), a body over max_query_bytes (413), and a subscription receiving its events over
 * WebSocket (graphql-transport-ws) through the gateway, with the handshake authenticated.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import t from 'tap';
import type { Test } from 'tap';
import { WebSocket, type RawData } from 'ws';
import { api, code, startNode, type Node } from '../security/helpers';
import { HOST, request, until, type Response } from '../gateway/helpers';
import { graphqlBackend, SDL, type GraphqlBackend } from './backend';
import { analyse, buildGraphqlSchema, POOL_QUERY_CHARS, type GraphqlSchema } from '../../lib/graphql';

const POLICIES = `
[[subscription]]
name = "Shallow"
request_count = 1000
unit_time = 1
time_unit = "min"
graphql_max_depth = 2
graphql_max_complexity = 3

[[subscription]]
name = "Tight"
request_count = 3
unit_time = 1
time_unit = "min"

[[api]]
name = "Two"
request_count = 2
unit_time = 1
time_unit = "min"
`;
// Mid-minute, so every call of the test falls in one throttling window.
const FIXED = Date.UTC(2026, 10, 24, 12, 0, 30);

let node: Node;
let backend: GraphqlBackend;
let dir: string;
let readToken: string;
let plainToken: string;

t.before(async () => {
  backend = await graphqlBackend();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-gql-'));
  const schema = path.join(dir, 'schema.graphql');
  fs.writeFileSync(schema, SDL);
  const policies = path.join(dir, 'policies.toml');
  fs.writeFileSync(policies, POLICIES);
  const gql = (name: string, graphql: Record<string, unknown>, extra: Record<string, unknown> = {}): Record<string, unknown> =>
    api(name, { type: 'GRAPHQL', graphql: { schema, ...graphql }, ...extra }, [], backend.port);
  node = await startNode(
    () => [
      gql(
        'gql',
        { max_depth: 4, max_complexity: 12 },
        {
          operations: [
            { type: 'QUERY', name: 'secret', scopes: ['secret:read'] },
            { type: 'QUERY', name: 'limited', policy: 'Two' },
            { type: 'MUTATION', name: 'addOrder', scopes: ['order:write', 'order:all'] },
            { type: 'SUBSCRIPTION', name: 'ticks', scopes: ['ticks:read'] },
          ],
        },
      ),
      gql('open', { introspection: true, max_query_bytes: 200 }, { auth: 'none' }),
      gql('big', {}, { auth: 'none' }),
      gql('subs', {}, { auth: 'none', operations: [{ type: 'SUBSCRIPTION', name: 'ticks', policy: 'Two' }] }),
    ],
    `[throughway.throttling]\npolicies_file = "${policies}"\n[http_access_log]\nenabled = true\nuseLogger = true\n[passthru_http]\nforce_json_validation = true\n[apim.analytics]\nenable = true\n[throughway.analytics]\nfile = "${path.join(dir, 'events.jsonl')}"\nflush_interval = "60s"\n`,
    { scopes: ['secret:read', 'order:write', 'order:all', 'ticks:read'], throttling: { now: () => FIXED } },
  );
  const app = await node.app('gql-app', { subscribe: ['gql'] });
  readToken = await node.token(app, { scope: 'secret:read ticks:read' });
  plainToken = await node.token(app);
});
t.teardown(async () => {
  await node?.close();
  await backend?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

function post(pathname: string, body: unknown, token?: string, contentType = 'application/json'): Promise<Response> {
  return request(node.port, pathname, {
    method: 'POST',
    headers: { 'Content-Type': contentType, ...(token !== undefined ? { Authorization: `Bearer ${token}` } : {}) },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

function description(r: Response): string {
  return (JSON.parse(r.body) as { fault: { description: string } }).fault.description;
}

// force_json_validation is on for this gateway: GraphQL bodies, read by the route phase, must still pass.
t.test('a valid query is proxied unchanged to the GraphQL backend (POST JSON, application/graphql, GET)', async (t) => {
  const body = JSON.stringify({
    query: 'query Greet($n: String) { hello(name: $n) }',
    operationName: 'Greet',
    variables: { n: 'gateway' },
  });
  const r = await post('/gql/1', body, plainToken);
  t.equal(r.status, 200, r.body);
  t.same(JSON.parse(r.body), { data: { hello: 'hello gateway' } });
  t.equal(backend.bodies[backend.bodies.length - 1], body, 'the backend received the body byte for byte');

  const g = await post('/gql/1', '{ hello }', plainToken, 'application/graphql');
  t.equal(g.status, 415, 'graphql-http refuses application/graphql itself (415): the gateway checked and forwarded it');
  t.equal(code(g), -1, "the refusal is the backend's, not a gateway fault");
  t.equal(backend.bodies[backend.bodies.length - 1], '{ hello }');

  const access = (): string[] => node.logger.lines.filter((l) => l.event === 'http_access').map((l) => String(l.line));
  await until(() => access().some((l) => l.includes(' 415 ')));
  const lines = access();
  t.match(
    lines[lines.length - 1],
    /"POST \/gql\/1 HTTP\/1\.1" 415 .* graphql=QUERY:-$/,
    'the access log line names the operation (anonymous: -)',
  );
  t.ok(
    lines.some((l) => / 200 .* graphql=QUERY:Greet$/.test(l)),
    'and its name',
  );
  await node.gw.analytics?.flush();
  const events = fs
    .readFileSync(path.join(dir, 'events.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  t.match(
    events.find((e) => e.proxyResponseCode === 200 && e.apiName === 'gql'),
    { graphqlOperationType: 'QUERY', graphqlOperationName: 'Greet' },
    'the analytics event names the operation',
  );
  const get = await node.call(`/gql/1?query=${encodeURIComponent('{ hello(name: "get") }')}`, plainToken, { Accept: 'application/json' });
  t.equal(get.status, 200, get.body);
  t.same(JSON.parse(get.body), { data: { hello: 'hello get' } });
});

t.test("a query that does not parse: 900422 (422) with the parser's message and line:column; nothing reaches the backend", async (t) => {
  const before = backend.bodies.length;
  const r = await post('/gql/1', { query: '{\n  hello(name: "x"\n}' }, plainToken);
  t.equal(r.status, 422);
  t.equal(code(r), 900422);
  t.match(description(r), /^Syntax Error: Expected Name, found "}"\. \(3:1\)$/);
  t.equal(backend.bodies.length, before, 'not forwarded');
  const empty = await post('/gql/1', { notQuery: 1 }, plainToken);
  t.equal(empty.status, 400);
  t.equal(code(empty), 103184, 'no query at all is a malformed request, not a syntax error');
  const broken = await post('/gql/1', '{"query": ', plainToken);
  t.equal(code(broken), 103184);
  t.match(description(broken), /JSON body does not parse/);
});

t.test('a query that parses but does not validate: 103180 (400) listing each error with its position', async (t) => {
  const r = await post('/gql/1', { query: '{ nope\n  user { nameX } }' }, plainToken);
  t.equal(r.status, 400);
  t.equal(code(r), 103180);
  const d = description(r);
  t.match(d, 'Cannot query field "nope" on type "Query". (1:3)');
  t.match(d, 'Field "user" argument "id" of type "ID!" is required, but it was not provided. (2:3)');
  t.match(d, 'Cannot query field "nameX" on type "User". Did you mean "name"? (2:10)');
});

t.test('field scopes: a query needs a scope of every scoped field it selects (900910), by the token the key manager issued', async (t) => {
  const refused = await post('/gql/1', { query: '{ hello secret }' }, plainToken);
  t.equal(refused.status, 403);
  t.equal(code(refused), 900910);
  t.match(refused.headers['www-authenticate'], /error="insufficient_scope", scope="secret:read"/);
  t.match(description(refused), 'the query field secret requires: secret:read');
  const ok = await post('/gql/1', { query: '{ hello secret }' }, readToken);
  t.equal(ok.status, 200, ok.body);
  t.same(JSON.parse(ok.body), { data: { hello: 'hello world', secret: 's3cret' } });
  // The mutation's field wants order:write or order:all; the read token has neither.
  const m = await post('/gql/1', { query: 'mutation { addOrder(item: "tea") }' }, readToken);
  t.equal(code(m), 900910);
  t.match(m.headers['www-authenticate'], /scope="order:write order:all"/);
  const none = await post('/gql/1', { query: '{ hello }' });
  t.equal(code(none), 900902, 'no token: missing credentials, as on any API');
  // Fragments at the top level count as the fields they select.
  const frag = await post('/gql/1', { query: 'query { ...F } fragment F on Query { secret }' }, plainToken);
  t.equal(code(frag), 900910);
});

t.test('depth and complexity limits: 103181 and 103182 (400)', async (t) => {
  const deep = await post('/gql/1', { query: '{ user(id: "1") { friends { friends { friends { name } } } } }' }, plainToken);
  t.equal(deep.status, 400);
  t.equal(code(deep), 103181);
  t.match(description(deep), 'the query is 5 levels deep; this API allows 4');
  const fine = await post('/gql/1', { query: '{ user(id: "1") { friends { friends { name } } } }' }, plainToken);
  t.equal(fine.status, 200, `depth 4 passes: ${fine.body}`);
  t.equal(
    (JSON.parse(fine.body) as { data: { user: { friends: { friends: { name: string }[] }[] } } }).data.user.friends[0]?.friends[0]?.name,
    'user 1.1.1',
  );
  const wide = await post(
    '/gql/1',
    { query: '{ a: hello b: hello c: hello d: hello e: hello f: hello g: hello h: hello i: hello j: hello k: hello l: hello m: hello }' },
    plainToken,
  );
  t.equal(wide.status, 400);
  t.equal(code(wide), 103182);
  t.match(description(wide), "the query's complexity is 13; this API allows 12");
});

t.test("a subscription tier's graphql_max_depth and graphql_max_complexity apply below the API's limits", async (t) => {
  const created = await node.km.manager.createApplication({ name: 'shallow-app', owner: 'admin' });
  const keys = await node.km.manager.generateKeys(created.id, { keyType: 'PRODUCTION' });
  await node.km.manager.addSubscription({ application: created.id, apiContext: '/gql', apiVersion: '1', tier: 'Shallow' });
  const token = await node.token({ consumerKey: keys.consumerKey, consumerSecret: keys.consumerSecret });
  const deep = await post('/gql/1', { query: '{ user(id: "1") { friends { name } } }' }, token);
  t.equal(deep.status, 400);
  t.equal(code(deep), 103181);
  t.match(description(deep), 'the query is 3 levels deep; the subscription tier Shallow allows 2');
  const wide = await post('/gql/1', { query: '{ a: hello b: hello c: hello d: hello }' }, token);
  t.equal(code(wide), 103182);
  t.match(description(wide), 'the subscription tier Shallow allows 3');
  const ok = await post('/gql/1', { query: '{ user(id: "1") { name } }' }, token);
  t.equal(ok.status, 200, ok.body);
  const other = await post('/gql/1', { query: '{ user(id: "1") { friends { name } } }' }, plainToken);
  t.equal(other.status, 200, "another tier keeps the API's limits");
  // Over WebSocket too: a subscribe message carrying a query too deep for the handshake token's tier.
  const s = await openSocket(t, token);
  s.ws.send(JSON.stringify({ id: 'd', type: 'subscribe', payload: { query: '{ user(id: "1") { friends { name } } }' } }));
  t.same(await s.next(), {
    id: 'd',
    type: 'error',
    payload: [{ message: 'the query is 3 levels deep; the subscription tier Shallow allows 2', extensions: { code: 103181 } }],
  });
});

t.test('introspection: refused by default (103183, 403), allowed where the API says so', async (t) => {
  const r = await post('/gql/1', { query: '{ __schema { queryType { name } } }' }, plainToken);
  t.equal(r.status, 403);
  t.equal(code(r), 103183);
  const typename = await post('/gql/1', { query: '{ __typename hello }' }, plainToken);
  t.equal(typename.status, 200, '__typename is not introspection');
  const open = await post('/open/1', { query: '{ __schema { queryType { name } } }' });
  t.equal(open.status, 200, open.body);
  t.same(JSON.parse(open.body), { data: { __schema: { queryType: { name: 'Query' } } } });
});

t.test('a per-field throttling policy: the third query selecting the field in the window gets 900802', async (t) => {
  const statuses: number[] = [];
  for (let i = 0; i < 3; i++) statuses.push((await post('/gql/1', { query: '{ limited }' }, plainToken)).status);
  t.same(statuses, [200, 200, 429]);
  const r = await post('/gql/1', { query: '{ hello limited }' }, plainToken);
  t.equal(code(r), 900802, 'any query selecting the field is counted against it');
  t.ok(r.headers['retry-after'] !== undefined);
  const other = await post('/gql/1', { query: '{ hello }' }, plainToken);
  t.equal(other.status, 200, 'queries without the field are not');
});

t.test('a query above POOL_QUERY_CHARS is analysed in the mediation worker pool, with the faults an inline analysis gives', async (t) => {
  const pool = node.gw.mediation.pool;
  const ran = (): number => pool.submitted.get('graphql') ?? 0;
  const built = buildGraphqlSchema(SDL, 'test');
  if (!built.ok) throw new Error(built.message);
  const schema: GraphqlSchema = built.schema;
  const inline = (query: string): string => {
    const a = analyse(
      schema,
      { query, operationName: undefined },
      { maxDepth: 10, maxComplexity: 1000, maxTokens: 10000, introspection: false },
    );
    return a.ok ? 'ok' : a.message;
  };
  const pad = `# ${'x'.repeat(POOL_QUERY_CHARS)}\n`;
  const small = await post('/big/1', { query: '{ hello }' });
  t.equal(small.status, 200, small.body);
  t.equal(ran(), 0, 'a small query is analysed inline');

  const ok = await post('/big/1', { query: `${pad}{ hello(name: "pool") }` });
  t.equal(ok.status, 200, ok.body);
  t.same(JSON.parse(ok.body), { data: { hello: 'hello pool' } });
  t.equal(ran(), 1, 'the large query went to the pool');

  const syntaxQuery = `${pad}{ hello(name: "a" }`;
  const syntax = await post('/big/1', { query: syntaxQuery });
  t.equal(code(syntax), 900422);
  t.equal(description(syntax), inline(syntaxQuery), "the parser's message and position, as inline");
  t.match(description(syntax), /\(2:\d+\)$/);
  const invalidQuery = `${pad}{ nope hello(x: 1) }`;
  const invalid = await post('/big/1', { query: invalidQuery });
  t.equal(code(invalid), 103180);
  t.equal(description(invalid), inline(invalidQuery), 'each validation error with its position, as inline');
  t.match(description(invalid), /Cannot query field "nope" on type "Query".*\(2:3\)/);
  t.equal(ran(), 3, 'both refusals were analysed in the pool');
});

t.test(
  'GraphQL over HTTP: a mutation by GET is 405 (Allow: POST), a subscription by HTTP 103187, a body over max_query_bytes 413',
  async (t) => {
    const g = await node.call(`/gql/1?query=${encodeURIComponent('mutation { addOrder(item: "x") }')}`, plainToken);
    t.equal(g.status, 405);
    t.equal(code(g), 103185);
    t.equal(g.headers.allow, 'POST');
    const s = await post('/gql/1', { query: 'subscription { ticks(count: 1) }' }, readToken);
    t.equal(code(s), 103187);
    const big = await post('/open/1', { query: `{ hello(name: "${'x'.repeat(300)}") }` });
    t.equal(big.status, 413);
    t.equal(code(big), 103186);
    const op = await post('/gql/1', { query: 'query A { hello } query B { hello }' }, plainToken);
    t.equal(code(op), 103184, 'two operations and no operationName');
    t.match(description(op), 'operationName must name one');
  },
);

t.test('a subscription over WebSocket (graphql-transport-ws) through the gateway: handshake authenticated, events received', async (t) => {
  const url = `ws://${HOST}:${node.port}/gql/1`;
  const refused = await new Promise<number>((resolve, reject) => {
    const ws = new WebSocket(url, 'graphql-transport-ws');
    ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
    ws.once('open', () => reject(new Error('opened without a token')));
    ws.once('error', () => undefined);
  });
  t.equal(refused, 401, 'a handshake without a token is refused (900902)');

  const ws = new WebSocket(url, 'graphql-transport-ws', { headers: { Authorization: `Bearer ${readToken}` } });
  t.teardown(() => ws.terminate());
  const messages: { type: string; id?: string; payload?: unknown }[] = [];
  const done = new Promise<void>((resolve, reject) => {
    ws.on('message', (d: RawData) => {
      const m = JSON.parse(d.toString()) as { type: string; id?: string; payload?: unknown };
      messages.push(m);
      if (m.type === 'connection_ack')
        ws.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: 'subscription { ticks(count: 3) }' } }));
      if (m.type === 'complete') resolve();
    });
    ws.once('error', reject);
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  t.equal(ws.protocol, 'graphql-transport-ws', 'the sub-protocol was negotiated with the backend through the gateway');
  ws.send(JSON.stringify({ type: 'connection_init' }));
  await done;
  t.same(
    messages.map((m) => (m.type === 'next' ? (m.payload as { data: { ticks: number } }).data.ticks : m.type)),
    ['connection_ack', 1, 2, 3, 'complete'],
  );
  t.same(backend.subscriptions, ['subscription { ticks(count: 3) }']);
});

/** Opens a graphql-transport-ws socket through the gateway and waits for connection_ack. */
async function openSocket(
  t: Test,
  token: string | undefined,
  pathname = '/gql/1',
): Promise<{ ws: WebSocket; next(): Promise<{ type: string; id?: string; payload?: unknown }>; closed: Promise<number> }> {
  const ws = new WebSocket(
    `ws://${HOST}:${node.port}${pathname}`,
    'graphql-transport-ws',
    token !== undefined ? { headers: { Authorization: `Bearer ${token}` } } : {},
  );
  t.teardown(() => ws.terminate());
  const queue: { type: string; id?: string; payload?: unknown }[] = [];
  let wake: (() => void) | undefined;
  ws.on('message', (d: RawData) => {
    queue.push(JSON.parse(d.toString()) as { type: string });
    wake?.();
  });
  const closed = new Promise<number>((resolve) => ws.once('close', (c: number) => resolve(c)));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const next = async (): Promise<{ type: string; id?: string; payload?: unknown }> => {
    while (queue.length === 0) await new Promise<void>((r) => (wake = r));
    return queue.shift() as { type: string };
  };
  ws.send(JSON.stringify({ type: 'connection_init' }));
  t.equal((await next()).type, 'connection_ack');
  return { ws, next, closed };
}

t.test(
  'each subscribe message is checked like a query: refused ones get an error message for their id and never reach the backend',
  async (t) => {
    const before = backend.subscriptions.length;
    const s = await openSocket(t, plainToken);
    s.ws.send(JSON.stringify({ id: 'a', type: 'subscribe', payload: { query: 'subscription { ticks(count: 2) }' } }));
    t.same(await s.next(), {
      id: 'a',
      type: 'error',
      payload: [
        { message: 'the access token lacks the scope the subscription field ticks requires: ticks:read', extensions: { code: 900910 } },
      ],
    });
    s.ws.send(JSON.stringify({ id: 'b', type: 'subscribe', payload: { query: 'subscription { ticks(count: 2 }' } }));
    const syntax = await s.next();
    t.equal(syntax.id, 'b');
    t.equal((syntax.payload as { extensions: { code: number } }[])[0]?.extensions.code, 900422);
    t.match((syntax.payload as { message: string }[])[0]?.message, /^Syntax Error: .*\(1:31\)$/);
    s.ws.send(JSON.stringify({ id: 'c', type: 'subscribe', payload: { query: 'subscription { nope }' } }));
    t.equal(((await s.next()).payload as { extensions: { code: number } }[])[0]?.extensions.code, 103180);
    t.equal(backend.subscriptions.length, before, 'no refused subscription reached the backend');
    s.ws.send('not json');
    t.equal(await s.closed, 4400, "a message that is not the protocol's closes the socket with 4400");
  },
);

t.test(
  "subscribe messages are counted against their fields' throttling policies: the third in the window gets an error with 900802",
  async (t) => {
    const before = backend.subscriptions.length;
    const s = await openSocket(t, undefined, '/subs/1');
    /** The message that ends subscription `id`: the backend's complete, or the gateway's error. */
    const end = async (id: string): Promise<{ type: string; id?: string; payload?: unknown }> => {
      for (;;) {
        const m = await s.next();
        if (m.id === id && (m.type === 'complete' || m.type === 'error')) return m;
      }
    };
    const subscribe = (id: string): void =>
      s.ws.send(JSON.stringify({ id, type: 'subscribe', payload: { query: 'subscription { ticks(count: 1) }' } }));
    subscribe('1');
    t.equal((await end('1')).type, 'complete', 'the first subscription ran on the backend');
    subscribe('2');
    t.equal((await end('2')).type, 'complete', 'the second too (the policy allows 2 a minute)');
    subscribe('3');
    const refused = await end('3');
    t.equal(refused.type, 'error');
    t.equal(
      (refused.payload as { extensions: { code: number } }[])[0]?.extensions.code,
      900802,
      'the resource-level throttling code, as an HTTP query selecting the field gets',
    );
    t.equal(backend.subscriptions.length, before + 2, 'the refused subscribe was not forwarded');
    // The socket stays open: a ping still gets its pong from the backend.
    s.ws.send(JSON.stringify({ type: 'ping' }));
    t.equal((await s.next()).type, 'pong');
    // Another tunnel counts against the same field key (the policy is over every caller).
    const other = await openSocket(t, undefined, '/subs/1');
    other.ws.send(JSON.stringify({ id: 'x', type: 'subscribe', payload: { query: 'subscription { ticks(count: 1) }' } }));
    const m = await other.next();
    t.same([m.id, m.type, (m.payload as { extensions: { code: number } }[])[0]?.extensions.code], ['x', 'error', 900802]);
  },
);

t.test('a subscribe message larger than max_query_bytes closes the socket with 1009', async (t) => {
  const s = await openSocket(t, readToken);
  s.ws.send(
    JSON.stringify({ id: 'big', type: 'subscribe', payload: { query: `subscription { ticks(count: 1) } # ${'x'.repeat(70000)}` } }),
  );
  t.equal(await s.closed, 1009);
});

/** A masked client frame (RFC 6455 §5.3) with a payload under 126 bytes. */
function maskedFrame(opcode: number, payload: string): Buffer {
  const p = Buffer.from(payload);
  const key = Buffer.from([0x11, 0x22, 0x33, 0x44]);
  const masked = Buffer.from(p.map((b, i) => b ^ (key[i % 4] as number)));
  return Buffer.concat([Buffer.from([0x80 | opcode, 0x80 | p.length]), key, masked]);
}

t.test('a frame the per-frame limit refuses: the frames before it in the same read are judged too, never forwarded unread', async (t) => {
  const created = await node.km.manager.createApplication({ name: 'tight-app', owner: 'admin' });
  const keys = await node.km.manager.generateKeys(created.id, { keyType: 'PRODUCTION' });
  await node.km.manager.addSubscription({ application: created.id, apiContext: '/gql', apiVersion: '1', tier: 'Tight' });
  const token = await node.token({ consumerKey: keys.consumerKey, consumerSecret: keys.consumerSecret });
  const before = backend.subscriptions.length;
  // The handshake is call 1 of the tier's 3, connection_init call 2.
  const s = await openSocket(t, token);
  // One write: a subscribe the token has no scope for (call 3), then a ping (call 4: refused, 1008).
  const raw = (s.ws as unknown as { _socket: import('node:net').Socket })._socket;
  raw.write(
    Buffer.concat([
      maskedFrame(1, JSON.stringify({ id: 'x', type: 'subscribe', payload: { query: 'subscription { ticks(count: 1) }' } })),
      maskedFrame(9, ''),
    ]),
  );
  t.equal(await s.closed, 1008, 'closed by the per-frame limit');
  t.equal(backend.subscriptions.length, before, 'the subscribe before the refused frame was judged (no scope) and not forwarded');
});
