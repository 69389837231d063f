/**
 * The fault table against the spec (spec 002, part 7), and every code's status and body as rendered:
 * the JSON fault shape, WWW-Authenticate for authentication faults, Retry-After and nextAccessTime for
 * throttling, Allow for 405. Transport faults render through the same function, keyed by reason.
 */
import t from 'tap';
import {
  ApiCode,
  GATEWAY_FAULTS,
  GatewayOwnCode,
  fault,
  faultDef,
  gatewayFacts,
  ownCodes,
  renderFacts,
  transportFacts,
  type GatewayCode,
} from '../../lib/faults';
import { FAULT_KINDS, OwnCode, makeFault, type FaultReason } from '../../lib/transport/codes';
import { ProtocolState } from '../../lib/transport/states';

/** The spec's API handler table, transcribed: code, HTTP status ('-' = not shown), message. */
const SPEC: readonly (readonly [number, number | '-', string])[] = [
  [700700, 503, 'API blocked'],
  [900422, 422, 'Invalid GraphQL query'],
  [900424, '-', 'Temporary Server Error'],
  [900800, 429, 'Message throttled out'],
  [900801, 503, 'Hard limit exceeded'],
  [900802, 429, 'Resource level throttle out'],
  [900803, 429, 'Application level throttle out'],
  [900804, 429, 'Subscription level throttled out'],
  [900805, 429, 'Message blocked'],
  [900806, 429, 'Custom policy throttled out'],
  [900807, 429, 'Message throttled out'],
  [900900, 500, 'Unclassified authentication failure'],
  [900901, 401, 'Invalid credentials'],
  [900902, 401, 'Missing credentials'],
  [900905, 401, 'Incorrect access token type'],
  [900906, 403, 'No matching resource found in the API for the given request'],
  [900907, 401, 'The requested API is temporarily blocked'],
  [900908, 403, 'Resource forbidden'],
  [900909, 401, 'The subscription to the API is inactive'],
  [900910, 403, 'The access token does not allow access to the resource'],
  [102511, 400, 'Incomplete payload'],
];

t.test('every API handler code of the spec is in the table with its status and message', async (t) => {
  for (const [code, status, message] of SPEC) {
    const d = faultDef(code);
    t.ok(d, `${code} listed`);
    if (d === undefined) continue;
    t.equal(d.message, message, `${code} message`);
    if (status === '-') t.equal(d.statusFrom, 'throughway', `${code}: the spec shows no status, throughway's choice is marked`);
    else {
      t.equal(d.httpStatus, status, `${code} status`);
      t.equal(d.statusFrom, 'spec');
    }
    t.equal(d.origin, 'spec');
  }
  t.equal(faultDef(900904)?.sent, false, '900904 is deprecated (spec 002 part 9): documented, never sent');
  t.equal(faultDef(900911)?.sent, false, '900911 has no meaning in the spec: documented, never sent');
  const specCodes = new Set(SPEC.map((s) => s[0]).concat([900904, 900911]));
  for (const d of GATEWAY_FAULTS) if (d.origin === 'spec') t.ok(specCodes.has(d.code), `${d.code} is a spec code`);
});

t.test("own codes: one range from 103001, the transport's then the gateway's, no collisions", async (t) => {
  // Blocks reserved per area (lib/faults/index.ts): each is filled from its start, without gaps.
  const BLOCKS = [103001, 103020, 103040, 103060, 103080, 103100, 103120, 103140, 103160, 103180, 103200, 103210, 103230];
  const all = ownCodes();
  for (let b = 0; b < BLOCKS.length - 1; b++) {
    const inBlock = all.filter((c) => c >= (BLOCKS[b] as number) && c < (BLOCKS[b + 1] as number));
    t.same(
      inBlock,
      Array.from({ length: inBlock.length }, (_, i) => (BLOCKS[b] as number) + i),
      `block ${BLOCKS[b]}: contiguous from its start`,
    );
  }
  t.equal(new Set(all).size, all.length, 'no code twice');
  t.ok(
    all.every((c) => c >= 103001 && c < 103230),
    'every own code is in a reserved block',
  );
  t.same(
    Object.values(OwnCode).filter((c) => c < 103020),
    [103001, 103002, 103003, 103004],
  );
  t.same(
    Object.values(OwnCode).filter((c) => c >= 103020),
    [103064, 103080, 103081, 103082, 103160, 103161, 103162, 103163],
    "the transport's codes in the blocks: global timeout (mediation), TLS handshake, proxy refused, WebSocket frame refused (docs/tls.md, docs/websocket.md), request framing, deadlines and the interim cap (docs/transport.md)",
  );
  t.equal(Math.min(...Object.values(GatewayOwnCode)), 103005);
  const codes = new Set<number>();
  for (const d of GATEWAY_FAULTS) {
    t.notOk(codes.has(d.code), `${d.code} once`);
    codes.add(d.code);
  }
  for (const k of Object.values(FAULT_KINDS)) {
    for (let s = 0; s <= (k.addsState ? 8 : 0); s++) t.notOk(codes.has(k.base + s), `${k.base + s} is not also a gateway code`);
  }
});

t.test("every gateway code renders its status and the spec's body shape", async (t) => {
  for (const d of GATEWAY_FAULTS) {
    const r = renderFacts(gatewayFacts(fault(d.code as GatewayCode)), [], undefined, undefined);
    t.equal(r.status, d.httpStatus, `${d.code} status`);
    t.equal(r.faultCode, d.code);
    t.same(
      JSON.parse(r.body as string),
      { fault: { code: d.code, type: 'Status report', message: d.message, description: d.description } },
      `${d.code} body`,
    );
    const h = r.headers ?? [];
    t.equal(h[0], 'Content-Type');
    t.equal(h[1], 'application/json; charset=UTF-8');
    const challenge = h.indexOf('WWW-Authenticate');
    if (d.challenge !== undefined) {
      t.ok(challenge >= 0, `${d.code} carries a challenge`);
      t.match(h[challenge + 1], /^Bearer realm="throughway"/);
      if (d.challenge !== '') t.match(h[challenge + 1], `error="${d.challenge}"`);
      else t.notMatch(h[challenge + 1], /error=/, '900902: no error code when credentials are missing (RFC 6750 §3.1)');
    } else t.equal(challenge, -1, `${d.code} has no challenge`);
    if (d.httpStatus === 401) t.ok(challenge >= 0, `${d.code}: a 401 always carries WWW-Authenticate (RFC 9110 §15.5.2)`);
  }
});

t.test('throttling faults: Retry-After and nextAccessTime; 405: Allow; 900910: scope', async (t) => {
  const now = Date.UTC(2025, 0, 1, 12, 0, 0);
  const r = renderFacts(gatewayFacts(fault(ApiCode.THROTTLED_OUT, { retryAfterMs: 1500 }), now), [], undefined, undefined);
  t.equal(r.status, 429);
  const h = r.headers ?? [];
  t.equal(h[h.indexOf('Retry-After') + 1], '2', 'seconds, rounded up');
  t.equal(JSON.parse(r.body as string).fault.nextAccessTime, '2025-01-01T12:00:01.500Z');
  const noTime = renderFacts(gatewayFacts(fault(ApiCode.BLOCKED)), [], undefined, undefined);
  t.equal((noTime.headers ?? []).indexOf('Retry-After'), -1, 'no time known, no Retry-After');
  t.equal(JSON.parse(noTime.body as string).fault.nextAccessTime, undefined);
  const s = renderFacts(gatewayFacts(fault(GatewayOwnCode.ENDPOINT_SUSPENDED, { retryAfterMs: 30_000 })), [], undefined, undefined);
  t.equal((s.headers ?? [])[(s.headers ?? []).indexOf('Retry-After') + 1], '30');
  t.equal(JSON.parse(s.body as string).fault.nextAccessTime, undefined, 'nextAccessTime is for throttling');
  const m = renderFacts(
    gatewayFacts(fault(GatewayOwnCode.METHOD_NOT_ALLOWED, { allow: 'GET, HEAD' })),
    ['Access-Control-Allow-Origin', '*'],
    undefined,
    undefined,
  );
  t.same(m.headers, ['Content-Type', 'application/json; charset=UTF-8', 'Allow', 'GET, HEAD', 'Access-Control-Allow-Origin', '*']);
  const sc = renderFacts(gatewayFacts(fault(ApiCode.INVALID_SCOPE, { scope: 'menu:read' })), [], undefined, undefined);
  t.equal(
    (sc.headers ?? [])[1 + (sc.headers ?? []).indexOf('WWW-Authenticate')],
    'Bearer realm="throughway", error="insufficient_scope", scope="menu:read"',
  );
  const d = renderFacts(
    gatewayFacts(fault(ApiCode.INVALID_CREDENTIALS, { description: 'The API has no sandbox endpoint' })),
    [],
    undefined,
    undefined,
  );
  t.equal(JSON.parse(d.body as string).fault.description, 'The API has no sandbox endpoint', 'an occurrence may say more');
});

t.test('every transport reason renders base + state and its status', async (t) => {
  for (const reason of Object.keys(FAULT_KINDS) as FaultReason[]) {
    const k = FAULT_KINDS[reason];
    const f = makeFault(reason, ProtocolState.REQUEST_DONE);
    const r = renderFacts(transportFacts(f), [], undefined, undefined);
    const code = k.addsState ? k.base + 3 : k.base;
    t.equal(r.status, k.httpStatus, `${reason} status`);
    t.equal(r.faultCode, code);
    const body = JSON.parse(r.body as string);
    t.equal(body.fault.code, code, `${reason}: code = base + state`);
    t.equal(body.fault.message, k.message);
    t.equal(body.fault.type, 'Status report');
  }
  t.equal(makeFault('socket_timeout', ProtocolState.REQUEST_DONE).code, 101507, 'spec 002 part 7 rule 2');
});
