/**
 * The gateway's own refusals of gRPC calls (docs/grpc.md, docs/faults.md "gRPC status of each fault"):
 * each arrives at a real grpc-js client as HTTP 200, trailers-only, with its gRPC status and the fault code
 * in `throughway-fault-code`: no token and a bad token (UNAUTHENTICATED), an unsubscribed API and a
 * missing scope (PERMISSION_DENIED), a method's throttling policy (RESOURCE_EXHAUSTED), unknown methods
 * and services (UNIMPLEMENTED), a backend that is down or not trusted (UNAVAILABLE), the call's deadline passed at the
 * gateway (DEADLINE_EXCEEDED, the backend's stream cancelled), and a gRPC API called over HTTP/1.1.
 */
import * as http2 from 'node:http2';
import t from 'tap';
import * as grpc from '@grpc/grpc-js';
import { bearer, faultCode, grpcNode, unary, type GrpcNode } from './helpers';
import { closedPort, request, until } from '../gateway/helpers';

let g: GrpcNode;
let token: string;
let scoped: string;
let down: number;

t.before(async () => {
  down = await closedPort();
  g = await grpcNode(
    (proto, port) => [
      {
        name: 'guide',
        context: '/guide',
        version: '1',
        type: 'GRPC',
        grpc: { proto: [proto] },
        endpoints: { production: `http://127.0.0.1:${port}` },
        resources: [
          { path: '/routeguide.RouteGuide/GetFeature' },
          { path: '/routeguide.RouteGuide/Slow' },
          { path: '/routeguide.RouteGuide/Limited', policy: 'Two' },
          { path: '/routeguide.RouteGuide/Secret', scopes: ['guide:secret'] },
        ],
      },
      {
        name: 'admin',
        context: '/admin',
        version: '1',
        type: 'GRPC',
        grpc: { proto: [proto] },
        endpoints: { production: `http://127.0.0.1:${port}` },
        resources: [{ path: '/routeguide.Admin/Reset' }],
      },
    ],
    '',
    ['guide:secret'],
  );
  const app = await g.node.app('grpc-app', { subscribe: ['guide'] });
  token = await g.node.token(app);
  scoped = await g.node.token(app, { scope: 'guide:secret' });
});
t.teardown(() => g?.close());

t.test('no token: UNAUTHENTICATED with 900902; a bad token: UNAUTHENTICATED with 900901', async (t) => {
  const c = g.client();
  const none = await unary(c, 'GetFeature', {}, bearer(undefined));
  t.equal(none.error?.code, grpc.status.UNAUTHENTICATED, String(none.error?.details));
  t.equal(faultCode(none), 900902);
  t.match(none.error?.details, /^Missing credentials/, "grpc-message: the fault's message and description");
  const bad = await unary(c, 'GetFeature', {}, bearer('not-a-token'));
  t.equal(bad.error?.code, grpc.status.UNAUTHENTICATED);
  t.equal(faultCode(bad), 900901);
  t.equal(g.backend.seen.length, 0, 'the backend saw neither call');
});

t.test('an API the application is not subscribed to, and a missing scope: PERMISSION_DENIED', async (t) => {
  const admin = await unary(g.client('Admin'), 'Reset', {}, bearer(token));
  t.equal(admin.error?.code, grpc.status.PERMISSION_DENIED, String(admin.error?.details));
  t.equal(faultCode(admin), 900908);
  const c = g.client();
  const secret = await unary(c, 'Secret', {}, bearer(token));
  t.equal(secret.error?.code, grpc.status.PERMISSION_DENIED, String(secret.error?.details));
  t.equal(faultCode(secret), 900910);
  const granted = await unary(c, 'Secret', {}, bearer(scoped));
  t.equal(granted.error, null, 'the token with the scope is let through');
  t.equal(granted.value?.name, 'secret');
});

t.test("a method's throttling policy: RESOURCE_EXHAUSTED with 900802 on the third call", async (t) => {
  const c = g.client();
  const codes: (number | undefined)[] = [];
  let last: Awaited<ReturnType<typeof unary>> | undefined;
  for (let i = 0; i < 3; i++) {
    last = await unary(c, 'Limited', {}, bearer(token));
    codes.push(last.error?.code ?? 0);
  }
  t.same(codes, [0, 0, grpc.status.RESOURCE_EXHAUSTED]);
  t.equal(last !== undefined ? faultCode(last) : undefined, 900802);
  t.ok(last?.error?.metadata.get('retry-after')[0] !== undefined, 'with retry-after');
});

t.test('methods and services the API does not serve: UNIMPLEMENTED', async (t) => {
  const c = g.client();
  // ListFeatures is in the .proto, but no resource of the API lists it.
  const unlisted = await new Promise<grpc.ServiceError>((resolve) => {
    const call = c.ListFeatures({}, bearer(token));
    call.on('data', () => undefined);
    call.on('error', resolve);
  });
  t.equal(unlisted.code, grpc.status.UNIMPLEMENTED, unlisted.details);
  t.same(unlisted.metadata.get('throughway-fault-code'), ['900906']);
  const raw = new grpc.Client(`localhost:${g.tlsPort}`, grpc.credentials.createSsl(Buffer.from(g.pki.ca.certPem)));
  t.teardown(() => raw.close());
  const unknown = await new Promise<grpc.ServiceError | null>((resolve) =>
    raw.makeUnaryRequest(
      '/nowhere.Nothing/Call',
      (x: Buffer) => x,
      (x: Buffer) => x,
      Buffer.alloc(0),
      bearer(token),
      (err) => resolve(err),
    ),
  );
  t.equal(unknown?.code, grpc.status.UNIMPLEMENTED);
  t.same(unknown?.metadata.get('throughway-fault-code'), ['103005']);
});

t.test('a backend that is down: UNAVAILABLE with the transport code 101503', async (t) => {
  const dg = await grpcNode((proto) => [
    {
      name: 'down',
      context: '/down',
      version: '1',
      type: 'GRPC',
      auth: 'none',
      grpc: { proto: [proto] },
      endpoints: { production: `http://127.0.0.1:${down}` },
    },
  ]);
  t.teardown(() => dg.close());
  const o = await unary(dg.client(), 'GetFeature', {}, bearer(undefined));
  t.equal(o.error?.code, grpc.status.UNAVAILABLE, String(o.error?.details));
  t.equal(faultCode(o), 101503);
});

t.test('a backend that resets the stream or ends it without a gRPC status: 103212', async (t) => {
  // A raw HTTP/2 backend (node:http2) that misbehaves on purpose, by the method called.
  const bad = http2.createServer();
  bad.on('stream', (stream, headers) => {
    stream.on('error', () => undefined);
    if (String(headers[':path']).endsWith('/GetFeature')) stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
    else {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' });
      stream.end();
    }
  });
  await new Promise<void>((resolve) => bad.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => bad.close(() => resolve())));
  const port = (bad.address() as { port: number }).port;
  const bg = await grpcNode((proto) => [
    {
      name: 'bad',
      context: '/bad',
      version: '1',
      type: 'GRPC',
      auth: 'none',
      grpc: { proto: [proto] },
      endpoints: { production: `http://127.0.0.1:${port}` },
    },
  ]);
  t.teardown(() => bg.close());
  const reset = await unary(bg.client(), 'GetFeature', {}, bearer(undefined));
  t.equal(reset.error?.code, grpc.status.INTERNAL, String(reset.error?.details));
  t.equal(faultCode(reset), 103212, 'RST_STREAM INTERNAL_ERROR from the backend');
  const empty = await unary(bg.client(), 'Slow', {}, bearer(undefined));
  t.equal(empty.error?.code, grpc.status.INTERNAL, String(empty.error?.details));
  t.equal(faultCode(empty), 103212, 'a response without grpc-status');
});

t.test('a TLS backend whose certificate the sender trust store does not trust: UNAVAILABLE with 103080', async (t) => {
  const ug = await grpcNode(
    (proto, port) => [
      {
        name: 'untrusted',
        context: '/untrusted',
        version: '1',
        type: 'GRPC',
        auth: 'none',
        grpc: { proto: [proto] },
        endpoints: { production: `https://localhost:${port}` },
      },
    ],
    '',
    [],
    true,
  );
  t.teardown(() => ug.close());
  const o = await unary(ug.client(), 'GetFeature', {}, bearer(undefined));
  t.equal(o.error?.code, grpc.status.UNAVAILABLE, String(o.error?.details));
  t.equal(faultCode(o), 103080);
  t.equal(ug.backend.seen.length, 0);
});

t.test('grpc-timeout passes at the gateway: DEADLINE_EXCEEDED (103211), trailers-only, the backend stream cancelled', async (t) => {
  // A raw HTTP/2 client: grpc-js would enforce its own deadline and never show the gateway's answer.
  const s = http2.connect(`https://localhost:${g.tlsPort}`, { ca: g.pki.ca.certPem });
  t.teardown(() => s.close());
  const frame = Buffer.alloc(5); // one empty message: flag 0, length 0 (PROTOCOL-HTTP2.md, Length-Prefixed-Message)
  const req = s.request({
    ':method': 'POST',
    ':path': '/routeguide.RouteGuide/Slow',
    'content-type': 'application/grpc',
    te: 'trailers',
    'grpc-timeout': '300m',
    authorization: `Bearer ${token}`,
  });
  req.end(frame);
  const [headers, flags] = await new Promise<[http2.IncomingHttpHeaders, number]>((resolve) =>
    req.once('response', (h, f) => resolve([h, f])),
  );
  t.equal(headers[':status'], 200);
  t.equal(headers['content-type'], 'application/grpc');
  t.equal(headers['grpc-status'], String(grpc.status.DEADLINE_EXCEEDED));
  t.equal(headers['throughway-fault-code'], '103211');
  t.ok((flags & http2.constants.NGHTTP2_FLAG_END_STREAM) !== 0, 'trailers-only: the HEADERS frame ends the stream');
  t.ok(await until(() => g.backend.cancelled > 0), "the backend's call was cancelled");
});

t.test('a gRPC API over HTTP/1.1: 415 with 103210, the backend not called', async (t) => {
  const before = g.backend.seen.length;
  const r = await request(g.node.port, '/guide/1/routeguide.RouteGuide/GetFeature', {
    method: 'POST',
    headers: { 'Content-Type': 'application/grpc', Authorization: `Bearer ${token}` },
    body: '\0\0\0\0\0',
  });
  t.equal(r.status, 415, r.body);
  t.match(r.body, /103210/);
  t.equal(g.backend.seen.length, before);
});
