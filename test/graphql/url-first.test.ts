/**
 * One reading of a GraphQL request (docs/graphql.md "One reading", fault 103188): the gateway forwards a
 * request unchanged, so whatever a backend could read otherwise than the gateway judged it is refused.
 * The backend here reads the way express-graphql and its kin do: the URL's `query` and
 * `operationName` before the body's, the first of a repeated parameter (URLSearchParams.get), the first
 * of a JSON key given twice. Its `/gqlother` flavour takes the last of a repeated parameter and, on a
 * GET, a body's query before the URL's. Each case shows the field scope, the mutation scope,
 * introspection or the depth limit cannot be walked around: the backend runs nothing.
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import type * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import t from 'tap';
import type { Test } from 'tap';
import { buildSchema, graphql } from 'graphql';
import { api, code, startNode, type Node } from '../security/helpers';
import { request, type Response } from '../gateway/helpers';
import { SDL } from './backend';

/** The first value of a top-level string key in a JSON text, as a first-wins parser reads it. */
function firstKey(body: string, name: string): string | undefined {
  const m = new RegExp(`"${name}"\\s*:\\s*("(?:[^"\\\\]|\\\\.)*")`).exec(body);
  return m === null ? undefined : (JSON.parse(m[1] as string) as string);
}

interface UrlFirstBackend {
  readonly port: number;
  /** The queries it ran, in order. */
  readonly ran: string[];
  close(): Promise<void>;
}

async function urlFirstBackend(): Promise<UrlFirstBackend> {
  const schema = buildSchema(SDL);
  const root = {
    hello: () => 'hello world',
    secret: () => 's3cret',
    user: ({ id }: { id: string }) => ({ id, name: `user ${id}`, friends: [] }),
    addOrder: ({ item }: { item: string }) => `ordered ${item}`,
  };
  const ran: string[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      const target = req.url ?? '/';
      const other = target.startsWith('/gqlother');
      const url = new URLSearchParams(target.split('?')[1] ?? '');
      const fromUrl = (n: string): string | undefined => (other ? url.getAll(n).at(-1) : (url.get(n) ?? undefined));
      const graphqlBody = (req.headers['content-type'] ?? '').startsWith('application/graphql');
      const fromBody = (n: string): string | undefined => (graphqlBody ? (n === 'query' ? body : undefined) : firstKey(body, n));
      const read = (n: string): string | undefined =>
        other && req.method === 'GET' ? (fromBody(n) ?? fromUrl(n)) : (fromUrl(n) ?? fromBody(n));
      const query = read('query') ?? '';
      ran.push(query);
      void graphql({ schema, source: query, rootValue: root, operationName: read('operationName') }).then((result) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(result));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    port: (server.address() as net.AddressInfo).port,
    ran,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

let node: Node;
let backend: UrlFirstBackend;
let dir: string;
let token: string;

t.before(async () => {
  backend = await urlFirstBackend();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-gql-url-'));
  const schema = path.join(dir, 'schema.graphql');
  fs.writeFileSync(schema, SDL);
  const operations = [
    { type: 'QUERY', name: 'secret', scopes: ['secret:read'] },
    { type: 'MUTATION', name: 'addOrder', scopes: ['order:write'] },
  ];
  const gql = (name: string): Record<string, unknown> =>
    api(name, { type: 'GRAPHQL', graphql: { schema, max_depth: 3 }, operations }, [], backend.port);
  node = await startNode(() => [gql('gqlfirst'), gql('gqlother')], '', { scopes: ['secret:read', 'order:write'] });
  const app = await node.app('url-app', { subscribe: ['gqlfirst', 'gqlother'] });
  token = await node.token(app);
});
t.teardown(async () => {
  await node?.close();
  await backend?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const SECRET = '{ secret }';
const MUTATION = 'mutation { addOrder(item: "tea") }';
const INTROSPECTION = '{ __schema { queryType { name } } }';
const DEEP = '{ user(id: "1") { friends { friends { name } } } }';

function send(pathname: string, o: { method?: string; body?: string; contentType?: string } = {}): Promise<Response> {
  const headers: Record<string, string> = { Authorization: `Bearer ${token}` };
  // Content-Length set: node's client frames no body of a GET by itself.
  if (o.body !== undefined)
    Object.assign(headers, { 'Content-Type': o.contentType ?? 'application/json', 'Content-Length': String(Buffer.byteLength(o.body)) });
  return request(node.port, pathname, {
    method: o.method ?? (o.body === undefined ? 'GET' : 'POST'),
    headers,
    ...(o.body !== undefined ? { body: o.body } : {}),
  });
}

/** The fault's description, or the whole body when it is no fault (a backend's answer). */
function description(r: Response): string {
  return (JSON.parse(r.body) as { fault?: { description: string } }).fault?.description ?? r.body;
}

/** The call is refused with 103188 and the backend ran nothing. */
async function refused(t: Test, r: Promise<Response>, what: string, match?: string): Promise<void> {
  const before = backend.ran.length;
  const res = await r;
  t.equal(res.status, 400, `${what}: ${res.body}`);
  t.equal(code(res), 103188, what);
  if (match !== undefined) t.match(description(res), match, what);
  t.same(backend.ran.slice(before), [], `${what}: the backend ran nothing`);
}

const q = encodeURIComponent;

t.test('the checks the URL would walk around are in force through the body (the control case)', async (t) => {
  const ok = await send('/gqlfirst/1?debug=1', { body: JSON.stringify({ query: '{ hello }' }) });
  t.equal(ok.status, 200, ok.body);
  t.same(
    JSON.parse(ok.body),
    { data: { hello: 'hello world' } },
    'a parameter of another name in the URL of a POST is no GraphQL parameter',
  );
  t.equal(code(await send('/gqlfirst/1', { body: JSON.stringify({ query: SECRET }) })), 900910);
  t.equal(code(await send('/gqlfirst/1', { body: JSON.stringify({ query: MUTATION }) })), 900910);
  t.equal(code(await send('/gqlfirst/1', { body: JSON.stringify({ query: INTROSPECTION }) })), 103183);
  t.equal(code(await send('/gqlfirst/1', { body: JSON.stringify({ query: DEEP }) })), 103181);
  const get = await send(`/gqlfirst/1?query=${q('query A { hello } query B { secret }')}&operationName=A`);
  t.equal(get.status, 200, `a GET with each parameter once: ${get.body}`);
});

t.test('a POST whose URL carries query, operationName, variables or extensions: 103188, whatever the body says', async (t) => {
  const body = JSON.stringify({ query: '{ hello }' });
  await refused(
    t,
    send(`/gqlfirst/1?query=${q(SECRET)}`, { body }),
    'a field scope',
    'a POST request carries its GraphQL parameters in the body only; the URL has `query`',
  );
  await refused(t, send(`/gqlfirst/1?query=${q(MUTATION)}`, { body }), 'a mutation scope');
  await refused(t, send(`/gqlfirst/1?query=${q(INTROSPECTION)}`, { body }), 'introspection');
  await refused(t, send(`/gqlfirst/1?query=${q(DEEP)}`, { body }), 'the depth limit');
  await refused(
    t,
    send(`/gqlfirst/1?query=${q(SECRET)}`, { body: '{ hello }', contentType: 'application/graphql' }),
    'an application/graphql body',
  );
  const two = JSON.stringify({ query: 'query A { hello } query B { secret }', operationName: 'A' });
  await refused(t, send('/gqlfirst/1?operationName=B', { body: two }), 'operationName in the URL', '`operationName`');
  await refused(t, send(`/gqlfirst/1?variables=${q('{}')}`, { body }), 'variables in the URL');
  await refused(t, send('/gqlfirst/1?extensions=%7B%7D', { body }), 'extensions in the URL');
  await refused(
    t,
    send(`/gqlfirst/1?%71uery=${q(SECRET)}`, { body }),
    'the name percent-encoded',
    'spells the GraphQL parameter `query` as `%71uery`',
  );
  await refused(t, send(`/gqlfirst/1?Query=${q(SECRET)}`, { body }), 'the name in another case');
  await refused(t, send(`/gqlfirst/1?query[]=${q(SECRET)}`, { body }), 'the name with brackets (qs reads query[] as query)');
});

t.test('a GET whose query string carries a parameter twice, spelled otherwise or after a `;`: 103188', async (t) => {
  await refused(
    t,
    send(`/gqlother/1?query=${q('{ hello }')}&query=${q(SECRET)}`),
    'a repeated query (the backend takes the last)',
    'carries `query` more than once',
  );
  await refused(
    t,
    send(`/gqlfirst/1?%71uery=${q(SECRET)}&query=${q('{ hello }')}`),
    'an encoded name before the plain one (the backend takes the first)',
  );
  await refused(
    t,
    send(`/gqlfirst/1?query=${q('query A { hello } query B { secret }')}&operationName=A&operationName=B`),
    'a repeated operationName',
  );
  await refused(t, send(`/gqlother/1?query=${q('{ hello }')}&query=${q(MUTATION)}`), 'a mutation behind a query');
  await refused(t, send(`/gqlfirst/1?query=${q('{ hello }')};query=${q(INTROSPECTION)}`), 'a parameter after a `;`', 'after a `;`');
});

t.test("a GET with a body: 103188 (a backend may read the body's query)", async (t) => {
  await refused(
    t,
    send(`/gqlother/1?query=${q('{ hello }')}`, { method: 'GET', body: JSON.stringify({ query: SECRET }) }),
    'a body on a GET',
    'in the URL only, and no body',
  );
});

t.test('a JSON body with a key twice in one object: 103188, decoded keys compared', async (t) => {
  await refused(
    t,
    send('/gqlfirst/1', { body: `{"query":${JSON.stringify(SECRET)},"query":"{ hello }"}` }),
    'query twice (the backend keeps the first)',
    'the key "query" twice',
  );
  await refused(
    t,
    send('/gqlfirst/1', { body: `{"query":${JSON.stringify(DEEP)},"\\u0071uery":"{ hello }"}` }),
    'query twice, once escaped',
  );
  const ops = 'query A { hello } query B { secret }';
  await refused(
    t,
    send('/gqlfirst/1', { body: `{"query":${JSON.stringify(ops)},"operationName":"B","operationName":"A"}` }),
    'operationName twice',
  );
  await refused(
    t,
    send('/gqlfirst/1', { body: '{"query":"{ hello }","variables":{"a":1,"a":2}}' }),
    'a key twice in a nested object',
    'the key "a" twice',
  );
  const same = await send('/gqlfirst/1', { body: '{"query":"{ hello }","variables":{"query":1},"extensions":{"a":{"a":1}}}' });
  t.equal(same.status, 200, `the same key in different objects is no repetition: ${same.body}`);
});

t.test('a charset other than UTF-8: 103188; a batch (JSON array): 103184', async (t) => {
  await refused(
    t,
    send('/gqlfirst/1', { body: JSON.stringify({ query: '{ hello }' }), contentType: 'application/json; charset=utf-16le' }),
    'charset=utf-16le',
    'may read it as utf-16le',
  );
  const utf8 = await send('/gqlfirst/1', {
    body: JSON.stringify({ query: '{ hello }' }),
    contentType: 'application/json; charset="UTF-8"',
  });
  t.equal(utf8.status, 200, utf8.body);
  const before = backend.ran.length;
  const batch = await send('/gqlfirst/1', { body: JSON.stringify([{ query: '{ hello }' }, { query: SECRET }]) });
  t.equal(code(batch), 103184, 'batches are not accepted');
  t.equal(backend.ran.length, before);
});
