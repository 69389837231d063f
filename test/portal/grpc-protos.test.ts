/**
 * A gRPC API's .proto files through the admin API's api-files routes (docs/grpc.md, "The .proto files in
 * the publisher"), over HTTP on a started node with h2c and a real grpc-js backend: listed with the methods
 * they declare; an upload with a syntax error answers the file name and line and writes nothing; names that
 * leave the folder, are not .proto, too many or too large files are refused (API_PROTO_UPLOAD); an upload
 * adds the file beside the API file and names it in `[grpc] proto`; a replaced .proto file is hot-deployed
 * (a grpc-js client sees its service renamed); a delete removes it; a tenant's gRPC API is created with its
 * .proto in the tenant's folder, moves with it to PUBLISHED, and another tenant's admin gets 404 on each route.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import t from 'tap';
import { startTestNode } from '../observability/node-helpers';
import { basic, json } from '../keymanager/helpers';
import { grpcBackend, loadDefinition, PROTO, unary } from '../grpc/helpers';
import { ADMIN, PORTAL_TOML, until } from './helpers';

type Any = any;

const api = (port: number, pkg = 'routeguide'): string => `name = "RouteGuide"
context = "/${pkg}"
version = "1.0.0"
type = "GRPC"
auth = "none"
# the .proto files beside this file
[grpc]
proto = ["route_guide.proto"]
[endpoints]
production = "http://127.0.0.1:${port}"
`;

const EXTRA = 'syntax = "proto3";\npackage extra;\nservice Extra {\n  rpc Ping(Empty) returns (Empty);\n}\nmessage Empty {}\n';
const BAD = 'syntax = "proto3";\npackage bad;\nservice S {\n  rpc M(A) returns (B)\n}\n';

t.test('the .proto files of a gRPC API through /admin/v1/api-files/{id}/protos', async (t) => {
  const dir0 = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-protos-'));
  t.teardown(() => fs.rmSync(dir0, { recursive: true, force: true }));
  fs.writeFileSync(path.join(dir0, 'route_guide.proto'), PROTO);
  const backend = await grpcBackend(dir0);
  t.teardown(() => backend.close());
  const node = await startTestNode(
    `${PORTAL_TOML}[throughway.http2]\nh2c = true\n`,
    { routeguide: api(backend.port) },
    {
      'apis/route_guide.proto': PROTO,
    },
  );
  t.teardown(() => node.close());
  const base = `http://127.0.0.1:${node.mgmt}`;
  const apis = path.join(node.dir, 'apis');
  const admin = basic(ADMIN.username, ADMIN.password);
  const url = (id: string, rest = '/protos'): string => `${base}/admin/v1/api-files/${encodeURIComponent(id)}${rest}`;

  const listed = await json('GET', url('routeguide.toml'), undefined, admin);
  t.equal(listed.status, 200, listed.text);
  t.same(
    (listed.body.protos as { name: string; text: string }[]).map((p) => [p.name, p.text === PROTO]),
    [['route_guide.proto', true]],
  );
  t.ok(
    (listed.body.methods as { path: string }[]).some((m) => m.path === '/routeguide.Admin/Reset'),
    'the methods are listed',
  );

  // A syntax error: the file and line, and nothing written.
  const before = fs.readFileSync(path.join(apis, 'routeguide.toml'), 'utf8');
  const bad = await json('PUT', url('routeguide.toml'), { files: [{ name: 'bad.proto', text: BAD }] }, admin);
  t.equal(bad.status, 422, bad.text);
  t.match(String((bad.body.fields as Record<string, string>)['grpc.proto']), /^bad\.proto:5: illegal token '}'/, 'named by file and line');
  t.notMatch(bad.text, apis, "the answer does not name the node's paths");
  t.notOk(fs.existsSync(path.join(apis, 'bad.proto')), 'the .proto file is not written');
  t.equal(fs.readFileSync(path.join(apis, 'routeguide.toml'), 'utf8'), before, 'the API file is not changed');

  // Names, count and size.
  for (const [name, text, why] of [
    ['../x.proto', EXTRA, /not a \.proto file name/],
    ['sub/x.proto', EXTRA, /not a \.proto file name/],
    ['x.txt', EXTRA, /not a \.proto file name/],
    ['big.proto', `${EXTRA}//${'x'.repeat(256 * 1024)}\n`, /larger than 262144 bytes/],
  ] as const) {
    const r = await json('PUT', url('routeguide.toml'), { files: [{ name, text }] }, admin);
    t.equal(r.status, 400, `${name}: ${r.text.slice(0, 200)}`);
    t.match(r.body.error_description, /^API_PROTO_UPLOAD: /);
    t.match(r.body.error_description, why);
  }
  const many = Array.from({ length: 16 }, (_, i) => ({ name: `m${i}.proto`, text: EXTRA.replace('package extra', `package m${i}`) }));
  const tooMany = await json('PUT', url('routeguide.toml'), { files: many }, admin);
  t.match(tooMany, { status: 400, body: { error_description: /API_PROTO_UPLOAD: an API names at most 16 \.proto files \(17/ } });
  const huge = await json('PUT', url('routeguide.toml'), { files: [{ name: 'h.proto', text: 'x'.repeat(1024 * 1024) }] }, admin);
  t.equal(huge.status, 413, 'a request body over 1 MiB');
  t.same(
    fs.readdirSync(apis).filter((f) => f.endsWith('.proto')),
    ['route_guide.proto'],
    'no refused upload wrote a file',
  );

  // An upload: stored beside the API file, named in its list, the methods shown; the comment is kept.
  const up = await json('PUT', url('routeguide.toml'), { files: [{ name: 'extra.proto', text: EXTRA }] }, admin);
  t.equal(up.status, 200, up.text);
  t.same(
    (up.body.protos as { name: string }[]).map((p) => p.name),
    ['route_guide.proto', 'extra.proto'],
  );
  t.ok(
    (up.body.methods as { path: string }[]).some((m) => m.path === '/extra.Extra/Ping'),
    'the new method is listed',
  );
  t.equal(fs.readFileSync(path.join(apis, 'extra.proto'), 'utf8'), EXTRA);
  const text = fs.readFileSync(path.join(apis, 'routeguide.toml'), 'utf8');
  t.match(text, /proto = \[\s*"route_guide\.proto",\s*"extra\.proto"\s*\]/);
  t.match(text, /# the \.proto files beside this file/, 'the comment is kept');

  // A grpc-js client through the gateway; then the replaced .proto renames a service, which is hot-deployed.
  const pkg = (loadDefinition(dir0) as Any).routeguide;
  const rg = new pkg.RouteGuide(`127.0.0.1:${node.gw}`, grpc.credentials.createInsecure());
  const adm = new pkg.Admin(`127.0.0.1:${node.gw}`, grpc.credentials.createInsecure());
  t.teardown(() => (rg.close(), adm.close()));
  t.equal((await unary(rg, 'GetFeature', { latitude: 3, longitude: 4 }, new grpc.Metadata())).value?.name, 'at 3,4');
  t.equal((await unary(adm, 'Reset', {}, new grpc.Metadata())).value?.name, 'reset');
  const renamed = PROTO.replace('service Admin {', 'service Ops {');
  const replaced = await json('PUT', url('routeguide.toml'), { files: [{ name: 'route_guide.proto', text: renamed }] }, admin);
  t.equal(replaced.status, 200, replaced.text);
  t.ok((replaced.body.methods as { path: string }[]).some((m) => m.path === '/routeguide.Ops/Reset'));
  t.equal(fs.readFileSync(path.join(apis, 'routeguide.toml'), 'utf8'), text, 'a replaced file leaves the API file as it was');
  t.ok(
    await until(async () => (await unary(adm, 'Reset', {}, new grpc.Metadata())).error?.code === grpc.status.UNIMPLEMENTED, 10_000),
    'the renamed service is no longer served: the .proto file alone redeployed the API',
  );

  // A delete: out of the list and off the disk; the last one cannot go (a gRPC API needs one).
  const del = await json('DELETE', url('routeguide.toml', '/protos/extra.proto'), undefined, admin);
  t.equal(del.status, 200, del.text);
  t.same(
    (del.body.protos as { name: string }[]).map((p) => p.name),
    ['route_guide.proto'],
  );
  t.notOk(fs.existsSync(path.join(apis, 'extra.proto')), 'the file is removed');
  const last = await json('DELETE', url('routeguide.toml', '/protos/route_guide.proto'), undefined, admin);
  t.equal(last.status, 422, last.text);
  t.ok(fs.existsSync(path.join(apis, 'route_guide.proto')), 'the last .proto file stays');
  t.equal((await json('DELETE', url('routeguide.toml', '/protos/nope.proto'), undefined, admin)).status, 404);

  // A tenant's gRPC API: created with its .proto in the tenant's folder; another tenant's admin: 404.
  for (const [domain, who, pw] of [
    ['acme.test', 'bossy', 'acme-pw-1'],
    ['beta.test', 'chief', 'beta-pw-1'],
  ] as const)
    t.equal((await json('POST', `${base}/admin/v1/tenants`, { domain, admin: who, password: pw }, admin)).status, 201);
  const acme = basic('bossy@acme.test', 'acme-pw-1');
  const beta = basic('chief@beta.test', 'beta-pw-1');
  const id = 't:acme.test:created:rg-1.toml';
  const acmeProto = PROTO.replace('package routeguide;', 'package acme;');
  const noProto = await json('PUT', url(id, ''), { text: api(backend.port, 'acme'), create: true }, acme);
  t.equal(noProto.status, 422, 'a gRPC API without its .proto file does not validate');
  const created = await json(
    'PUT',
    url(id, ''),
    { text: api(backend.port, 'acme'), create: true, protos: [{ name: 'route_guide.proto', text: acmeProto }] },
    acme,
  );
  t.equal(created.status, 200, created.text);
  const drafts = path.join(apis, 't', 'acme.test', 'created');
  t.equal(fs.readFileSync(path.join(drafts, 'route_guide.proto'), 'utf8'), acmeProto, "stored in the tenant's folder");
  const mine = await json('GET', url(id), undefined, acme);
  t.ok(
    (mine.body.methods as { path: string }[]).some((m) => m.path === '/acme.RouteGuide/GetFeature'),
    mine.text,
  );
  for (const [method, rest, body] of [
    ['GET', '/protos', undefined],
    ['PUT', '/protos', { files: [{ name: 'extra.proto', text: EXTRA }] }],
    ['DELETE', '/protos/route_guide.proto', undefined],
  ] as const) {
    const r = await json(method, url(id, rest), body, beta);
    t.equal(r.status, 404, `beta.test's admin: ${method} ${rest} ${r.text}`);
  }
  t.equal((await json('PUT', url('routeguide.toml'), { files: [{ name: 'extra.proto', text: EXTRA }] }, acme)).status, 404);
  t.equal((await json('GET', url('t:acme.test:..%2Froute_guide.proto'), undefined, acme)).status, 404, 'no traversal by id');
  t.notOk(fs.existsSync(path.join(drafts, 'extra.proto')), 'nothing written for beta.test');
  t.equal((await json('GET', url(id), undefined, admin)).status, 200, "the super tenant's admin reaches a tenant's files");

  // Published: the .proto file moves with the API file into the tenant's folder.
  const pub = await json('POST', url(id, '/lifecycle'), { state: 'PUBLISHED' }, acme);
  t.equal(pub.status, 200, pub.text);
  t.equal(fs.readFileSync(path.join(apis, 't', 'acme.test', 'route_guide.proto'), 'utf8'), acmeProto);
  t.notOk(fs.existsSync(path.join(drafts, 'route_guide.proto')), 'and leaves the drafts folder');
  const published = await json('GET', url('t:acme.test:rg-1.toml'), undefined, acme);
  t.ok(
    (published.body.methods as { path: string }[]).some((m) => m.path === '/acme.RouteGuide/GetFeature'),
    published.text,
  );
});
