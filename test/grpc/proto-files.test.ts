/**
 * The [grpc] table of gRPC API files (docs/grpc.md): a .proto syntax error refuses the API with API_PROTO,
 * naming the .proto file and its line, at start-up (the gateway's deployed states) as in `apis check`;
 * a proto that leaves the API file's directory, a resource naming no method of the protos, an endpoint with a
 * path, and a [grpc] table on another type are refused too; an API without resources serves every method.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import t from 'tap';
import { parseApiText } from '../../lib/gateway/apis';
import { embedded } from '../embed/helpers';
import { PROTO } from './helpers';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-proto-'));
t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
fs.writeFileSync(path.join(dir, 'route_guide.proto'), PROTO);
fs.writeFileSync(path.join(dir, 'bad.proto'), 'syntax = "proto3";\npackage bad;\nservice S {\n  rpc M(A) returns (B)\n}\n');

const apiText = (proto: string, extra = ''): string =>
  `name = "g"\ncontext = "/g"\nversion = "1"\ntype = "GRPC"\nauth = "none"\n[grpc]\nproto = ["${proto}"]\n[endpoints]\nproduction = "http://127.0.0.1:50051"\n${extra}`;

t.test('a .proto syntax error: API_PROTO naming the file and the line', async (t) => {
  const file = path.join(dir, 'bad.toml');
  const r = parseApiText(apiText('bad.proto'), file);
  t.equal(r.api, undefined, 'the API is refused');
  const d = r.diagnostics.find((x) => x.code === 'API_PROTO');
  t.ok(d, JSON.stringify(r.diagnostics));
  t.match(d?.message, `${path.join(dir, 'bad.proto')}:5:`, 'the .proto file and line of the error');
  t.match(d?.message, /illegal token '}'/);
  t.equal(d?.field, 'grpc.proto');
});

t.test('at start-up: the gateway does not deploy the API and says why', async (t) => {
  const apis = path.join(dir, 'apis');
  fs.mkdirSync(apis, { recursive: true });
  fs.copyFileSync(path.join(dir, 'bad.proto'), path.join(apis, 'bad.proto'));
  fs.writeFileSync(path.join(apis, 'bad.toml'), apiText('bad.proto'));
  // No `apis` option: the gateway reads its apis/ directory, as a node does at start.
  const e = embedded([], { apis: undefined, watch: false }, `[throughway]\napis_dir = "${apis}"\n`);
  t.teardown(() => e.gw.close());
  const state = e.gw.states().find((s) => s.file.endsWith('bad.toml'));
  t.equal(state?.status, 'invalid');
  t.match(state?.diagnostics.map((d) => `${d.code} ${d.message}`).join('\n'), /API_PROTO .*bad\.proto:5: illegal token/);
  t.ok(e.gw.deployed().every((a) => a.name !== 'g'));
});

t.test('imports may not leave the directory; resources must be methods of the protos; endpoints are origins', async (t) => {
  const inner = path.join(dir, 'inner');
  fs.mkdirSync(inner, { recursive: true });
  fs.writeFileSync(path.join(inner, 'up.proto'), 'syntax = "proto3";\nimport "../route_guide.proto";\n');
  const up = parseApiText(apiText('up.proto'), path.join(inner, 'api.toml'));
  t.match(up.diagnostics.find((d) => d.code === 'API_PROTO')?.message, /leaves the API file's directory/);

  const wrong = parseApiText(
    apiText('route_guide.proto', '[[resources]]\npath = "/routeguide.RouteGuide/GetFeatures"\n'),
    path.join(dir, 'a.toml'),
  );
  t.match(
    wrong.diagnostics.find((d) => d.code === 'API_VALUE')?.message,
    /no method "\/routeguide.RouteGuide\/GetFeatures"; did you mean "\/routeguide.RouteGuide\/GetFeature"/,
  );

  const based = parseApiText(apiText('route_guide.proto').replace('50051"', '50051/base"'), path.join(dir, 'a.toml'));
  t.match(based.diagnostics.find((d) => d.code === 'API_VALUE')?.message, /origin without a path/);

  const http = parseApiText(apiText('route_guide.proto').replace('type = "GRPC"\n', ''), path.join(dir, 'a.toml'));
  t.match(http.diagnostics.map((d) => d.message).join('\n'), /a \[grpc\] table is only for type = "GRPC"/);
});

t.test('no [[resources]]: every method of the protos is a resource, by POST', async (t) => {
  const r = parseApiText(apiText('route_guide.proto'), path.join(dir, 'a.toml'));
  t.same(
    r.diagnostics.filter((d) => d.level === 'error'),
    [],
  );
  t.same(
    r.api?.resources.map((x) => `${x.methods.join(',')} ${x.path}`),
    [
      'POST /routeguide.RouteGuide/GetFeature',
      'POST /routeguide.RouteGuide/ListFeatures',
      'POST /routeguide.RouteGuide/RecordRoute',
      'POST /routeguide.RouteGuide/RouteChat',
      'POST /routeguide.RouteGuide/Slow',
      'POST /routeguide.RouteGuide/Blob',
      'POST /routeguide.RouteGuide/Limited',
      'POST /routeguide.RouteGuide/Secret',
      'POST /routeguide.Admin/Reset',
    ],
  );
  t.same(
    r.api?.grpc?.services.map((s) => `${s.name}: ${s.methods.map((m) => m.kind).join(' ')}`),
    ['routeguide.RouteGuide: unary server_streaming client_streaming bidi_streaming unary unary unary unary', 'routeguide.Admin: unary'],
    'with their call kinds',
  );
});

t.test('texts given with their .proto files (a gateway-worker): nothing read from disk, served files named as served', async (t) => {
  const file = 'http://127.0.0.1:9763/apis/t/acme.test/g.toml';
  const types = 'syntax = "proto3";\npackage shared;\nmessage P { int32 x = 1; }\n';
  const svc = 'syntax = "proto3";\nimport "common/types.proto";\npackage g;\nservice G { rpc M(shared.P) returns (shared.P); }\n';
  const ok = parseApiText(apiText('g.proto'), file, {}, undefined, undefined, {
    protos: [
      { file: 'g.proto', text: svc },
      { file: 'common/types.proto', text: types },
    ],
  });
  t.same(
    ok.diagnostics.filter((d) => d.level === 'error'),
    [],
  );
  t.same([...(ok.api?.grpc?.methods.keys() ?? [])], ['/g.G/M'], 'the method of the served file, its import served too');

  const missing = parseApiText(apiText('g.proto'), file, {}, undefined, undefined, { protos: [{ file: 'g.proto', text: svc }] });
  t.match(
    missing.diagnostics.find((d) => d.code === 'API_PROTO')?.message,
    'http://127.0.0.1:9763/apis/t/acme.test/common/types.proto: it was not served with the API file',
  );
  // The worker's own disk is never read: route_guide.proto exists here, but was not served.
  const disk = parseApiText(apiText(path.join(dir, 'route_guide.proto')), file, {}, undefined, undefined, null);
  t.match(disk.diagnostics.find((d) => d.code === 'API_PROTO')?.message, /leaves the API file's directory|was not served/);
  const bad = parseApiText(apiText('bad.proto'), file, {}, undefined, undefined, {
    protos: [{ file: 'bad.proto', text: fs.readFileSync(path.join(dir, 'bad.proto'), 'utf8') }],
  });
  t.match(
    bad.diagnostics.find((d) => d.code === 'API_PROTO')?.message,
    'http://127.0.0.1:9763/apis/t/acme.test/bad.proto:5: illegal token',
  );
  const up = parseApiText(apiText('../x.proto'), file, {}, undefined, undefined, { protos: [{ file: '../x.proto', text: types }] });
  t.match(up.diagnostics.find((d) => d.code === 'API_PROTO')?.message, /leaves the API file's directory/);
});

t.test('a saved .proto file alone redeploys its API (hot deploy)', async (t) => {
  const apis = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-proto-hot-'));
  t.teardown(() => fs.rmSync(apis, { recursive: true, force: true }));
  fs.writeFileSync(path.join(apis, 'route_guide.proto'), PROTO);
  fs.writeFileSync(path.join(apis, 'rg.toml'), apiText('route_guide.proto'));
  const e = embedded([], { apis: undefined, watch: false }, `[throughway]\napis_dir = "${apis}"\n`);
  t.teardown(() => e.gw.close());
  // The services the gateway routes to the API (lib/gateway/grpc.ts).
  const serves = (s: string): boolean => e.gw.grpc.prefixOf(s) !== undefined;
  t.ok(serves('routeguide.Admin'));
  t.notOk(serves('routeguide.Ops'));
  fs.writeFileSync(path.join(apis, 'route_guide.proto'), PROTO.replace('service Admin {', 'service Ops {'));
  e.gw.reload();
  t.notOk(serves('routeguide.Admin'), 'the service renamed in the .proto file is no longer served');
  t.ok(serves('routeguide.Ops'), 'its new name is');
  // A syntax error in the saved .proto: the API stays as it was (API_KEPT_PREVIOUS), then follows the fix.
  fs.writeFileSync(path.join(apis, 'route_guide.proto'), 'syntax = "proto3";\nservice {\n');
  e.gw.reload();
  t.ok(serves('routeguide.Ops'), 'kept while the .proto is invalid');
  t.equal(e.gw.states().find((s) => s.file.endsWith('rg.toml'))?.status, 'kept-previous');
  fs.writeFileSync(path.join(apis, 'route_guide.proto'), PROTO);
  e.gw.reload();
  t.ok(serves('routeguide.Admin'), 'the fixed .proto file deploys again');
});
