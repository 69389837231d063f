/**
 * [apim.analytics] (spec 000, spec 002 part 6): one event per request, published in batches to HTTP
 * receivers (url_group, failover or loadbalance) or a JSON-lines file; tcp:// and ssl:// receivers warned
 * about; bounded buffer with counted drops; flushed on close.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import t from 'tap';
import { BASE_TOML, apiToml, closedPort, echoBackend, memoryLogger, rawRequest, request, startGateway } from '../gateway/helpers';
import { collector, items, type Collector } from './helpers';
import { Analytics, buildEvent, type AnalyticsEvent } from '../../lib/observability/analytics';
import type { AnalyticsSettings } from '../../lib/observability/settings';
import type { CallContext } from '../../lib/gateway/phases';
import type { AuthContext } from '../../lib/security/auth-context';
import type { ExchangeRecord } from '../../lib/transport/types';

/** Analytics on, receivers as given; flushes only when the test says (long interval, large batches). */
function analyticsToml(groups: readonly { urls: readonly string[]; type?: string }[], extra = '', th = ''): string {
  let s = `${BASE_TOML}[apim.analytics]\nenable = true\nreceiver_username = "pub"\nreceiver_password = "s3cret"\n${extra}`;
  for (const g of groups)
    s += `[[apim.analytics.url_group]]\nanalytics_url = ${JSON.stringify(g.urls)}\n${g.type !== undefined ? `type = "${g.type}"\n` : ''}`;
  return `${s}[throughway.analytics]\nflush_interval = "60s"\n${th.includes('batch_size') ? '' : 'batch_size = 1000\n'}${th}`;
}

const api = (port: number): Record<string, string> => ({
  a: apiToml({
    name: 'Pizza',
    context: '/pizza',
    version: '2.0.0',
    endpoint: `http://127.0.0.1:${port}/base`,
    resources: [['/menu/{id}', ['GET', 'POST']]],
  }),
});
const paths = (c: Collector): string[] =>
  items<AnalyticsEvent>(c).map((e) => (e.apiResourceTemplate === null ? '?' : `${e.apiMethod} ${e.proxyResponseCode}`));

t.test('one event per request, fields from the call, POSTed as a JSON array with the receiver credentials', async (t) => {
  const rcv = await collector(200);
  const backend = await echoBackend();
  const g = await startGateway(analyticsToml([{ urls: [`${rcv.url}/events`] }]), api(backend.port));
  t.teardown(async () => {
    await g.close();
    await backend.close();
    await rcv.close();
  });
  t.equal((await request(g.port, '/pizza/2.0.0/menu/3?q=1', { headers: { 'User-Agent': 'probe/1.0' } })).status, 200);
  const nf = await request(g.port, '/nowhere');
  t.equal(nf.status, 404);
  t.equal((await request(g.port, '/pizza/2.0.0/menu/4', { method: 'POST', body: 'abcdef' })).status, 200);
  t.equal(rcv.posts.length, 0, 'nothing sent inline');
  t.match(g.gw.analytics?.stats(), { eventsRecorded: 3, eventsQueued: 3, eventsSent: 0 });
  await g.gw.analytics?.flush();
  t.equal(rcv.posts.length, 1, 'one batch');
  const post = rcv.posts[0];
  t.equal(post?.method, 'POST');
  t.equal(post?.url, '/events');
  t.match(post?.headers['content-type'], /^application\/json/);
  t.equal(post?.headers.authorization, `Basic ${Buffer.from('pub:s3cret').toString('base64')}`, 'receiver_username / receiver_password');
  const ev = items<AnalyticsEvent>(rcv);
  t.equal(ev.length, 3);
  const [ok, fault, posted] = ev as [AnalyticsEvent, AnalyticsEvent, AnalyticsEvent];
  t.match(ok, {
    gatewayHost: 'localhost',
    apiName: 'Pizza',
    apiVersion: '2.0.0',
    apiContext: '/pizza/2.0.0',
    apiResourceTemplate: '/menu/{id}',
    apiMethod: 'GET',
    destination: `http://127.0.0.1:${backend.port}/base`,
    keyType: 'PRODUCTION',
    applicationId: null,
    applicationName: null,
    userName: null,
    userIp: '127.0.0.1',
    userAgent: 'probe/1.0',
    proxyResponseCode: 200,
    targetResponseCode: 200,
    errorType: null,
    errorCode: null,
    requestSize: 0,
    retries: 0,
  });
  t.ok(
    ok.responseLatency >= 0 && ok.backendLatency !== null && ok.backendLatency >= 0 && ok.backendLatency <= ok.responseLatency,
    'latencies: total and backend',
  );
  t.ok(Math.abs(Date.parse(ok.requestTimestamp) - Date.now()) < 60_000, 'an ISO timestamp');
  t.match(ok.correlationId, /^[0-9a-f-]{36}$/);
  t.notOk('responseSize' in ok, 'no response size unless publish_response_size');
  t.match(fault, {
    apiName: null,
    apiContext: null,
    keyType: null,
    destination: null,
    proxyResponseCode: 404,
    targetResponseCode: null,
    errorType: 'gateway',
    errorCode: nf.json().fault.code,
    backendLatency: null,
  });
  t.match(posted, { apiMethod: 'POST', requestSize: 6, proxyResponseCode: 200 });
  t.same(g.gw.analytics?.stats(), {
    eventsRecorded: 3,
    eventsSent: 3,
    eventsDropped: 0,
    eventsQueued: 0,
    batchesSent: 1,
    batchesFailed: 0,
  });
});

t.test('publish_response_size; transport faults; the trace id as correlation id when tracing', async (t) => {
  const rcv = await collector(200);
  const backend = await echoBackend();
  const down = await closedPort();
  const apis = {
    ...api(backend.port),
    b: apiToml({ name: 'Down', context: '/down', endpoint: `http://127.0.0.1:${down}`, resources: [['/x', ['GET']]] }),
  };
  const g = await startGateway(
    analyticsToml([{ urls: [rcv.url] }], 'publish_response_size = true\n[apim.open_tracer]\nlog_tracer.enable = true\n'),
    apis,
  );
  t.teardown(async () => {
    await g.close();
    await backend.close();
    await rcv.close();
  });
  const ok = await request(g.port, '/pizza/2.0.0/menu/1', {
    headers: { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' },
  });
  t.equal(ok.status, 200);
  const bad = await request(g.port, '/down/1.0.0/x');
  t.equal(bad.status, 502);
  await g.gw.analytics?.flush();
  const [a, b] = items<AnalyticsEvent>(rcv);
  t.equal(a?.responseSize, Buffer.byteLength(ok.body), 'response size in bytes');
  t.equal(a?.correlationId, '4bf92f3577b34da6a3ce929d0e0e4736', 'the trace id');
  t.match(b, {
    apiName: 'Down',
    proxyResponseCode: 502,
    targetResponseCode: null,
    errorType: 'transport',
    errorCode: 101503,
    responseSize: Buffer.byteLength(bad.body),
  });
});

t.test('failover: the first receiver down, events go to the second, in order; one warning', async (t) => {
  const down = await closedPort();
  const second = await collector(200);
  const backend = await echoBackend();
  const g = await startGateway(
    analyticsToml([{ urls: [`http://user:pw-in-url@127.0.0.1:${down}`, second.url], type: 'failover' }], '', 'batch_size = 2\n'),
    api(backend.port),
  );
  t.teardown(async () => {
    await g.close();
    await backend.close();
    await second.close();
  });
  for (let i = 1; i <= 5; i++)
    t.equal((await request(g.port, `/pizza/2.0.0/menu/${i}`, { method: i % 2 === 0 ? 'POST' : 'GET' })).status, 200);
  await g.gw.analytics?.flush();
  const ev = items<AnalyticsEvent>(second);
  t.same(
    ev.map((e) => e.apiMethod),
    ['GET', 'POST', 'GET', 'POST', 'GET'],
    'every event, in request order',
  );
  t.same(
    second.posts.map((p) => (p.body as unknown[]).length),
    [2, 2, 1],
    'in batches of batch_size',
  );
  t.match(g.gw.analytics?.stats(), { eventsSent: 5, eventsDropped: 0, eventsQueued: 0 });
  const warnings = g.logger.lines.filter((l) => l.event === 'analytics_receiver_down');
  t.equal(warnings.length, 1, 'one line for the receiver that is down');
  t.equal(warnings[0]?.url, `http://****@127.0.0.1:${down}`, 'credentials in the URL masked');
  const all = JSON.stringify(g.logger.lines);
  t.notOk(all.includes('pw-in-url') || all.includes('s3cret'), 'no receiver secret in any log line');
});

t.test('failover: both up, the first receiver takes everything', async (t) => {
  const first = await collector(200);
  const second = await collector(200);
  const backend = await echoBackend();
  const g = await startGateway(
    analyticsToml([{ urls: [first.url, second.url], type: 'failover' }], '', 'batch_size = 1\n'),
    api(backend.port),
  );
  t.teardown(async () => {
    await g.close();
    await backend.close();
    await first.close();
    await second.close();
  });
  for (let i = 0; i < 3; i++) await request(g.port, '/pizza/2.0.0/menu/1');
  await g.gw.analytics?.flush();
  t.equal(items(first).length, 3);
  t.equal(second.posts.length, 0);
});

t.test('loadbalance: batches spread over the receivers; a receiver down hands its batch on', async (t) => {
  const a = await collector(200);
  const b = await collector(200);
  const backend = await echoBackend();
  const g = await startGateway(analyticsToml([{ urls: [a.url, b.url], type: 'loadbalance' }], '', 'batch_size = 1\n'), api(backend.port));
  t.teardown(async () => {
    await g.close();
    await backend.close();
    await a.close();
  });
  for (let i = 1; i <= 6; i++) await request(g.port, `/pizza/2.0.0/menu/${i}`, { method: i === 6 ? 'POST' : 'GET' });
  await g.gw.analytics?.flush();
  t.equal(a.posts.length, 3, 'half the batches');
  t.equal(b.posts.length, 3, 'the other half');
  await b.close();
  for (let i = 0; i < 4; i++) await request(g.port, '/pizza/2.0.0/menu/1', { method: 'POST' });
  await g.gw.analytics?.flush();
  t.equal(items(a).length, 7, 'the batches meant for the receiver that went away reached the other one');
  t.match(g.gw.analytics?.stats(), { eventsSent: 10, eventsDropped: 0 });
  t.same(
    items<AnalyticsEvent>(a)
      .slice(3)
      .map((e) => e.apiMethod),
    ['POST', 'POST', 'POST', 'POST'],
  );
});

t.test('every url_group receives every event', async (t) => {
  const a = await collector(200);
  const b = await collector(200);
  const backend = await echoBackend();
  const g = await startGateway(analyticsToml([{ urls: [a.url] }, { urls: [b.url] }]), api(backend.port));
  t.teardown(async () => {
    await g.close();
    await backend.close();
    await a.close();
    await b.close();
  });
  await request(g.port, '/pizza/2.0.0/menu/1');
  await request(g.port, '/nowhere');
  await g.gw.analytics?.flush();
  t.same(paths(a), ['GET 200', '?']);
  t.same(paths(b), ['GET 200', '?']);
  t.match(g.gw.analytics?.stats(), { eventsRecorded: 2, eventsSent: 4 }, 'counted per delivery');
});

t.test('all receivers down: bounded buffer, drops counted, requests unaffected; retried after retry_interval', async (t) => {
  const down = await closedPort();
  const backend = await echoBackend();
  const g = await startGateway(
    analyticsToml([{ urls: [`http://127.0.0.1:${down}`] }], '', 'buffer_size = 3\nretry_interval = 0\n'),
    api(backend.port),
  );
  t.teardown(async () => {
    await g.close();
    await backend.close();
  });
  for (let i = 0; i < 5; i++) t.equal((await request(g.port, '/pizza/2.0.0/menu/1')).status, 200);
  t.match(g.gw.analytics?.stats(), { eventsRecorded: 5, eventsQueued: 3, eventsDropped: 2 });
  await g.gw.analytics?.flush();
  t.match(g.gw.analytics?.stats(), { eventsQueued: 3, eventsSent: 0, batchesFailed: 1 }, 'a failed batch stays for the next attempt');
  await g.gw.analytics?.flush();
  t.match(g.gw.analytics?.stats(), { eventsQueued: 3, batchesFailed: 2 }, 'retry_interval 0: tried at every flush');
  await g.close();
  t.match(g.gw.analytics?.stats(), { eventsQueued: 0, eventsDropped: 5, eventsSent: 0 }, 'close counts what could not be sent');
});

t.test('a receiver that refuses the batch (400): dropped and counted, the stream goes on', async (t) => {
  const rcv = await collector(400);
  const backend = await echoBackend();
  const g = await startGateway(analyticsToml([{ urls: [rcv.url] }], '', 'batch_size = 1\n'), api(backend.port));
  t.teardown(async () => {
    await g.close();
    await backend.close();
    await rcv.close();
  });
  await request(g.port, '/pizza/2.0.0/menu/1');
  await request(g.port, '/pizza/2.0.0/menu/2');
  await g.gw.analytics?.flush();
  t.match(g.gw.analytics?.stats(), { eventsDropped: 2, eventsQueued: 0, batchesFailed: 2 });
  t.equal(g.logger.lines.filter((l) => l.event === 'analytics_batch_refused').length, 2);
});

t.test('close flushes the buffer', async (t) => {
  const rcv = await collector(200);
  const backend = await echoBackend();
  const g = await startGateway(analyticsToml([{ urls: [rcv.url] }]), api(backend.port));
  t.teardown(async () => {
    await backend.close();
    await rcv.close();
  });
  for (let i = 0; i < 4; i++) await request(g.port, '/pizza/2.0.0/menu/1');
  t.equal(rcv.posts.length, 0);
  await g.close();
  t.equal(items(rcv).length, 4);
  t.match(g.gw.analytics?.stats(), { eventsSent: 4, eventsDropped: 0 });
});

t.test('file receiver: JSON lines; tcp:// and ssl:// receivers warned about once and not used', async (t) => {
  const backend = await echoBackend();
  const g = await startGateway(
    analyticsToml([{ urls: ['tcp://localhost:7612', 'ssl://localhost:7712'] }], '', 'file = "analytics/events.jsonl"\n'),
    api(backend.port),
  );
  t.teardown(() => backend.close());
  await request(g.port, '/pizza/2.0.0/menu/1');
  await request(g.port, '/nowhere');
  await g.gw.analytics?.flush();
  await request(g.port, '/pizza/2.0.0/menu/2', { method: 'POST' });
  const file = path.join(g.dir, 'analytics', 'events.jsonl');
  const warn = g.logger.lines.filter((l) => l.event === 'analytics_receiver_unsupported');
  t.equal(warn.length, 1, 'one warning');
  t.same(warn[0]?.urls, ['tcp://localhost:7612', 'ssl://localhost:7712']);
  t.equal(warn[0]?.level, 'warn');
  t.notOk(
    g.logger.lines.some((l) => l.event === 'analytics_no_receiver'),
    'the file is a receiver',
  );
  await g.gw.close();
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  fs.rmSync(g.dir, { recursive: true, force: true });
  t.equal(lines.pop(), '', 'newline-terminated');
  t.equal(lines.length, 3, 'one line per event, the last flushed on close');
  const ev = lines.map((l) => JSON.parse(l) as AnalyticsEvent);
  t.same(
    ev.map((e) => [e.apiMethod, e.proxyResponseCode]),
    [
      ['GET', 200],
      ['GET', 404],
      ['POST', 200],
    ],
  );
  t.match(g.gw.analytics?.stats(), { eventsRecorded: 3, eventsSent: 3, eventsDropped: 0 });
});

t.test('no url_group and no file: the default tcp:// receiver is named, events are dropped and counted', async (t) => {
  const backend = await echoBackend();
  const g = await startGateway(`${BASE_TOML}[apim.analytics]\nenable = true\n`, api(backend.port));
  t.teardown(async () => {
    await g.close();
    await backend.close();
  });
  t.equal((await request(g.port, '/pizza/2.0.0/menu/1')).status, 200);
  t.same(g.logger.lines.find((l) => l.event === 'analytics_receiver_unsupported')?.urls, ['tcp://localhost:7612']);
  t.ok(g.logger.lines.some((l) => l.event === 'analytics_no_receiver'));
  t.match(g.gw.analytics?.stats(), { eventsRecorded: 1, eventsDropped: 1 });
});

t.test('a request the transport refuses before routing still makes an event', async (t) => {
  const rcv = await collector(200);
  const g = await startGateway(analyticsToml([{ urls: [rcv.url] }]), api(1));
  t.teardown(async () => {
    await g.close();
    await rcv.close();
  });
  const r = await rawRequest(g.port, 'GET /pizza/2.0.0/menu/1 HTTP/1.1\r\n\r\n');
  t.equal(r.status, 400);
  await g.gw.analytics?.flush();
  t.match(items<AnalyticsEvent>(rcv), [
    {
      apiName: null,
      apiMethod: 'GET',
      proxyResponseCode: 400,
      errorType: 'transport',
      errorCode: r.json().fault.code,
      destination: null,
      keyType: null,
    },
  ]);
});

t.test('analytics off: no publisher, no events', async (t) => {
  const backend = await echoBackend();
  const g = await startGateway(BASE_TOML, api(backend.port));
  t.teardown(async () => {
    await g.close();
    await backend.close();
  });
  t.equal(g.gw.analytics, undefined);
  t.equal((await request(g.port, '/pizza/2.0.0/menu/1')).status, 200);
});

t.test('buildEvent: application, key type and user from the authentication context', async (t) => {
  const auth: AuthContext = {
    kind: 'oauth2',
    tokenId: 'jti-1',
    issuer: 'https://km',
    consumerKey: 'ck',
    applicationId: 'app-1',
    applicationName: 'MyApp',
    applicationTier: 'Unlimited',
    subscriber: 'alice',
    subscriptionTier: 'Gold',
    keyType: 'SANDBOX',
    userType: 'APPLICATION_USER',
    endUser: 'bob@carbon.super',
    scopes: [],
    claims: {},
    expiresAt: 0,
  };
  const ctx = {
    api: { def: { name: 'A', version: 'v1' }, path: '/a/v1' },
    resource: { def: { path: '/x' } },
    endpoint: { def: { url: 'http://b:1' } },
    keyType: 'SANDBOX',
    auth,
    trace: undefined,
  } as unknown as CallContext;
  const r: ExchangeRecord = {
    method: 'GET',
    url: '/a/v1/x',
    httpVersion: '1.1',
    remoteAddress: '10.0.0.9',
    connectionId: 1,
    requestNumber: 1,
    status: 429,
    requestBytes: 0,
    responseBytes: 80,
    durationMs: 2.5,
    upstreamMs: -1,
    target: undefined,
    fault: undefined,
    faultCode: 900800,
    retries: 0,
  };
  const settings = { publishResponseSize: true, gatewayHost: 'gw1' } as AnalyticsSettings;
  const e = buildEvent(ctx, r, settings, Date.UTC(2026, 0, 1, 0, 0, 1));
  t.match(e, {
    requestTimestamp: '2026-01-01T00:00:00.998Z',
    gatewayHost: 'gw1',
    apiName: 'A',
    keyType: 'SANDBOX',
    applicationId: 'app-1',
    applicationName: 'MyApp',
    applicationOwner: 'alice',
    subscriptionTier: 'Gold',
    userName: 'bob@carbon.super',
    userType: 'APPLICATION_USER',
    userAgent: null,
    errorType: 'gateway',
    errorCode: 900800,
    backendLatency: null,
    responseLatency: 2.5,
    responseSize: 80,
  });
  t.notOk(JSON.stringify(e).includes('jti-1') || JSON.stringify(e).includes('"ck"'), 'no token id or consumer key in the event');
  const none = buildEvent(undefined, { ...r, status: 400, faultCode: undefined, fault: undefined }, settings, 0);
  t.match(none, { apiName: null, keyType: null, applicationId: null, errorCode: null, proxyResponseCode: 400 });

  // A closed publisher drops (and counts) what arrives late.
  const logger = memoryLogger();
  const pub = new Analytics(
    {
      ...settings,
      enabled: true,
      groups: [],
      username: 'u',
      password: 'p',
      file: undefined,
      batchSize: 1,
      flushInterval: 1000,
      bufferSize: 1,
      sendTimeout: 100,
      retryInterval: 0,
    },
    { logger },
  );
  await pub.close();
  pub.record(ctx, r);
  t.match(pub.stats(), { eventsRecorded: 1, eventsDropped: 1 });
});
