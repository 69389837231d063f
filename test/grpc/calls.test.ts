/**
 * gRPC APIs (type = "GRPC", docs/grpc.md) through the gateway's HTTPS listener (ALPN h2) and h2c to a real
 * grpc-js backend, with a real grpc-js client and tokens of the in-process key manager: each call kind,
 * a 4 MiB message each way, metadata in (headers) and out (headers and trailers), the auth header kept
 * from the backend, the access log line, and a TLS backend (h2 by ALPN).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import t from 'tap';
import * as grpc from '@grpc/grpc-js';
import { bearer, grpcNode, unary, type GrpcNode } from './helpers';
import { until } from '../gateway/helpers';

const METHODS = ['GetFeature', 'ListFeatures', 'RecordRoute', 'RouteChat', 'Slow', 'Blob', 'Limited', 'Secret'];

let g: GrpcNode;
let token: string;

t.before(async () => {
  g = await grpcNode(
    (proto, port) => [
      {
        name: 'guide',
        context: '/guide',
        version: '1',
        type: 'GRPC',
        grpc: { proto: [proto] },
        endpoints: { production: `http://127.0.0.1:${port}` },
        resources: METHODS.map((m) => ({ path: `/routeguide.RouteGuide/${m}` })),
      },
    ],
    (_pki, dir) =>
      `[apim.analytics]\nenable = true\n[throughway.analytics]\nfile = "${path.join(dir, 'events.jsonl')}"\nflush_interval = "60s"\n`,
  );
  const app = await g.node.app('grpc-app', { subscribe: ['guide'] });
  token = await g.node.token(app);
});
t.teardown(() => g?.close());

t.test('unary: the answer, the headers and trailers of the backend, the metadata it received', async (t) => {
  const c = g.client();
  const o = await unary(c, 'GetFeature', { latitude: 1, longitude: 2 }, bearer(token, { 'x-request': 'hello' }));
  t.equal(o.error, null, String(o.error?.details));
  t.same(o.value, { name: 'at 1,2', location: { latitude: 1, longitude: 2 } });
  t.same(o.headers?.get('x-echo'), ['hello'], "the backend's response headers reached the client");
  t.same(o.trailers?.get('x-trailer'), ['done'], "the backend's trailers reached the client");
  const seen = g.backend.seen.filter((s) => s.method === 'GetFeature').pop();
  t.same(seen?.metadata.get('x-request'), ['hello'], 'request metadata reached the backend');
  t.same(seen?.metadata.get('authorization'), [], "the gateway's auth header did not");
  const lines = (): string[] => g.node.logger.lines.filter((l) => l.event === 'http_access').map((l) => String(l.line));
  t.ok(await until(() => lines().some((l) => l.includes('"POST /routeguide.RouteGuide/GetFeature HTTP/2.0" 200'))), lines().join('\n'));
  t.match(
    lines().find((l) => l.includes('/routeguide.RouteGuide/GetFeature')),
    / - - carbon\.super grpc-status=0$/,
    "the access log line ends with the call's gRPC status",
  );
  await g.node.gw.analytics?.flush();
  const events = fs
    .readFileSync(path.join(g.dir, 'events.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  t.match(
    events.find((e) => e.apiResourceTemplate === '/routeguide.RouteGuide/GetFeature'),
    { apiName: 'guide', apiContext: '/guide/1', protocol: 'gRPC', applicationName: 'grpc-app', proxyResponseCode: 200, errorCode: null },
    'the analytics event names the API, the method, the application and the protocol',
  );
  t.equal(g.node.gw.apiOf('/routeguide.RouteGuide/GetFeature'), 'guide:1', "the metrics' API label of the call");
});

t.test('server streaming: every message, in order', async (t) => {
  const c = g.client();
  const got: string[] = [];
  await new Promise<void>((resolve, reject) => {
    const call = c.ListFeatures({ lo: { latitude: 1 }, hi: { latitude: 5 } }, bearer(token));
    call.on('data', (f: { name: string }) => got.push(f.name));
    call.on('error', reject);
    call.on('end', resolve);
  });
  t.same(got, ['f1', 'f2', 'f3', 'f4', 'f5']);
});

t.test('client streaming: the backend counts every message of the client', async (t) => {
  const c = g.client();
  const summary = await new Promise<{ point_count: number }>((resolve, reject) => {
    const call = c.RecordRoute(bearer(token), (err: grpc.ServiceError | null, v: { point_count: number }) =>
      err !== null ? reject(err) : resolve(v),
    );
    for (let i = 0; i < 7; i++) call.write({ latitude: i, longitude: i });
    call.end();
  });
  t.equal(summary.point_count, 7);
});

t.test('bidirectional streaming, over h2c: each message answered while the call is open', async (t) => {
  const c = g.client('RouteGuide', true);
  const call = c.RouteChat(bearer(token));
  const got: string[] = [];
  const next = (): Promise<string> => new Promise((resolve) => call.once('data', (f: { name: string }) => resolve(f.name)));
  for (let i = 1; i <= 3; i++) {
    const answer = next();
    call.write({ latitude: i });
    got.push(await answer); // the answer to message i arrives before message i + 1 is sent
  }
  call.end();
  await new Promise((resolve) => call.on('end', resolve));
  t.same(got, ['echo 1', 'echo 2', 'echo 3']);
});

t.test('a 4 MiB message each way, relayed byte for byte', async (t) => {
  const c = g.client();
  const data = Buffer.alloc(4 * 1024 * 1024);
  for (let i = 0; i < data.length; i++) data[i] = (i * 7 + (i >> 12)) & 0xff;
  const o = await unary(c, 'Blob', { data }, bearer(token));
  t.equal(o.error, null, String(o.error?.details));
  const back = o.value.data as Buffer;
  t.equal(back.length, data.length);
  t.ok(back.equals(Buffer.from(data).reverse()), 'the reply is the request reversed, whole');
});

t.test('a TLS backend is reached with ALPN h2, trusted by the sender trust store', async (t) => {
  const tlsG = await grpcNode(
    (proto, port) => [
      {
        name: 'secure',
        context: '/secure',
        version: '1',
        type: 'GRPC',
        auth: 'none',
        grpc: { proto: [proto] },
        endpoints: { production: `https://localhost:${port}` },
      },
    ],
    (pki) =>
      `[transport.passthru_https]\nsender.trust_store.file_name = "${pki.write('ca.pem', pki.ca.certPem)}"\nsender.trust_store.type = "PEM"\nsender.trust_store.password = "x"\n`,
    [],
    true,
  );
  t.teardown(() => tlsG.close());
  const o = await unary(tlsG.client(), 'GetFeature', { latitude: 3, longitude: 4 }, bearer(undefined));
  t.equal(o.error, null, String(o.error?.details));
  t.equal(o.value?.name, 'at 3,4');
});

t.test("the access log's grpc-status: a backend's error and the gateway's refusal, both HTTP 200", async (t) => {
  const c = g.client();
  const lines = (): string[] => g.node.logger.lines.filter((l) => l.event === 'http_access').map((l) => String(l.line));
  const before = lines().length;
  const failed = await unary(c, 'GetFeature', { latitude: 7 }, bearer(token, { 'x-fail': String(grpc.status.NOT_FOUND) }));
  t.equal(failed.error?.code, grpc.status.NOT_FOUND, "the backend's own status reached the client");
  const refused = await unary(c, 'GetFeature', { latitude: 8 }, bearer(undefined));
  t.equal(refused.error?.code, grpc.status.UNAUTHENTICATED);
  t.ok(await until(() => lines().length >= before + 2), lines().slice(before).join('\n'));
  const mine = lines().slice(before);
  t.match(
    mine[0],
    /"POST \/routeguide\.RouteGuide\/GetFeature HTTP\/2\.0" 200 .* - - carbon\.super grpc-status=5$/,
    "the backend's NOT_FOUND, no fault code of the gateway's",
  );
  t.match(
    mine[1],
    /"POST \/routeguide\.RouteGuide\/GetFeature HTTP\/2\.0" 200 .* 900902 - .*grpc-status=16$/,
    "the gateway's refusal: its fault code and UNAUTHENTICATED",
  );
});
