/**
 * The phase chain: the reference's order, fixed; synchronous (no Promise) while every phase is; a phase
 * returning a Promise makes only the rest of that call asynchronous; no phase edits the request's fields.
 */
import t from 'tap';
import { CallContext, PHASES, hasDotSegment, runChain, type Phase } from '../../lib/gateway/phases';
import { GatewayRuntime } from '../../lib/gateway/runtime';
import { compileApi, RouteTable } from '../../lib/gateway/router';
import { validateApi } from '../../lib/gateway/apis';
import { CorsPolicy, DEFAULT_CORS } from '../../lib/gateway/cors';
import { HeaderRules } from '../../lib/gateway/transport-headers';
import { EndpointRuntime } from '../../lib/gateway/endpoints';
import { ApiCode, fault } from '../../lib/faults';
import { targetFromUrl, type ForwardDecision, type LocalResponse, type SourceRequest } from '../../lib/transport/types';

function runtime(): GatewayRuntime {
  const r = validateApi(
    {
      name: 'x',
      context: '/x',
      version: '1',
      auth: 'none',
      endpoints: { production: 'http://127.0.0.1:9/base' },
      resources: [{ path: '/r/{id}', methods: ['GET'] }],
    },
    '',
  );
  if (r.api === undefined) throw new Error('invalid');
  const def = r.api.endpoints.production;
  if (def === undefined) throw new Error('no endpoint');
  const api = compileApi(r.api, {
    cors: new CorsPolicy(DEFAULT_CORS),
    production: new EndpointRuntime(def, targetFromUrl(def.url)),
    sandbox: undefined,
    withDefault: false,
  });
  const headers = new HeaderRules({
    enabled: false,
    removeRequestHeaders: false,
    preserveRequestHeaders: [],
    excludeRequestHeaders: [],
    excludeResponseHeaders: [],
    outboundAuthHeader: false,
    authHeader: 'Authorization',
  });
  return new GatewayRuntime(new RouteTable([api]), new CorsPolicy(DEFAULT_CORS), headers, undefined, new WeakMap());
}

function req(url: string, headers: readonly string[] = ['Host', 'h']): SourceRequest {
  return Object.freeze({
    method: 'GET',
    url,
    headers: Object.freeze([...headers]),
    versionMajor: 1,
    versionMinor: 1,
    remoteAddress: '127.0.0.1',
    remotePort: 1,
    secure: false,
    connectionId: 1,
    requestNumber: 1,
    contentLength: -1,
    chunked: false,
  });
}

t.test("the chain is the reference's order; two phases are placeholders", async (t) => {
  t.same(
    PHASES.map((p) => p.name),
    ['route', 'cors', 'api-status', 'authentication', 'throttling', 'mediation', 'transport-headers', 'send'],
  );
  t.same(
    PHASES.filter((p) => !p.enforced).map((p) => p.name),
    [],
    'every phase of the chain is enforced (Steps 5-7)',
  );
  t.ok(Object.isFrozen(PHASES));
});

t.test('synchronous chain: a plain decision, no Promise; request fields untouched', async (t) => {
  const rt = runtime();
  const r = req('/x/1/r/7?q=%20', ['Host', 'h', 'Authorization', 'Bearer t', 'Accept', '*/*']);
  const d = runChain(new CallContext(r, rt));
  t.notOk(d instanceof Promise);
  const f = d as ForwardDecision;
  t.equal(f.path, '/base/r/7?q=%20');
  t.same(f.headers, ['Host', 'h', 'Accept', '*/*'], 'a new array without the token header');
  t.same(r.headers, ['Host', 'h', 'Authorization', 'Bearer t', 'Accept', '*/*'], "the request's array is the same");
  const plain = runChain(new CallContext(req('/x/1/r/7'), rt)) as ForwardDecision;
  t.equal(plain.headers, undefined, 'nothing to change: no copy at all');
  t.same(plain.responseHeaders, ['Access-Control-Allow-Origin', '*']);
});

t.test('a phase returning a Promise makes the rest asynchronous; a fault stops the chain', async (t) => {
  const rt = runtime();
  const order: string[] = [];
  const asyncAuth: Phase = {
    name: 'authentication',
    enforced: true,
    run: async (ctx) => {
      order.push('auth');
      ctx.addRequestHeaders = ['X-JWT-Assertion', 'jwt'];
      return undefined;
    },
  };
  const spy = (p: Phase): Phase => ({
    ...p,
    run: (ctx) => {
      order.push(p.name);
      return p.run(ctx);
    },
  });
  const phases = PHASES.map((p) => (p.name === 'authentication' ? asyncAuth : spy(p)));
  const d = runChain(new CallContext(req('/x/1/r/1'), rt), phases);
  t.ok(d instanceof Promise);
  const f = (await d) as ForwardDecision;
  t.same(order, ['route', 'cors', 'api-status', 'auth', 'throttling', 'mediation', 'transport-headers', 'send']);
  t.same(f.headers, ['Host', 'h', 'X-JWT-Assertion', 'jwt'], 'fields added by an earlier phase reach the backend');

  order.length = 0;
  const throttled: Phase = {
    name: 'throttling',
    enforced: true,
    run: () => ({ fault: fault(ApiCode.THROTTLED_OUT, { retryAfterMs: 2000 }) }),
  };
  const stopped = runChain(
    new CallContext(req('/x/1/r/1', ['Origin', 'https://o.example']), rt),
    PHASES.map((p) => (p.name === 'throttling' ? throttled : spy(p))),
  ) as LocalResponse;
  t.same(order, ['route', 'cors', 'api-status', 'authentication', 'mediation'].slice(0, 4), 'nothing after the fault runs');
  t.equal(stopped.status, 429);
  t.equal(stopped.faultCode, 900800);
  const h = stopped.headers ?? [];
  t.equal(h[h.indexOf('Retry-After') + 1], '2');
  t.equal(h[h.indexOf('Access-Control-Allow-Origin') + 1], '*', "the call's CORS fields are on its faults");
});

t.test('faults raised before the CORS phase still carry CORS fields', async (t) => {
  const d = runChain(new CallContext(req('/unknown', ['Origin', 'https://o.example']), runtime())) as LocalResponse;
  t.equal(d.status, 404);
  t.same(d.headers?.slice(-2), ['Access-Control-Allow-Origin', '*']);
});

t.test('dot segments', async (t) => {
  for (const p of ['/a/..', '/a/../b', '/./a', '/a/.', '/a/%2e%2e/b', '/a/%2E/b', '/a/.%2e']) t.ok(hasDotSegment(p), p);
  for (const p of ['/a/b', '/a/.b', '/a/b.', '/a/..b', '/1.0.0/x', '/a/%2ex', '/a%2e']) t.notOk(hasDotSegment(p), p);
});
