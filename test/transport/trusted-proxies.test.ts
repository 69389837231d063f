/**
 * [throughway] trusted_proxies (docs/security.md, "Trusted proxies"): from a peer that is not a trusted
 * proxy, X-Forwarded-For, X-Forwarded-Proto, X-Forwarded-Host, Forwarded and X-Real-IP are replaced (or
 * dropped), never appended to, and the client address is the peer's; from a trusted one they are kept
 * (X-Forwarded-For appended) and the client address for routing, throttling and logs is the right-most
 * X-Forwarded-For entry that is not a trusted proxy (nginx real_ip with real_ip_recursive on).
 */
import t, { type Test } from 'tap';
import { rawBackend } from '../helpers/backend';
import { rawRequest } from '../helpers/client';
import { checkTransitions, startTransport } from '../helpers/transport';
import { targetFromUrl, type RouteFn } from '../../lib/transport';
import { clientAddress, trustedMatcher } from '../../lib/transport/trusted';
import type { Message } from '../helpers/wire';

const FORGED =
  'GET /who HTTP/1.1\r\nHost: client.example\r\n' +
  'X-Forwarded-For: 203.0.113.7, 10.1.2.3\r\n' +
  'X-Forwarded-Proto: https\r\n' +
  'X-Forwarded-Host: forged.example\r\n' +
  'Forwarded: for=198.51.100.1;proto=https\r\n' +
  'X-Real-IP: 198.51.100.1\r\n\r\n';

function values(m: Message | undefined, name: string): string[] {
  return (m?.rawHeaders ?? []).filter(([n]) => n.toLowerCase() === name.toLowerCase()).map(([, v]) => v);
}

async function run(t: Test, trustedProxies: string[]) {
  const backend = await rawBackend({ onRequest: (c) => c.respond(200, 'ok') });
  t.teardown(() => backend.close());
  const target = targetFromUrl(backend.url);
  const seenBy: string[] = [];
  const route: RouteFn = (req) => {
    seenBy.push(req.remoteAddress);
    return { target };
  };
  const h = await startTransport(t, route, { settings: { trustedProxies } });
  const res = await rawRequest(h.port, FORGED);
  t.equal(res.status, 200);
  return { req: backend.conns[0]?.requests[0], seenBy, h };
}

t.test('an untrusted peer: forwarding fields replaced, the client address is the peer', async (t) => {
  const { req, seenBy, h } = await run(t, []);
  t.same(values(req, 'X-Forwarded-For'), ['127.0.0.1'], 'replaced, not appended to');
  t.same(values(req, 'X-Forwarded-Proto'), ['http']);
  t.same(values(req, 'X-Forwarded-Host'), ['client.example']);
  t.same(values(req, 'Forwarded'), [], 'Forwarded dropped');
  t.same(values(req, 'X-Real-IP'), [], 'X-Real-IP dropped');
  t.same(seenBy, ['127.0.0.1'], 'the router (throttling, blocking) sees the peer');
  t.equal(h.exchanges[0]?.remoteAddress, '127.0.0.1', 'the log record too');
});

t.test('a trusted peer: fields kept, X-Forwarded-For appended, client = right-most untrusted entry', async (t) => {
  const { req, seenBy, h } = await run(t, ['127.0.0.0/8', '10.0.0.0/8']);
  t.same(values(req, 'X-Forwarded-For'), ['203.0.113.7, 10.1.2.3, 127.0.0.1']);
  t.same(values(req, 'X-Forwarded-Proto'), ['https'], "the trusted proxy's");
  t.same(values(req, 'X-Forwarded-Host'), ['forged.example'], "the trusted proxy's");
  t.same(values(req, 'Forwarded'), ['for=198.51.100.1;proto=https']);
  t.same(values(req, 'X-Real-IP'), ['198.51.100.1']);
  t.same(seenBy, ['203.0.113.7'], '10.1.2.3 is a trusted proxy: skipped (real_ip_recursive)');
  t.equal(h.exchanges[0]?.remoteAddress, '203.0.113.7');
});

t.test('a trusted peer that is the only trusted one: the entry it appended to is the client', async (t) => {
  const { seenBy } = await run(t, ['127.0.0.1']);
  t.same(seenBy, ['10.1.2.3'], 'the right-most entry, not itself trusted');
});

t.test('trusted_proxies entries: addresses and CIDR ranges, anything else refused', async (t) => {
  t.equal(trustedMatcher([]), null);
  const m = trustedMatcher(['10.0.0.0/8', '::1', '2001:db8::/32']);
  t.ok(m?.check('10.200.0.1', 'ipv4'));
  t.notOk(m?.check('11.0.0.1', 'ipv4'));
  t.ok(m?.check('2001:db8::5', 'ipv6'));
  for (const bad of ['10.0.0.0/33', 'example.com', '10.0.0.0/', '1.2.3']) t.throws(() => trustedMatcher([bad]), /trusted_proxies/, bad);
});

t.test('the worked example of docs/security.md, "Trusted proxies": the client address of each row', async (t) => {
  // The page's deployment.toml sample (loaded by test/unit/docs-samples.test.ts) lists these two.
  const m = trustedMatcher(['10.0.0.0/8', '192.0.2.10']);
  const xff = (v: string): string[] => ['X-Forwarded-For', v];
  t.equal(
    clientAddress(m, xff('1.2.3.4, 198.51.100.23, 192.0.2.10'), '10.0.0.5'),
    '198.51.100.23',
    'through the CDN and the load balancer',
  );
  t.equal(clientAddress(m, xff('1.2.3.4, 198.51.100.23'), '10.0.0.5'), '198.51.100.23', 'through the load balancer');
  t.equal(clientAddress(m, [], '10.0.0.5'), '10.0.0.5', 'no X-Forwarded-For: the peer');
  t.equal(clientAddress(m, xff('10.0.0.9, 192.0.2.10'), '10.0.0.5'), '10.0.0.9', 'all trusted: the left-most');
  t.equal(clientAddress(m, xff('198.51.100.23, unknown, 192.0.2.10'), '10.0.0.5'), '192.0.2.10', 'a garbled entry stops the walk');
  t.equal(clientAddress(m, [...xff('1.2.3.4'), ...xff('198.51.100.23')], '10.0.0.5'), '198.51.100.23', 'repeated fields read as one list');
});

checkTransitions(t);
