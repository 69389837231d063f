/**
 * OTLP export of traces ([throughway.tracing] otlp.*, docs/tracing.md "OTLP"): a receiver in the test takes
 * the gateway's POST /v1/traces in both encodings and decodes it with the official schema (the published
 * opentelemetry-proto files in test/fixtures/opentelemetry-proto, loaded by protobufjs); the spans nest
 * client → gateway → phases → backend call; batching is bounded, flushed on its interval and at close;
 * sampling is Zipkin's.
 */
import t from 'tap';
import * as http from 'node:http';
import type * as net from 'node:net';
import * as path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import * as protobuf from 'protobufjs';
import { BASE_TOML, apiToml, echoBackend, request, startGateway, until } from '../gateway/helpers';
import { fieldValues } from './helpers';

const root = path.join(__dirname, '..', '..', '..');
const PROTO_DIR = path.join(root, 'test', 'fixtures', 'opentelemetry-proto');
const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';
const PHASE_NAMES = ['route', 'cors', 'api-status', 'authentication', 'throttling', 'mediation', 'transport-headers', 'send'];
const H = (...kv: string[]): string[] => ['Host', '127.0.0.1', ...kv];

/** The schema: ExportTraceServiceRequest and everything it imports, resolved from the fixture's root. */
function schema(): protobuf.Type {
  const r = new protobuf.Root();
  r.resolvePath = (_origin, target) => (path.isAbsolute(target) ? target : path.join(PROTO_DIR, target));
  r.loadSync('opentelemetry/proto/collector/trace/v1/trace_service.proto');
  r.resolveAll();
  return r.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');
}
const Request = schema();

interface Received {
  readonly url: string;
  readonly contentType: string;
  readonly body: Buffer;
}

async function receiver(): Promise<{ port: number; posts: Received[]; close(): Promise<void> }> {
  const posts: Received[] = [];
  const srv = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('end', () => {
      posts.push({ url: req.url ?? '', contentType: req.headers['content-type'] ?? '', body: Buffer.concat(chunks) });
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': '2' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  return {
    port: (srv.address() as net.AddressInfo).port,
    posts,
    close: () =>
      new Promise<void>((resolve) => {
        srv.closeAllConnections();
        srv.close(() => resolve());
      }),
  };
}

interface Attr {
  key: string;
  value: { stringValue?: string; intValue?: string };
}
interface DecodedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: Attr[];
  status?: { code?: number; message?: string };
}
interface Decoded {
  resourceSpans: { resource: { attributes: Attr[] }; scopeSpans: { scope: { name: string }; spans: DecodedSpan[] }[] }[];
}

const hex = (b64: string): string => Buffer.from(b64, 'base64').toString('hex');

/**
 * A POST body decoded with the schema. Binary: Type.decode. JSON: OTLP's JSON mapping differs from
 * proto3's in one point, ids are hex (not base64): they are turned to base64, then Type.fromObject reads
 * it against the schema. Both end as the same plain object, ids in hex.
 */
function decode(p: Received): Decoded {
  let message: protobuf.Message;
  if (p.contentType === 'application/x-protobuf') message = Request.decode(p.body);
  else {
    const json = JSON.parse(p.body.toString('utf8')) as Decoded;
    for (const rs of json.resourceSpans)
      for (const ss of rs.scopeSpans)
        for (const s of ss.spans) {
          s.traceId = Buffer.from(s.traceId, 'hex').toString('base64');
          s.spanId = Buffer.from(s.spanId, 'hex').toString('base64');
          if (s.parentSpanId !== undefined) s.parentSpanId = Buffer.from(s.parentSpanId, 'hex').toString('base64');
        }
    message = Request.fromObject(json);
    // Every field the JSON writes is one of the schema's, with the schema's type: read into the message
    // and written back (proto3 JSON forms: 64-bit integers as strings, enums as numbers), nothing differs.
    const back = Request.toObject(message, { longs: String, bytes: String, enums: Number });
    if (!isDeepStrictEqual(back, json))
      throw new Error(`not an ExportTraceServiceRequest as written:\n${JSON.stringify(json)}\nread as\n${JSON.stringify(back)}`);
  }
  const o = Request.toObject(message, { longs: String, bytes: String, defaults: true, arrays: true }) as Decoded;
  for (const rs of o.resourceSpans)
    for (const ss of rs.scopeSpans)
      for (const s of ss.spans) {
        s.traceId = hex(s.traceId);
        s.spanId = hex(s.spanId);
        s.parentSpanId = hex(s.parentSpanId);
      }
  return o;
}

const spansOf = (posts: readonly Received[]): DecodedSpan[] =>
  posts.flatMap((p) => decode(p).resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans)));
const attr = (s: DecodedSpan, key: string): string | undefined => {
  const v = s.attributes.find((a) => a.key === key)?.value;
  return v?.stringValue !== undefined && v.stringValue !== '' ? v.stringValue : v?.intValue;
};

function toml(port: number, encoding: string, extra = '', tracing = 'flush_interval = "60s"\nbatch_size = 1000\n'): string {
  return `${BASE_TOML}${extra}[throughway.tracing]\n${tracing}otlp.enable = true\notlp.endpoint = "http://127.0.0.1:${port}/v1/traces"\notlp.encoding = "${encoding}"\n`;
}
const api = (port: number): Record<string, string> => ({
  a: apiToml({ endpoint: `http://127.0.0.1:${port}/base`, resources: [['/r/{id}', ['GET']]] }),
});

for (const [encoding, contentType] of [
  ['protobuf', 'application/x-protobuf'],
  ['json', 'application/json'],
] as const) {
  t.test(`OTLP/HTTP ${encoding}: decoded with the official schema, spans nest client → gateway → phases → backend`, async (t) => {
    const otlp = await receiver();
    const backend = await echoBackend();
    const g = await startGateway(toml(otlp.port, encoding), api(backend.port));
    t.teardown(async () => {
      await g.close();
      await backend.close();
      await otlp.close();
    });
    const res = await request(g.port, '/test/1.0.0/r/7?x=1', { headers: H('traceparent', `00-${TRACE}-${PARENT}-01`) });
    t.equal(res.status, 200);
    await g.gw.tracer?.flush();
    t.equal(otlp.posts.length, 1, 'one export request');
    t.equal(otlp.posts[0]?.url, '/v1/traces');
    t.equal(otlp.posts[0]?.contentType, contentType);
    const decoded = decode(otlp.posts[0] as Received);
    t.match(decoded.resourceSpans[0]?.resource.attributes, [{ key: 'service.name', value: { stringValue: 'throughway' } }], 'resource');
    t.equal(decoded.resourceSpans[0]?.resource.attributes.length, 1);
    t.equal(decoded.resourceSpans[0]?.scopeSpans[0]?.scope.name, 'throughway', 'scope');
    const spans = spansOf(otlp.posts);
    t.equal(spans.length, 1 + PHASE_NAMES.length + 1, 'server span, one per phase, backend span');
    t.ok(
      spans.every((s) => s.traceId === TRACE),
      "the client's trace id",
    );
    const server = spans.find((s) => s.kind === 2) as DecodedSpan;
    t.equal(server.parentSpanId, PARENT, "the gateway's SERVER span is a child of the client's span");
    t.equal(server.name, 'GET /test/1.0.0/r/{id}');
    t.equal(attr(server, 'http.method'), 'GET');
    t.equal(attr(server, 'http.status_code'), '200', 'status as an int value');
    t.equal(server.attributes.find((a) => a.key === 'http.status_code')?.value.intValue, '200');
    t.equal(attr(server, 'throughway.api'), 'Test:1.0.0');
    t.equal(attr(server, 'http.path'), '/test/1.0.0/r/7');
    t.equal(attr(server, 'client.address'), '127.0.0.1');
    const phases = spans.filter((s) => s.kind === 1);
    t.same(
      phases.map((s) => s.name),
      PHASE_NAMES,
      'INTERNAL spans, one per phase, in chain order',
    );
    t.ok(
      phases.every((s) => s.parentSpanId === server.spanId),
      'the phases are children of the SERVER span',
    );
    const client = spans.find((s) => s.kind === 3) as DecodedSpan;
    t.equal(client.name, 'backend');
    t.equal(client.parentSpanId, server.spanId, 'the backend call is a child of the SERVER span');
    t.equal(attr(client, 'server.address'), '127.0.0.1');
    t.equal(attr(client, 'server.port'), String(backend.port));
    t.same(
      fieldValues(backend.seen[0]?.headers ?? [], 'traceparent'),
      [`00-${TRACE}-${client.spanId}-01`],
      "the backend's parent is the CLIENT span",
    );
    for (const s of spans) {
      t.ok(BigInt(s.endTimeUnixNano) > BigInt(s.startTimeUnixNano), `${s.name}: end after start`);
      t.ok(BigInt(s.startTimeUnixNano) > 1_600_000_000_000_000_000n, `${s.name}: epoch nanoseconds`);
    }
    t.notOk(server.status?.code, 'no error status on success');
    t.same(g.gw.tracer?.stats(), { spansRecorded: 10, spansSent: 10, spansDropped: 0, spansQueued: 0, batchesSent: 1, batchesFailed: 0 });
  });
}

t.test('a fault: the SERVER span has an error status with the code', async (t) => {
  const otlp = await receiver();
  const g = await startGateway(toml(otlp.port, 'protobuf'), {
    a: apiToml({ endpoint: 'http://127.0.0.1:9/base', resources: [['/r', ['GET']]] }),
  });
  t.teardown(async () => {
    await g.close();
    await otlp.close();
  });
  const res = await request(g.port, '/test/1.0.0/nope');
  const code = String((JSON.parse(res.body) as { fault: { code: number } }).fault.code);
  await g.gw.tracer?.flush();
  const server = spansOf(otlp.posts).find((s) => s.kind === 2) as DecodedSpan;
  t.same(server.status, { code: 2, message: code }, 'STATUS_CODE_ERROR with the fault code');
  t.equal(attr(server, 'http.status_code'), String(res.status));
});

t.test('bounded: a full queue drops and counts; sent on the flush interval and at close; sampling as Zipkin', async (t) => {
  const otlp = await receiver();
  const zipkin = await receiver();
  const backend = await echoBackend();
  const zipkinToml = `[apim.open_tracer]\nremote_tracer.enable = true\nremote_tracer.properties.hostname = "127.0.0.1"\nremote_tracer.properties.port = ${zipkin.port}\n`;
  // 15 spans queued at most per exporter: the second call's 10 spans find 5 places.
  const g = await startGateway(
    toml(otlp.port, 'json', zipkinToml, 'flush_interval = "60s"\nbatch_size = 1000\nqueue_size = 15\n'),
    api(backend.port),
  );
  t.teardown(async () => {
    await backend.close();
    await otlp.close();
    await zipkin.close();
  });
  await request(g.port, '/test/1.0.0/r/1');
  await request(g.port, '/test/1.0.0/r/2');
  t.same(
    g.gw.tracer?.stats(),
    { spansRecorded: 20, spansSent: 0, spansDropped: 10, spansQueued: 30, batchesSent: 0, batchesFailed: 0 },
    'each exporter: 15 queued, 5 dropped',
  );
  // Not sampled (flags 00): nothing recorded, for either exporter.
  await request(g.port, '/test/1.0.0/r/3', { headers: H('traceparent', `00-${TRACE}-${PARENT}-00`) });
  t.equal(g.gw.tracer?.stats().spansRecorded, 20, 'an unsampled call records no span');
  t.equal(otlp.posts.length, 0, 'nothing sent before a flush');
  await g.close();
  t.equal(otlp.posts.length, 1, 'close() sent the queue');
  const sent = spansOf(otlp.posts);
  t.equal(sent.length, 15);
  t.notOk(
    sent.some((s) => s.traceId === TRACE),
    'no span of the unsampled call',
  );
  const zipkinIds = (JSON.parse(zipkin.posts[0]?.body.toString('utf8') ?? '[]') as { id: string }[]).map((s) => s.id).sort();
  t.same(sent.map((s) => s.spanId).sort(), zipkinIds, 'the same spans as Zipkin');

  const otlp2 = await receiver();
  const g2 = await startGateway(toml(otlp2.port, 'protobuf', '', 'flush_interval = "50ms"\n'), api(backend.port));
  t.teardown(async () => {
    await g2.close();
    await otlp2.close();
  });
  await request(g2.port, '/test/1.0.0/r/4');
  t.ok(await until(() => otlp2.posts.length === 1, 5000), 'sent on the flush interval, without a flush call');
  t.equal(spansOf(otlp2.posts).length, 10);
});
