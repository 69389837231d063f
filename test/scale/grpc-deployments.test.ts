/**
 * A gRPC API deployed from the control plane (docs/scale-out.md, docs/grpc.md): the .proto files its
 * `[grpc] proto` names are served with the API file, and the gateway-worker builds the API from the served
 * texts, never from its own disk.
 *
 * Real processes: an api-key-manager with a gRPC API and its .proto file, a gateway-worker with an empty
 * apis/ and h2c on its plain listener relays a grpc-js client's unary call to a real grpc-js backend; a
 * method the .proto files do not declare is UNIMPLEMENTED at the worker; the .proto file changed on the key
 * manager is followed on the worker (a method removed: refused there, UNIMPLEMENTED with the gateway's
 * fault code).
 *
 * Redis from THROUGHWAY_TEST_REDIS_URL (skipped with a reason when unset or unreachable).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import t from 'tap';
import { DEFAULT_POLICIES_TOML } from '../../lib/throttle/policies';
import { until } from '../gateway/helpers';
import { grpcBackend, loadDefinition, PROTO, unary, faultCode } from '../grpc/helpers';
import { ADMIN, baseOffset, http, nodeToml, redisReachable, spawnNode, started } from './helpers';

const REDIS = process.env.THROUGHWAY_TEST_REDIS_URL;

const grpcApi = (port: number): string => `name = "RouteGuide"
context = "/routeguide"
version = "1.0.0"
type = "GRPC"
auth = "none"

[grpc]
proto = ["route_guide.proto"]

[endpoints]
production = "http://127.0.0.1:${port}"
`;

type Any = any;

/** A unary call of any path (a method the client's .proto may not have): its status code and fault code. */
function rawUnary(client: grpc.Client, method: string): Promise<{ code: number; fault: string | undefined }> {
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      method,
      (x: Buffer) => x,
      (x: Buffer) => x,
      Buffer.alloc(0),
      new grpc.Metadata(),
      (err) => resolve({ code: err?.code ?? 0, fault: err?.metadata.get('throughway-fault-code')[0]?.toString() }),
    );
  });
}

t.test('a gRPC API of the control plane is served by a gateway-worker, and its .proto file is followed', async (t) => {
  if (!(await redisReachable(REDIS))) {
    t.skip(`Redis not reachable (THROUGHWAY_TEST_REDIS_URL=${REDIS ?? 'unset'})`, () => undefined);
    return;
  }
  const redis = REDIS as string;
  const channel = `tw-test-grpcdeploy-${process.pid}-${Date.now()}`;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-grpc-deploy-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.writeFileSync(path.join(dir, 'route_guide.proto'), PROTO);
  const backend = await grpcBackend(dir);
  t.teardown(() => backend.close());
  const base = baseOffset(33);
  const kmPort = 9763 + base;
  const kmp = spawnNode(
    nodeToml({ offset: base, role: 'api-key-manager', channel, redis }),
    { 'routeguide.toml': grpcApi(backend.port), 'route_guide.proto': PROTO },
    [],
    { 'policies.toml': DEFAULT_POLICIES_TOML },
  );
  t.teardown(() => kmp.stop());
  t.ok(await started(kmp, /Key manager: /), `${kmp.out}\n${kmp.err}`);
  const all = await http(`http://127.0.0.1:${kmPort}/admin/v1/deployments`, { auth: ADMIN });
  const served = (all.body.apis as { protos?: { file: string; text: string }[] }[]).map((a) => a.protos?.map((p) => p.file));
  t.same(served, [['route_guide.proto']], all.text);
  t.equal((all.body.apis as { protos: { text: string }[] }[])[0]?.protos[0]?.text, PROTO, 'the .proto text as on disk');

  const gw = spawnNode(
    nodeToml({ offset: base + 1, role: 'gateway-worker', channel, redis, km: kmPort, extra: '[throughway.http2]\nh2c = true\n' }),
  );
  t.teardown(() => gw.stop());
  t.ok(await started(gw, /APIs: \d+ deployed/), `${gw.out}\n${gw.err}`);
  t.match(gw.out, /APIs: 1 deployed from the control plane/, `${gw.out}\n${gw.err}`);
  t.notMatch(`${gw.out}${gw.err}`, /API_PROTO/, 'the worker did not refuse the API');
  // The start-up lines give a grpcurl command for the API, not an HTTP curl line (lib/node/summary.ts grpcTry).
  t.ok(
    await started(gw, /grpcurl -plaintext -proto route_guide\.proto -d '\{\}' \S+:\d+ routeguide\.RouteGuide\/GetFeature/),
    `the worker's grpcurl line: ${gw.out}`,
  );
  t.match(gw.out, /those of its control plane's apis_dir/, 'with the note on where the .proto files are');
  t.notMatch(gw.out, /^\s*curl .*routeguide/m, 'no HTTP curl line for it');
  const gp = 8280 + base + 1;
  const pkg = (loadDefinition(dir) as Any).routeguide;
  const client = new pkg.RouteGuide(`127.0.0.1:${gp}`, grpc.credentials.createInsecure());
  t.teardown(() => client.close());

  const ok = await unary(client, 'GetFeature', { latitude: 4, longitude: 2 }, new grpc.Metadata());
  t.equal(ok.error, null, String(ok.error?.details));
  t.equal(ok.value?.name, 'at 4,2', 'the backend answered through the worker');
  t.equal(ok.trailers?.get('x-trailer')[0], 'done', "the backend's trailer relayed");

  const unknown = await rawUnary(client, '/routeguide.RouteGuide/NoSuchMethod');
  t.same(
    unknown,
    { code: grpc.status.UNIMPLEMENTED, fault: '900906' },
    'a method the .proto does not declare: UNIMPLEMENTED at the worker',
  );
  const limited = await unary(client, 'Limited', {}, new grpc.Metadata());
  t.equal(limited.value?.name, 'ok', 'Limited is served before the change');

  // The .proto file changes on the key manager (its apis/ is watched): Limited is removed, the worker follows.
  fs.writeFileSync(path.join(kmp.dir, 'apis', 'route_guide.proto'), PROTO.replace('  rpc Limited(Point) returns (Feature) {}\n', ''));
  t.ok(
    await until(async () => faultCode(await unary(client, 'Limited', {}, new grpc.Metadata())) !== undefined, 15_000, 100),
    'the method removed from the .proto file is refused on the worker',
  );
  const gone = await unary(client, 'Limited', {}, new grpc.Metadata());
  t.equal(gone.error?.code, grpc.status.UNIMPLEMENTED);
  t.equal(faultCode(gone), 900906, "the gateway's refusal, not the backend's");
  const still = await unary(client, 'GetFeature', { latitude: 1, longitude: 1 }, new grpc.Metadata());
  t.equal(still.value?.name, 'at 1,1', 'the other methods still answer');
});
