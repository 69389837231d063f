/**
 * [apim.jwt] enable_user_claims and enable_claim_retrieval (spec 000): the end user's claims from the key
 * manager's store (`<dialect>/role`, the roles comma-separated) in the backend JWT, for user tokens and for
 * application tokens (whose end user is the application owner); off by default; a gateway-worker reads
 * them from its control plane (GET /admin/v1/users/{name}/claims).
 */
import t from 'tap';
import { api, received, startNode } from './helpers';
import { ControlPlane } from '../../lib/scale/control-plane';
import { silentLogger } from '../../lib/log';

function claimsOf(jwt: string | undefined): Record<string, unknown> {
  return JSON.parse(Buffer.from((jwt ?? '').split('.')[1] ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
}

const D = 'http://wso2.org/claims';

for (const key of ['enable_user_claims', 'enable_claim_retrieval']) {
  t.test(`${key} = true: the user's roles in the backend JWT`, async (t) => {
    const node = await startNode(
      (port) => [api('uc', {}, undefined, port)],
      `[apim.jwt]\nenable = true\nencoding = "base64url"\n${key} = true\n`,
    );
    t.teardown(() => node.close());
    await node.km.manager.addUser({ username: 'alice', password: 'alice-pw-1', roles: ['subscriber', 'auditor'] });
    const app = await node.app('UC', { subscribe: ['uc'] });
    const userToken = await node.token(app, { user: { username: 'alice', password: 'alice-pw-1' } });
    t.equal((await node.call('/uc/1/x', userToken)).status, 200);
    const c = claimsOf(received(node.backend, 'X-JWT-Assertion'));
    t.equal(c[`${D}/enduser`], 'alice');
    t.equal(c[`${D}/role`], 'subscriber,auditor', "the end user's roles from the store");

    const appToken = await node.token(app);
    t.equal((await node.call('/uc/1/x', appToken)).status, 200);
    const a = claimsOf(received(node.backend, 'X-JWT-Assertion'));
    t.equal(a[`${D}/enduser`], 'admin', "an application token's end user is the application owner");
    t.equal(a[`${D}/role`], 'admin', 'whose roles are sent');
  });
}

t.test('off by default: no user store claims', async (t) => {
  const node = await startNode((port) => [api('uc', {}, undefined, port)], `[apim.jwt]\nenable = true\nencoding = "base64url"\n`);
  t.teardown(() => node.close());
  await node.km.manager.addUser({ username: 'bob', password: 'bob-pw-12', roles: ['subscriber'] });
  const app = await node.app('UC', { subscribe: ['uc'] });
  t.equal((await node.call('/uc/1/x', await node.token(app, { user: { username: 'bob', password: 'bob-pw-12' } }))).status, 200);
  const c = claimsOf(received(node.backend, 'X-JWT-Assertion'));
  t.equal(c[`${D}/enduser`], 'bob');
  t.notOk(`${D}/role` in c, 'no role claim');
});

t.test('a gateway-worker reads the claims from its control plane', async (t) => {
  const node = await startNode(() => []);
  t.teardown(() => node.close());
  const base = await node.km.listen(0, '127.0.0.1');
  await node.km.manager.addUser({ username: 'carol', password: 'carol-pw-1', roles: ['subscriber', 'ops'] });
  const cp = new ControlPlane({
    url: `http://127.0.0.1:${base.port}`,
    user: 'admin',
    password: 'admin-pw-1',
    retry: { first: 10, maxRetries: 0, factor: 1 },
    logger: silentLogger,
  });
  const link = cp.link();
  t.same(await link.userClaims?.('carol'), { role: 'subscriber,ops' });
  t.equal(await link.userClaims?.('nobody'), undefined, 'an unknown user: no claims (404)');
});
