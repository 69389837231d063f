/**
 * gRPC through the gateway: a real grpc-js backend (h2c, or TLS with ALPN h2) serving route_guide-like
 * methods of every call kind, the key manager's tokens (../security/helpers.ts) and the gateway's HTTPS
 * listener with ALPN h2 and its plain listener with h2c, relaying gRPC calls (lib/http2/grpc.ts).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { AddressInfo } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { startNode, type Node } from '../security/helpers';
import { makePki, type Pki } from '../tls/helpers';
import { DEFAULT_HTTP2_SETTINGS, http2Handover } from '../../lib/http2';
import { GrpcSessions } from '../../lib/grpc';

export const PROTO = `syntax = "proto3";
package routeguide;

service RouteGuide {
  rpc GetFeature(Point) returns (Feature) {}
  rpc ListFeatures(Rectangle) returns (stream Feature) {}
  rpc RecordRoute(stream Point) returns (RouteSummary) {}
  rpc RouteChat(stream Point) returns (stream Feature) {}
  rpc Slow(Point) returns (Feature) {}
  rpc Blob(Bytes) returns (Bytes) {}
  rpc Limited(Point) returns (Feature) {}
  rpc Secret(Point) returns (Feature) {}
}

service Admin {
  rpc Reset(Point) returns (Feature) {}
}

message Point { int32 latitude = 1; int32 longitude = 2; }
message Rectangle { Point lo = 1; Point hi = 2; }
message Feature { string name = 1; Point location = 2; }
message RouteSummary { int32 point_count = 1; }
message Bytes { bytes data = 1; }
`;

/** The most bytes one message may have, both ends: above the 4 MiB tests and grpc-js's 4 MiB default. */
export const MAX_MESSAGE = 8 * 1024 * 1024;
const SIZES = { 'grpc.max_receive_message_length': MAX_MESSAGE, 'grpc.max_send_message_length': MAX_MESSAGE };

export interface Backend {
  readonly port: number;
  /** Metadata of each call the backend received, by method name. */
  readonly seen: { method: string; metadata: grpc.Metadata }[];
  /** Calls the backend saw cancelled. */
  cancelled: number;
  close(): Promise<void>;
}

export function loadDefinition(dir: string): grpc.GrpcObject {
  const file = path.join(dir, 'route_guide.proto');
  const def = protoLoader.loadSync(file, { keepCase: true, longs: String, defaults: true });
  return grpc.loadPackageDefinition(def);
}

type Any = any;

/** A grpc-js server of RouteGuide and Admin on 127.0.0.1 (TLS when `tls` is given). */
export async function grpcBackend(dir: string, tls?: { key: string; cert: string }): Promise<Backend> {
  const pkg = (loadDefinition(dir) as Any).routeguide;
  const server = new grpc.Server(SIZES);
  const b: { seen: Backend['seen']; cancelled: number } = { seen: [], cancelled: 0 };
  const note = (method: string, call: { metadata: grpc.Metadata }): void => void b.seen.push({ method, metadata: call.metadata });
  server.addService(pkg.RouteGuide.service, {
    GetFeature(call: Any, cb: Any) {
      note('GetFeature', call);
      // x-fail: N answers with gRPC status N (trailers-only), as a backend's own error.
      const fail = call.metadata.get('x-fail')[0];
      if (fail !== undefined) return cb({ code: Number(fail), details: 'asked to fail' });
      const echo = call.metadata.get('x-request')[0];
      const md = new grpc.Metadata();
      if (echo !== undefined) md.set('x-echo', String(echo));
      call.sendMetadata(md);
      const trailer = new grpc.Metadata();
      trailer.set('x-trailer', 'done');
      cb(null, { name: `at ${call.request.latitude},${call.request.longitude}`, location: call.request }, trailer);
    },
    ListFeatures(call: Any) {
      note('ListFeatures', call);
      for (let i = call.request.lo.latitude; i <= call.request.hi.latitude; i++)
        call.write({ name: `f${i}`, location: { latitude: i, longitude: 0 } });
      call.end();
    },
    RecordRoute(call: Any, cb: Any) {
      note('RecordRoute', call);
      let n = 0;
      call.on('data', () => n++);
      call.on('end', () => cb(null, { point_count: n }));
    },
    RouteChat(call: Any) {
      note('RouteChat', call);
      call.on('data', (p: Any) => call.write({ name: `echo ${p.latitude}`, location: p }));
      call.on('end', () => call.end());
    },
    Slow(call: Any, cb: Any) {
      note('Slow', call);
      const timer = setTimeout(() => cb(null, { name: 'late' }), 5000);
      call.on('cancelled', () => {
        b.cancelled++;
        clearTimeout(timer);
      });
    },
    Blob(call: Any, cb: Any) {
      note('Blob', call);
      const data: Buffer = call.request.data;
      // The reply: the same bytes reversed, so an echo unchanged would not pass.
      cb(null, { data: Buffer.from(data).reverse() });
    },
    Limited(call: Any, cb: Any) {
      note('Limited', call);
      cb(null, { name: 'ok' });
    },
    Secret(call: Any, cb: Any) {
      note('Secret', call);
      cb(null, { name: 'secret' });
    },
  });
  server.addService(pkg.Admin.service, {
    Reset(call: Any, cb: Any) {
      note('Reset', call);
      cb(null, { name: 'reset' });
    },
  });
  const creds =
    tls === undefined
      ? grpc.ServerCredentials.createInsecure()
      : grpc.ServerCredentials.createSsl(null, [{ private_key: Buffer.from(tls.key), cert_chain: Buffer.from(tls.cert) }]);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', creds, (err, p) => (err !== null ? reject(err) : resolve(p))),
  );
  return Object.assign(b, {
    port,
    close: () => new Promise<void>((resolve) => server.tryShutdown(() => resolve())),
  }) as Backend;
}

export const POLICIES = `
[[api]]
name = "Two"
request_count = 2
unit_time = 1
time_unit = "min"
`;

export interface GrpcNode {
  readonly node: Node;
  readonly pki: Pki;
  readonly dir: string;
  readonly backend: Backend;
  readonly tlsPort: number;
  readonly plainPort: number;
  /** A RouteGuide (or Admin) client through the gateway's HTTPS listener (ALPN h2), trusting the test CA. */
  client(service?: 'RouteGuide' | 'Admin', plain?: boolean): Any;
  close(): Promise<void>;
}

/** The gateway of ../security/helpers.ts with gRPC APIs given by `apis` (the proto's path and the backend's port). */
export async function grpcNode(
  apis: (proto: string, backendPort: number) => readonly Record<string, unknown>[],
  toml: string | ((pki: Pki, dir: string) => string) = '',
  scopes: readonly string[] = [],
  backendTls = false,
): Promise<GrpcNode> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-grpc-'));
  fs.writeFileSync(path.join(dir, 'route_guide.proto'), PROTO);
  fs.writeFileSync(path.join(dir, 'policies.toml'), POLICIES);
  const pki = makePki();
  const backend = await grpcBackend(dir, backendTls ? { key: pki.server.keyPem, cert: pki.server.certPem } : undefined);
  const proto = path.join(dir, 'route_guide.proto');
  const node = await startNode(
    () => apis(proto, backend.port),
    `[throughway.throttling]\npolicies_file = "${path.join(dir, 'policies.toml')}"\n[http_access_log]\nenabled = true\nuseLogger = true\n${typeof toml === 'string' ? toml : toml(pki, dir)}`,
    { scopes },
  );
  const sessions = new GrpcSessions();
  const handover = http2Handover(
    (s, secure, v) => node.gw.handleConnection(s, secure, v),
    { ...DEFAULT_HTTP2_SETTINGS, h2c: true },
    node.logger,
    { gateway: node.gw.grpc, sessions, logger: node.logger },
  );
  const server = await node.gw.listenTls({ port: 0, host: '127.0.0.1', handover }, { key: pki.server.keyPem, cert: pki.server.certPem });
  const plain = await node.gw.listen({ port: 0, host: '127.0.0.1', handover });
  const tlsPort = (server.address() as AddressInfo).port;
  const pkg = (loadDefinition(dir) as Any).routeguide;
  const clients: grpc.Client[] = [];
  return {
    node,
    pki,
    dir,
    backend,
    tlsPort,
    plainPort: plain.port,
    client(service = 'RouteGuide', plainText = false) {
      const creds = plainText ? grpc.credentials.createInsecure() : grpc.credentials.createSsl(Buffer.from(pki.ca.certPem));
      const c = new pkg[service](`${plainText ? '127.0.0.1' : 'localhost'}:${plainText ? plain.port : tlsPort}`, creds, SIZES);
      clients.push(c);
      return c;
    },
    async close() {
      for (const c of clients) c.close();
      await node.close();
      await backend.close();
      pki.cleanup();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Metadata with a bearer token (and more pairs). */
export function bearer(token: string | undefined, more: Record<string, string> = {}): grpc.Metadata {
  const md = new grpc.Metadata();
  if (token !== undefined) md.set('authorization', `Bearer ${token}`);
  for (const [k, v] of Object.entries(more)) md.set(k, v);
  return md;
}

export interface UnaryOutcome {
  readonly error: grpc.ServiceError | null;
  readonly value: Any;
  readonly headers: grpc.Metadata | undefined;
  readonly trailers: grpc.Metadata | undefined;
}

/** One unary call; the error (with its code, details and trailers), or the value with both metadata. */
export function unary(
  client: Any,
  method: string,
  request: unknown,
  md: grpc.Metadata,
  options: grpc.CallOptions = {},
): Promise<UnaryOutcome> {
  return new Promise((resolve) => {
    let headers: grpc.Metadata | undefined;
    let trailers: grpc.Metadata | undefined;
    const call = client[method](request, md, options, (error: grpc.ServiceError | null, value: Any) => {
      // 'status' comes after the callback in grpc-js: wait a tick for the trailers.
      setImmediate(() => resolve({ error, value, headers, trailers: trailers ?? error?.metadata }));
    });
    call.on('metadata', (m: grpc.Metadata) => (headers = m));
    call.on('status', (s: grpc.StatusObject) => (trailers = s.metadata));
  });
}

/** The throughway-fault-code trailer of a refused call. */
export function faultCode(o: UnaryOutcome): number | undefined {
  const v = o.error?.metadata.get('throughway-fault-code')[0];
  return v === undefined ? undefined : Number(v);
}
