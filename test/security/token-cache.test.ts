/**
 * The gateway token cache: a validated token is served from it (no second verification), the key
 * manager's token.revoked event evicts it at once, ids revoked before the gateway started come from the
 * snapshot, and an entry never outlives the token's exp (nor expiry_time), on the gateway's clock.
 */
import t, { type Test } from 'tap';
import type { TokenIdentity } from '../../lib/security/auth-context';
import { api, code, startNode, type Node } from './helpers';

let node: Node;
let revokedEarly = '';

/** Counts the node's token verifications until the test ends. */
function countValidations(t: Test, n: Node): { count: number } {
  const v = n.gw.security.validator;
  const verify = v.validate.bind(v);
  const seen = { count: 0 };
  v.validate = (tok: string) => {
    seen.count++;
    return verify(tok);
  };
  t.teardown(() => {
    v.validate = verify;
  });
  return seen;
}

t.before(async () => {
  // Tokens live 60 s; the cache would keep them 15 minutes: exp must win.
  node = await startNode(
    (port) => [api('c', {}, undefined, port)],
    `[oauth.token_validation]\napp_access_token_validity = 60\n[apim.cache.gateway_token]\nexpiry_time = 15\n`,
    {
      async beforeGateway(km) {
        // Revoked while no gateway ran: the snapshot carries it.
        const app = await km.manager.createApplication({ name: 'Early', owner: 'admin' });
        const keys = await km.manager.generateKeys(app.id);
        await km.manager.addSubscription({ application: app.id, apiContext: '/c', apiVersion: '1' });
        const basic = `Basic ${Buffer.from(`${keys.consumerKey}:${keys.consumerSecret}`).toString('base64')}`;
        revokedEarly = (await km.oauth.token(basic, new URLSearchParams({ grant_type: 'client_credentials' }))).access_token;
        await km.oauth.revoke(basic, new URLSearchParams({ token: revokedEarly }));
      },
    },
  );
});
t.teardown(() => node.close());

t.test("a token revoked before the gateway started is refused (the snapshot's revoked ids)", async (t) => {
  const r = await node.call('/c/1/x', revokedEarly);
  t.equal(r.status, 401);
  t.equal(code(r), 900901);
  t.match(JSON.parse(r.body).fault.description, /revoked/);
});

t.test('cached: the second call is not verified again; revocation evicts it at once', async (t) => {
  const app = await node.app('Rev', { subscribe: ['c'] });
  const token = await node.token(app);
  const other = await node.token(app);
  t.equal((await node.call('/c/1/x', token)).status, 200);
  t.equal((await node.call('/c/1/x', other)).status, 200);
  const size = node.gw.security.cache.size;
  t.ok(size >= 2, 'both cached');
  const verify = node.gw.security.validator.validate.bind(node.gw.security.validator);
  let verified = 0;
  node.gw.security.validator.validate = (tok: string) => {
    verified++;
    return verify(tok);
  };
  t.teardown(() => {
    node.gw.security.validator.validate = verify;
  });
  t.equal((await node.call('/c/1/x', token)).status, 200);
  t.equal(verified, 0, 'served from the cache');

  const basic = `Basic ${Buffer.from(`${app.consumerKey}:${app.consumerSecret}`).toString('base64')}`;
  await node.km.oauth.revoke(basic, new URLSearchParams({ token }));
  t.equal(node.gw.security.cache.size, size - 1, 'token.revoked evicted exactly that token');
  t.ok(node.logger.lines.some((l) => l.event === 'token_evicted'));
  const r = await node.call('/c/1/x', token);
  t.equal(r.status, 401, 'the revoked token is refused at once');
  t.equal(code(r), 900901);
  t.equal((await node.call('/c/1/x', other)).status, 200, 'the other token of the same application still passes');
});

t.test("the cache never outlives the token's exp, however long expiry_time is", async (t) => {
  const app = await node.app('Exp', { subscribe: ['c'] });
  const token = await node.token(app);
  t.equal((await node.call('/c/1/x', token)).status, 200, 'cached now');
  const exp = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString()).exp as number;
  node.clock.offset = exp * 1000 - Date.now() - 1000;
  t.equal((await node.call('/c/1/x', token)).status, 200, 'one second before exp: still served');
  node.clock.offset = exp * 1000 - Date.now() + 1;
  const r = await node.call('/c/1/x', token);
  t.equal(r.status, 401, 'one millisecond after exp: refused, though the cache entry had 15 minutes');
  t.match(JSON.parse(r.body).fault.description, /expired/);
  node.clock.offset = 0;
});

t.test('expiry_time bounds an entry too: after it the token is verified again', async (t) => {
  const short = await startNode((port) => [api('c', {}, undefined, port)], `[apim.cache.gateway_token]\nexpiry_time = "2s"\n`);
  t.teardown(() => short.close());
  const app = await short.app('Short', { subscribe: ['c'] });
  const token = await short.token(app);
  t.equal((await short.call('/c/1/x', token)).status, 200);
  const v = short.gw.security.validator;
  const verify = v.validate.bind(v);
  let verified = 0;
  v.validate = (tok: string) => {
    verified++;
    return verify(tok);
  };
  t.equal((await short.call('/c/1/x', token)).status, 200);
  t.equal(verified, 0, 'within 2 s: cached');
  short.clock.offset = 2500;
  t.equal((await short.call('/c/1/x', token)).status, 200);
  t.equal(verified, 1, 'after 2 s: verified again');
});

t.test('calls arriving together with a new token share one validation', async (t) => {
  const app = await node.app('Herd', { subscribe: ['c'] });
  const token = await node.token(app);
  const verified = countValidations(t, node);
  const all = await Promise.all([1, 2, 3, 4, 5].map(() => node.call('/c/1/x', token)));
  t.same(
    all.map((r) => r.status),
    [200, 200, 200, 200, 200],
  );
  t.equal(verified.count, 1, 'one signature check for five calls');
});

t.test('a token that ends like a cached one is no hit: it is verified, and refused when forged', async (t) => {
  const app = await node.app('Tail', { subscribe: ['c'] });
  const token = await node.token(app);
  t.equal((await node.call('/c/1/x', token)).status, 200, 'cached now');
  // The same signature tail (the cache's key) under another header and payload: a forgery.
  const [, , sig] = token.split('.');
  const forged = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from('{"sub":"x"}').toString('base64url')}.${sig ?? ''}`;
  t.equal(forged.slice(-43), token.slice(-43), 'the two share their last 43 characters');
  const verified = countValidations(t, node);
  const r = await node.call('/c/1/x', forged);
  t.equal(r.status, 401, 'the forged token is refused');
  t.equal(code(r), 900901);
  t.equal(verified.count, 1, 'it went to verification, not to the cached entry');
  t.equal((await node.call('/c/1/x', token)).status, 200, 'the genuine token still passes');
  t.equal(verified.count, 1, 'from the cache');
});

t.test('TokenCache: one slot per tail; the later token takes it and the earlier one is a miss', async (t) => {
  const { TokenCache } = await import('../../lib/security/token-cache');
  const c = new TokenCache({ max: 10, expiry: 60_000 });
  const tail = 'S'.repeat(43);
  const id = (jti: string) => ({ tokenId: jti, expiresAt: Date.now() + 60_000 }) as unknown as Parameters<typeof c.set>[1];
  c.set(`a.b.${tail}`, id('one'), Date.now());
  t.equal(c.get(`a.b.${tail}`, Date.now())?.identity.tokenId, 'one');
  t.equal(c.get(`x.y.${tail}`, Date.now()), undefined, 'same tail, other token: miss');
  c.set(`x.y.${tail}`, id('two'), Date.now());
  t.equal(c.get(`a.b.${tail}`, Date.now()), undefined, 'the first token lost its slot');
  t.equal(c.evict('one'), false, 'its jti no longer evicts anything');
  t.equal(c.get(`x.y.${tail}`, Date.now())?.identity.tokenId, 'two');
  t.equal(c.evict('two'), true);
  t.equal(c.size, 0);
  t.equal(c.get('short', Date.now()), undefined, 'tokens shorter than the tail are keyed whole');
  c.set('short', id('three'), Date.now());
  t.equal(c.get('short', Date.now())?.identity.tokenId, 'three');
  t.equal(c.get('shorter', Date.now()), undefined);
});

t.test('TokenCache: the last hit is served beside the LRU, and goes whenever the LRU lets its entry go', async (t) => {
  const { TokenCache } = await import('../../lib/security/token-cache');
  const now = Date.now();
  const id = (jti: string, ttl = 60_000) => ({ tokenId: jti, expiresAt: now + ttl }) as unknown as TokenIdentity;
  const tok = (n: string): string => `h.p.${n.repeat(43)}`;

  // Recency: hits on the last entry skip the LRU, which is told before each insert.
  const c = new TokenCache({ max: 2, expiry: 60_000 });
  c.set(tok('A'), id('a'), now);
  t.equal(c.get(tok('A'), now)?.identity.tokenId, 'a', 'A hit: now the last hit');
  c.set(tok('B'), id('b'), now);
  for (let i = 0; i < 3; i++) t.equal(c.get(tok('A'), now)?.identity.tokenId, 'a', `A hit again (${i + 1})`);
  c.set(tok('C'), id('c'), now);
  t.equal(c.get(tok('A'), now)?.identity.tokenId, 'a', 'the full LRU evicted B, not A, the entry used last');
  t.equal(c.get(tok('B'), now), undefined, 'B was evicted');
  t.same([c.hits, c.misses], [5, 1], 'hits and misses counted on both paths');

  // Revocation: evict() by jti ends the last hit too.
  t.equal(c.get(tok('C'), now)?.identity.tokenId, 'c', 'C is the last hit');
  t.equal(c.evict('c'), true);
  t.equal(c.get(tok('C'), now), undefined, 'an evicted token is a miss at once');

  // clear() (a new key or settings) ends it.
  t.equal(c.get(tok('A'), now)?.identity.tokenId, 'a');
  c.clear();
  t.equal(c.get(tok('A'), now), undefined, 'cleared: a miss');

  // Expiry is checked on the last hit as on the LRU's.
  c.set(tok('D'), id('d', 1000), now);
  t.equal(c.get(tok('D'), now + 999)?.identity.tokenId, 'd');
  t.equal(c.get(tok('D'), now + 1000), undefined, 'at its exp: a miss');
  t.equal(c.size, 0, 'and the expired entry left the LRU');

  // Another token of the same tail replaces the slot: the last hit goes with it.
  c.set(tok('E'), id('e'), now);
  t.equal(c.get(tok('E'), now)?.identity.tokenId, 'e');
  const other = `x.y.${'E'.repeat(43)}`;
  c.set(other, id('e2'), now);
  t.equal(c.get(tok('E'), now), undefined, 'the replaced token is a miss, not a hit on its old entry');
  t.equal(c.get(other, now)?.identity.tokenId, 'e2');
});
