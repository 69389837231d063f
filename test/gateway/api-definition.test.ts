/**
 * An API file's `definition` (its OpenAPI document, docs/apis.md): read beside the API file as JSON or
 * YAML; refused with API_DEFINITION when missing, too large, not JSON or YAML, or not OpenAPI 3; refused
 * with API_DEFINITION_PATH when it leaves the API file's directory (.., an absolute path, a link); never
 * read for API texts given without their files (a gateway-worker's).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import t, { type Test } from 'tap';
import { parseApiText } from '../../lib/gateway/apis';
import { MAX_DEFINITION_BYTES } from '../../lib/gateway/openapi-file';

const DOC = JSON.stringify({
  openapi: '3.0.3',
  info: { title: 'Orders', version: '1' },
  paths: { '/orders': { get: { responses: { 200: { description: 'ok' } } } } },
});
const YAML_DOC =
  'openapi: 3.1.0\ninfo:\n  title: Orders\n  version: "1"\npaths:\n  /orders:\n    get:\n      responses:\n        "200":\n          description: ok\n';

const api = (definition: string): string =>
  `name = "Orders"\ncontext = "/orders"\nversion = "1"\nauth = "none"\ndefinition = ${JSON.stringify(definition)}\n[endpoints]\nproduction = "http://127.0.0.1:9/v1"\n[[resources]]\npath = "/orders"\nmethods = ["GET"]\n`;

function setup(t: Test): { apis: string; root: string } {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'throughway-def-'));
  t.teardown(() => fs.rmSync(root, { recursive: true, force: true }));
  const apis = path.join(root, 'apis');
  fs.mkdirSync(path.join(apis, 'docs'), { recursive: true });
  fs.writeFileSync(path.join(apis, 'orders.openapi.json'), DOC);
  fs.writeFileSync(path.join(apis, 'docs', 'orders.yaml'), YAML_DOC);
  fs.writeFileSync(path.join(root, 'outside.json'), DOC);
  return { apis, root };
}

const codes = (r: ReturnType<typeof parseApiText>): string[] =>
  r.diagnostics.filter((d) => d.level === 'error').map((d) => `${d.code} ${d.field} @${d.line}`);

t.test('a JSON or YAML OpenAPI 3 document beside the API file is accepted', async (t) => {
  const { apis } = setup(t);
  const file = path.join(apis, 'orders.toml');
  const json = parseApiText(api('orders.openapi.json'), file);
  t.same(codes(json), []);
  t.equal(json.api?.definition, fs.realpathSync(path.join(apis, 'orders.openapi.json')), 'the real path is kept');
  const yaml = parseApiText(api('docs/orders.yaml'), file);
  t.same(codes(yaml), [], 'YAML in a subdirectory');
  t.equal(yaml.api?.definition, fs.realpathSync(path.join(apis, 'docs', 'orders.yaml')));
  const none = parseApiText(api('x').replace(/^definition = .*\n/m, ''), file);
  t.equal(none.api?.definition, undefined, 'no key: no document');
});

t.test('a document that cannot be used refuses the API with API_DEFINITION', async (t) => {
  const { apis } = setup(t);
  const file = path.join(apis, 'orders.toml');
  const write = (name: string, text: string | Buffer): string => {
    fs.writeFileSync(path.join(apis, name), text);
    return name;
  };
  const cases: [string, string, RegExp][] = [
    ['missing', 'nope.json', /cannot be read/],
    ['a directory', 'docs', /not a file/],
    ['too large', write('big.json', Buffer.alloc(MAX_DEFINITION_BYTES + 1, 0x20)), /larger than 2097152 bytes/],
    ['not JSON', write('bad.json', '{"openapi": "3.0.0",'), /is not JSON/],
    ['not YAML', write('bad.yaml', 'openapi: [3\n  : :\n'), /is not JSON or YAML/],
    [
      'Swagger 2.0',
      write('swagger.json', JSON.stringify({ swagger: '2.0', info: {}, paths: {} })),
      /"openapi" field is null, not "3\.x\.y"/,
    ],
    ['OpenAPI 2', write('v2.yaml', 'openapi: "2.0"\n'), /"openapi" field is "2\.0"/],
    ['an array', write('list.json', '[1, 2]'), /not an object/],
    ['paths not an object', write('paths.json', JSON.stringify({ openapi: '3.0.0', paths: [] })), /"paths" field is not an object/],
  ];
  for (const [what, name, message] of cases) {
    const r = parseApiText(api(name), file);
    t.equal(r.api, undefined, `${what}: refused`);
    t.same(codes(r), ['API_DEFINITION definition @5'], `${what}: API_DEFINITION on the definition line`);
    t.match(r.diagnostics[0]?.message, message, what);
  }
});

t.test("a path that leaves the API file's directory is refused with API_DEFINITION_PATH", async (t) => {
  const { apis, root } = setup(t);
  const file = path.join(apis, 'orders.toml');
  fs.symlinkSync(path.join(root, 'outside.json'), path.join(apis, 'link.json'));
  fs.symlinkSync(root, path.join(apis, 'up'));
  for (const name of [
    '../outside.json',
    path.join(root, 'outside.json'),
    'docs/../../outside.json',
    'link.json',
    'up/outside.json',
    '/etc/passwd',
    '../nothing-here.json',
    '.',
  ]) {
    const r = parseApiText(api(name), file);
    t.equal(r.api, undefined, `${name}: refused`);
    t.same(codes(r), ['API_DEFINITION_PATH definition @5'], `${name}: API_DEFINITION_PATH`);
    t.match(r.diagnostics[0]?.message, /leaves the API file's directory/);
  }
  const inside = parseApiText(api(path.join(apis, 'orders.openapi.json')), file);
  t.same(codes(inside), [], 'an absolute path inside the directory is fine');
});

t.test('API texts given without their files never read the document', async (t) => {
  const r = parseApiText(api('../../../../etc/passwd'), 'http://control-plane/orders.toml', {}, undefined, undefined, null);
  t.same(codes(r), [], 'a gateway-worker deploys the API');
  t.equal(r.api?.definition, undefined);
});
