/**
 * [apim.open_tracer] (spec 000): spans per phase and for the backend call, sent as Zipkin v2 JSON to a
 * collector stub, and W3C traceparent / tracestate propagated to the backend.
 */
import t from 'tap';
import { BASE_TOML, apiToml, closedPort, echoBackend, request, startGateway, until } from '../gateway/helpers';
import { collector, fieldValues, items } from './helpers';
import type { Span } from '../../lib/observability/tracing';
import type { ForwardDecision } from '../../lib/transport/types';
import { parseTraceParent } from '../../lib/observability/trace-context';

const PHASE_NAMES = ['route', 'cors', 'api-status', 'authentication', 'throttling', 'mediation', 'transport-headers', 'send'];
const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';
/** Raw request fields (an array: repeated names kept); node:http adds no Host to those. */
const H = (...kv: string[]): string[] => ['Host', '127.0.0.1', ...kv];

/** Remote tracer on `port`; flushes only when the test says (long interval, large batches). */
function tracerToml(port: number, extra = ''): string {
  return `${BASE_TOML}[apim.open_tracer]\nremote_tracer.enable = true\nremote_tracer.properties.hostname = "127.0.0.1"\nremote_tracer.properties.port = ${port}\n${extra}[throughway.tracing]\nflush_interval = "60s"\nbatch_size = 1000\n`;
}

const api = (port: number): Record<string, string> => ({
  a: apiToml({ endpoint: `http://127.0.0.1:${port}/base`, resources: [['/r/{id}', ['GET', 'POST']]] }),
});

t.test('an incoming traceparent: trace id kept, one span per phase, a backend span, the backend sees the new parent', async (t) => {
  const zipkin = await collector();
  const backend = await echoBackend();
  const g = await startGateway(tracerToml(zipkin.port), api(backend.port));
  t.teardown(async () => {
    await g.close();
    await backend.close();
    await zipkin.close();
  });
  const res = await request(g.port, '/test/1.0.0/r/7?x=1', {
    headers: H('traceparent', `00-${TRACE}-${PARENT}-01`, 'tracestate', 'congo=t61rcWkgMzE', 'TraceState', 'rojo=00f067aa0ba902b7'),
  });
  t.equal(res.status, 200);
  await g.gw.tracer?.flush();
  t.equal(zipkin.posts.length, 1, 'one batch');
  const post = zipkin.posts[0];
  t.equal(post?.method, 'POST');
  t.equal(post?.url, '/api/v2/spans', 'Zipkin v2 endpoint');
  t.match(post?.headers['content-type'], /^application\/json/);
  const spans = items<Span>(zipkin);
  t.equal(spans.length, 1 + PHASE_NAMES.length + 1, 'server span, one per phase, backend span');
  t.ok(
    spans.every((s) => s.traceId === TRACE),
    'trace id preserved from the incoming traceparent',
  );
  t.equal(new Set(spans.map((s) => s.id)).size, spans.length, 'span ids unique');
  t.ok(
    spans.every((s) => /^[0-9a-f]{16}$/.test(s.id) && Number.isInteger(s.timestamp) && s.timestamp > 1.6e15 && s.duration >= 1),
    'ids, µs epoch timestamps, durations',
  );
  const server = spans.find((s) => s.kind === 'SERVER') as Span;
  t.equal(server.parentId, PARENT, 'the caller span is the parent of the gateway span');
  t.not(server.id, PARENT, 'a new span id');
  t.equal(server.name, 'GET /test/1.0.0/r/{id}');
  t.same(server.localEndpoint, { serviceName: 'throughway' });
  t.match(server.tags, {
    'http.method': 'GET',
    'http.path': '/test/1.0.0/r/7',
    'http.status_code': '200',
    'throughway.api': 'Test:1.0.0',
    'throughway.resource': '/r/{id}',
  });
  t.notOk(server.tags?.error, 'no error tag on success');
  const phases = spans.filter((s) => s.kind === undefined);
  t.same(
    phases.map((s) => s.name),
    PHASE_NAMES,
    'one span per phase, in chain order',
  );
  t.ok(
    phases.every((s) => s.parentId === server.id),
    'phase spans are children of the gateway span',
  );
  t.same(
    phases.map((s) => s.tags?.outcome),
    ['continue', 'continue', 'continue', 'continue', 'continue', 'continue', 'continue', 'forward'],
  );
  t.equal(
    phases.find((s) => s.name === 'throttling')?.tags?.['throughway.enforced'],
    undefined,
    'an enforced phase carries no throughway.enforced tag (every built-in phase is enforced now)',
  );
  const client = spans.find((s) => s.kind === 'CLIENT') as Span;
  t.equal(client.name, 'backend');
  t.equal(client.parentId, server.id);
  t.same(client.remoteEndpoint, { ipv4: '127.0.0.1', port: backend.port });
  t.equal(client.tags?.['http.status_code'], '200');

  const seen = backend.seen[0]?.headers ?? [];
  t.equal(backend.seen[0]?.url, '/base/r/7?x=1');
  const tp = fieldValues(seen, 'traceparent');
  t.equal(tp.length, 1, 'one traceparent to the backend (the incoming one replaced)');
  t.equal(tp[0], `00-${TRACE}-${client.id}-01`, "trace id kept, parent id = the backend call's span, flags kept");
  t.same(fieldValues(seen, 'tracestate'), ['congo=t61rcWkgMzE,rojo=00f067aa0ba902b7'], 'tracestate passed on, fields joined');
  t.same(g.gw.tracer?.stats(), { spansRecorded: 10, spansSent: 10, spansDropped: 0, spansQueued: 0, batchesSent: 1, batchesFailed: 0 });
});

t.test('no or an invalid traceparent: a new trace; traceparent made for the backend', async (t) => {
  const zipkin = await collector();
  const backend = await echoBackend();
  const g = await startGateway(tracerToml(zipkin.port), api(backend.port));
  t.teardown(async () => {
    await g.close();
    await backend.close();
    await zipkin.close();
  });
  t.equal((await request(g.port, '/test/1.0.0/r/1')).status, 200);
  // Version 00 with an extra field, an all-zero trace id, upper-case hex: each invalid (W3C §3.2).
  const invalid = [`00-${TRACE}-${PARENT}-01-extra`, `00-${'0'.repeat(32)}-${PARENT}-01`, `00-${TRACE.toUpperCase()}-${PARENT}-01`];
  for (const v of invalid)
    t.equal((await request(g.port, '/test/1.0.0/r/2', { headers: H('traceparent', v, 'tracestate', 'a=b') })).status, 200);
  // Two traceparent fields: invalid too.
  t.equal(
    (
      await request(g.port, '/test/1.0.0/r/3', {
        headers: H('traceparent', `00-${TRACE}-${PARENT}-01`, 'traceparent', `00-${TRACE}-${PARENT}-01`),
      })
    ).status,
    200,
  );
  await g.gw.tracer?.flush();
  const spans = items<Span>(zipkin);
  const servers = spans.filter((s) => s.kind === 'SERVER');
  t.equal(servers.length, 5);
  t.ok(
    servers.every((s) => s.parentId === undefined),
    'a root span when the trace starts here',
  );
  t.ok(
    servers.every((s) => s.traceId !== TRACE && /^[0-9a-f]{32}$/.test(s.traceId)),
    'new trace ids',
  );
  t.equal(new Set(servers.map((s) => s.traceId)).size, 5, 'one trace per request');
  for (const [i, seen] of backend.seen.entries()) {
    const tp = fieldValues(seen.headers, 'traceparent');
    t.equal(tp.length, 1, `request ${i}: one traceparent`);
    const parsed = parseTraceParent(tp[0] ?? '');
    const server = servers[i] as Span;
    const client = spans.find((s) => s.kind === 'CLIENT' && s.traceId === server.traceId);
    t.same(parsed, { traceId: server.traceId, parentId: client?.id, flags: 1 }, `request ${i}: the backend continues the gateway's trace`);
    t.same(fieldValues(seen.headers, 'tracestate'), [], `request ${i}: no tracestate without a valid traceparent`);
  }
});

t.test('sampled flag off: context propagated, nothing recorded', async (t) => {
  const zipkin = await collector();
  const backend = await echoBackend();
  const g = await startGateway(tracerToml(zipkin.port), api(backend.port));
  t.teardown(async () => {
    await g.close();
    await backend.close();
    await zipkin.close();
  });
  t.equal(
    (await request(g.port, '/test/1.0.0/r/1', { headers: H('traceparent', `00-${TRACE}-${PARENT}-00`, 'tracestate', 'k=v') })).status,
    200,
  );
  const tp = parseTraceParent(fieldValues(backend.seen[0]?.headers ?? [], 'traceparent')[0] ?? '');
  t.equal(tp?.traceId, TRACE);
  t.not(tp?.parentId, PARENT);
  t.equal(tp?.flags, 0, 'not sampled, as the caller decided');
  t.same(fieldValues(backend.seen[0]?.headers ?? [], 'tracestate'), ['k=v']);
  t.equal((await request(g.port, '/test/1.0.0/r/1', { headers: H('traceparent', `00-${TRACE}-${PARENT}-00`) })).status, 200);
  const again = parseTraceParent(fieldValues(backend.seen[1]?.headers ?? [], 'traceparent')[0] ?? '');
  t.same([again?.traceId, again?.flags], [TRACE, 0]);
  t.ok(
    again !== undefined && again.parentId !== PARENT && again.parentId !== tp?.parentId,
    'each unsampled call gets a parent id of its own',
  );
  await g.gw.tracer?.flush();
  t.equal(zipkin.posts.length, 0);
  t.equal(g.gw.tracer?.stats().spansRecorded, 0);
});

t.test('a gateway fault: the route span says fault, the chain stops, no backend span', async (t) => {
  const zipkin = await collector();
  const backend = await echoBackend();
  const g = await startGateway(tracerToml(zipkin.port), api(backend.port));
  t.teardown(async () => {
    await g.close();
    await backend.close();
    await zipkin.close();
  });
  const res = await request(g.port, '/nowhere');
  t.equal(res.status, 404);
  await g.gw.tracer?.flush();
  const spans = items<Span>(zipkin);
  t.same(
    spans.map((s) => s.name),
    ['GET unmatched', 'route'],
  );
  t.equal(spans[0]?.tags?.error, String(res.json().fault.code));
  t.equal(spans[0]?.tags?.['http.status_code'], '404');
  t.same(spans[1]?.tags, { outcome: 'fault', error: String(res.json().fault.code) });
});

t.test('a transport fault: the backend span carries the code and its state', async (t) => {
  const zipkin = await collector();
  const down = await closedPort();
  const g = await startGateway(tracerToml(zipkin.port), api(down));
  t.teardown(async () => {
    await g.close();
    await zipkin.close();
  });
  const res = await request(g.port, '/test/1.0.0/r/1');
  t.equal(res.status, 502);
  await g.gw.tracer?.flush();
  const spans = items<Span>(zipkin);
  const client = spans.find((s) => s.kind === 'CLIENT');
  t.equal(client?.tags?.error, '101503 (101503+0)');
  t.equal(spans.find((s) => s.kind === 'SERVER')?.tags?.error, '101503');
});

t.test('collector down: requests unaffected, spans dropped and counted, one warning', async (t) => {
  const down = await closedPort();
  const backend = await echoBackend();
  const g = await startGateway(tracerToml(down), api(backend.port));
  t.teardown(async () => {
    await g.close();
    await backend.close();
  });
  for (let i = 0; i < 3; i++) t.equal((await request(g.port, '/test/1.0.0/r/1')).status, 200);
  t.equal(backend.seen.length, 3);
  t.equal(g.gw.tracer?.stats().spansQueued, 30, 'queued, not sent inline');
  await g.gw.tracer?.flush();
  t.equal((await request(g.port, '/test/1.0.0/r/1')).status, 200);
  await g.gw.tracer?.flush();
  t.same(g.gw.tracer?.stats(), { spansRecorded: 40, spansSent: 0, spansDropped: 40, spansQueued: 0, batchesSent: 0, batchesFailed: 2 });
  t.equal(g.logger.lines.filter((l) => l.event === 'tracer_collector_down').length, 1, 'one line, not one per batch');
});

t.test('bounded queue: overflow dropped and counted; a collector back up is logged', async (t) => {
  const zipkin = await collector(503);
  const backend = await echoBackend();
  const g = await startGateway(
    tracerToml(zipkin.port).replace('batch_size = 1000', 'batch_size = 1000\nqueue_size = 4'),
    api(backend.port),
  );
  t.teardown(async () => {
    await g.close();
    await backend.close();
    await zipkin.close();
  });
  t.equal((await request(g.port, '/test/1.0.0/r/1')).status, 200);
  t.match(g.gw.tracer?.stats(), { spansRecorded: 10, spansQueued: 4, spansDropped: 6 });
  await g.gw.tracer?.flush();
  t.match(g.gw.tracer?.stats(), { spansSent: 0, spansDropped: 10, batchesFailed: 1 }, 'a 503 answer fails the batch');
  zipkin.status = 202;
  t.equal((await request(g.port, '/test/1.0.0/r/1')).status, 200);
  await g.gw.tracer?.flush();
  t.match(g.gw.tracer?.stats(), { spansSent: 4, spansDropped: 16, batchesSent: 1 });
  t.ok(g.logger.lines.some((l) => l.event === 'tracer_collector_up'));
});

t.test('batches: a full batch is sent without waiting for the timer; close sends the rest', async (t) => {
  const zipkin = await collector();
  const backend = await echoBackend();
  const g = await startGateway(tracerToml(zipkin.port).replace('batch_size = 1000', 'batch_size = 15'), api(backend.port));
  t.teardown(async () => {
    await backend.close();
    await zipkin.close();
  });
  t.equal((await request(g.port, '/test/1.0.0/r/1')).status, 200);
  t.equal((await request(g.port, '/test/1.0.0/r/2')).status, 200);
  t.ok(await until(() => zipkin.posts.length === 1), 'a full batch left on its own (the timer is 60 s)');
  t.equal(items(zipkin).length, 15);
  await g.close();
  t.equal(items(zipkin).length, 20, 'close flushed the rest');
  t.same(
    zipkin.posts.map((p) => (p.body as unknown[]).length),
    [15, 5],
  );
});

t.test('log tracer: one line per phase, one for the backend call, one for the request', async (t) => {
  const backend = await echoBackend();
  // What an exchange's request holds in its `call` field once the gateway's observer has read it.
  const left: unknown[] = [];
  const g = await startGateway(
    `${BASE_TOML}[apim.open_tracer]\nlog_tracer.enable = true\n`,
    api(backend.port),
    {},
    { observe: { onExchange: (r) => left.push(r.request?.call) } },
  );
  t.teardown(async () => {
    await g.close();
    await backend.close();
  });
  t.equal((await request(g.port, '/test/1.0.0/r/1', { headers: H('traceparent', `00-${TRACE}-${PARENT}-01`) })).status, 200);
  t.ok(await until(() => left.length === 1), 'the exchange ended');
  t.same(left, [undefined], 'the call was taken out of its request (SourceRequest.call): an idle connection holds none');
  const lines = g.logger.lines.filter((l) => l.event === 'span');
  t.same(
    lines.map((l) => l.name),
    ['GET /test/1.0.0/r/{id}', ...PHASE_NAMES, 'backend'],
  );
  t.ok(lines.every((l) => l.traceId === TRACE && typeof l.durationUs === 'number' && typeof l.timestampUs === 'number'));
  t.equal(lines[0]?.parentId, PARENT);
  t.equal(lines[0]?.kind, 'SERVER');
  t.equal(lines.at(-1)?.kind, 'CLIENT');
  t.ok(g.gw.tracer !== undefined);
  t.same(
    g.gw.tracer?.stats(),
    { spansRecorded: 10, spansSent: 0, spansDropped: 0, spansQueued: 0, batchesSent: 0, batchesFailed: 0 },
    'no remote tracer: nothing queued',
  );
});

t.test('tracing off: no tracer, the backend gets the fields as sent', async (t) => {
  const backend = await echoBackend();
  const g = await startGateway(BASE_TOML, api(backend.port));
  t.teardown(async () => {
    await g.close();
    await backend.close();
  });
  t.equal(g.gw.tracer, undefined);
  await request(g.port, '/test/1.0.0/r/1');
  await request(g.port, '/test/1.0.0/r/1', { headers: H('traceparent', `00-${TRACE}-${PARENT}-01`) });
  t.same(fieldValues(backend.seen[0]?.headers ?? [], 'traceparent'), [], 'none added');
  t.same(fieldValues(backend.seen[1]?.headers ?? [], 'traceparent'), [`00-${TRACE}-${PARENT}-01`], 'passed through unchanged');
  t.notOk(g.logger.lines.some((l) => l.event === 'span'));
  // The router itself: the client's fields go out as parsed (no array rebuilt, no trace field added).
  const req = {
    method: 'GET',
    url: '/test/1.0.0/r/1',
    headers: ['Host', 'x'],
    versionMajor: 1,
    versionMinor: 1,
    remoteAddress: '127.0.0.1',
    remotePort: 1,
    secure: false,
    connectionId: 1,
    requestNumber: 1,
    contentLength: -1,
    chunked: false,
  };
  const d = g.gw.route(req) as ForwardDecision;
  t.ok('target' in d, 'forwarded');
  t.equal(d.headers, undefined, 'tracing off: the fields are not copied');
});

t.test('tracing on: the router builds the outgoing fields with the traceparent', async (t) => {
  const backend = await echoBackend();
  const g = await startGateway(`${BASE_TOML}[apim.open_tracer]\nlog_tracer.enable = true\n`, api(backend.port));
  t.teardown(async () => {
    await g.close();
    await backend.close();
  });
  const req = {
    method: 'GET',
    url: '/test/1.0.0/r/1',
    headers: ['Host', 'x'],
    versionMajor: 1,
    versionMinor: 1,
    remoteAddress: '127.0.0.1',
    remotePort: 1,
    secure: false,
    connectionId: 1,
    requestNumber: 1,
    contentLength: -1,
    chunked: false,
  };
  const d = g.gw.route(req) as ForwardDecision;
  t.equal(d.headers?.length, 4);
  t.equal(d.headers?.[2], 'traceparent');
  t.ok(parseTraceParent(d.headers?.[3] ?? '') !== undefined);
  t.same(req.headers, ['Host', 'x'], 'the request fields are not edited');
  // The transport's requests keep their call in their own slot (SourceRequest.call); one made by hand
  // without it, here frozen, has its call kept apart.
  const frozen = Object.freeze({ ...req, headers: Object.freeze(['Host', 'x']) });
  const f = g.gw.route(frozen) as ForwardDecision;
  t.equal(f.headers?.[2], 'traceparent', 'a frozen request is routed too');
});
