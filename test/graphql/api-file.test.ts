/**
 * GraphQL API files (docs/apis.md, docs/graphql.md): the [graphql] table's schema is read beside the API
 * file and built when the API deploys; an SDL error, a schema outside the API file's directory, an
 * [[operations]] field the schema lacks, a missing [graphql] table and GraphQL tables on another API type
 * each refuse the API with API_VALUE or API_REQUIRED and the line of the key. A valid file gets the
 * defaults (depth 10, complexity 1000, 64 KiB, introspection off) and one resource, /* by GET and POST.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import t from 'tap';
import { parseApiText } from '../../lib/gateway/apis';
import { SDL } from './backend';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-gql-file-'));
t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
fs.writeFileSync(path.join(dir, 'schema.graphql'), SDL);
fs.writeFileSync(path.join(dir, 'broken.graphql'), 'type Query {\n  hello: String\n  nope(: Int\n}\n');
const file = path.join(dir, 'apis', 'orders.toml');
fs.mkdirSync(path.dirname(file));
fs.writeFileSync(path.join(dir, 'apis', 'schema.graphql'), SDL);

const head =
  'name = "Orders"\ncontext = "/orders"\nversion = "1"\ntype = "GRAPHQL"\n[endpoints]\nproduction = "http://127.0.0.1:9/graphql"\n';

function errors(text: string): { code: string; line: number; message: string }[] {
  const r = parseApiText(text, file);
  t.equal(r.api, undefined, 'refused');
  return r.diagnostics.filter((d) => d.level === 'error').map((d) => ({ code: d.code, line: d.line, message: d.message }));
}

t.test('a valid GraphQL API file: defaults, the synthesized resource, the rules of its operations', async (t) => {
  const r = parseApiText(
    `${head}[graphql]\nschema = "schema.graphql"\n[[operations]]\ntype = "MUTATION"\nname = "addOrder"\nscopes = ["order:write"]\n`,
    file,
  );
  t.same(
    r.diagnostics.filter((d) => d.level === 'error'),
    [],
  );
  const g = r.api?.graphql;
  t.ok(g !== undefined);
  t.same(g?.limits, { maxDepth: 10, maxComplexity: 1000, maxTokens: 10000, introspection: false });
  t.equal(g?.maxQueryBytes, 65536);
  t.same(
    r.api?.resources.map((x) => [x.path, x.methods]),
    [['/*', ['GET', 'POST']]],
  );
  t.same([...(g?.rules.keys() ?? [])], ['MUTATION addOrder']);
});

t.test(
  'refusals: SDL error with its position, a schema outside the directory, an unknown field, no [graphql], tables on an HTTP API',
  async (t) => {
    fs.copyFileSync(path.join(dir, 'broken.graphql'), path.join(dir, 'apis', 'broken.graphql'));
    const sdl = errors(`${head}[graphql]\nschema = "broken.graphql"\n`);
    t.equal(sdl[0]?.code, 'API_VALUE');
    t.match(sdl[0]?.message, /is not a valid GraphQL schema: Syntax Error: Expected Name, found "\:"\. \(3:8\)/);
    t.equal(sdl[0]?.line, 8, 'the line of the schema key');
    const outside = errors(`${head}[graphql]\nschema = "../schema.graphql"\n`);
    t.match(outside[0]?.message, /leaves the API file's directory/);
    const missing = errors(`${head}[graphql]\nschema = "none.graphql"\n`);
    t.match(missing[0]?.message, /cannot be read/);
    const unknown = errors(`${head}[graphql]\nschema = "schema.graphql"\n[[operations]]\ntype = "QUERY"\nname = "helo"\n`);
    t.match(unknown[0]?.message, 'the schema has no query field "helo"; did you mean "hello"?');
    t.equal(unknown[0]?.line, 11);
    const none = errors(head);
    t.same(
      none.map((e) => e.code),
      ['API_REQUIRED'],
    );
    t.match(none[0]?.message, 'a GraphQL API needs a [graphql] table');
    const http = errors(
      head.replace('type = "GRAPHQL"\n', '') + '[graphql]\nschema = "schema.graphql"\n[[resources]]\npath = "/*"\nmethods = ["GET"]\n',
    );
    t.match(http[0]?.message, 'a [graphql] table is only for type = "GRAPHQL"');
    const mediated = errors(`${head}[graphql]\nschema = "schema.graphql"\n[mediation]\nrequest_format = "xml"\n`);
    t.match(mediated[0]?.message, 'a GraphQL API has no [mediation]');
  },
);

t.test(
  'the analysis cache: a repeated query and operationName get the same answer without a new analysis; long queries are not kept',
  async (t) => {
    const g = parseApiText(`${head}[graphql]\nschema = "schema.graphql"\nmax_depth = 2\n`, file).api?.graphql;
    if (g === undefined) return t.fail('not deployed');
    const q = { query: '{ user(id: "1") { name } }', operationName: undefined };
    const a = g.cache.analyse(g.schema, q, g.limits);
    t.equal(a.ok, true);
    t.equal(g.cache.analyse(g.schema, { ...q }, g.limits), a, 'the same answer object: not analysed again');
    const deep = g.cache.analyse(g.schema, { query: '{ user(id: "1") { friends { name } } }', operationName: undefined }, g.limits);
    t.equal(deep.ok ? '' : deep.kind, 'depth', 'refusals are kept too');
    t.equal(g.cache.size, 2);
    t.not(g.cache.analyse(g.schema, { query: q.query, operationName: 'X' }, g.limits), a, 'operationName is part of the key');
    const long = { query: `{ hello } # ${'x'.repeat(5000)}`, operationName: undefined };
    g.cache.analyse(g.schema, long, g.limits);
    t.equal(g.cache.size, 3, 'a query over 4,096 characters is analysed but not kept');
  },
);
