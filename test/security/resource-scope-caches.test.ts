/**
 * [apim.cache.resource] and [apim.cache.scopes] act differently (their schema entries say why): throughway
 * has no resource or scope cache to expire, so with both caches on and 15-minute expiries a redeployed
 * API's resources and scopes apply to the very next call, where the reference may answer from its caches
 * for up to 15 minutes.
 */
import t from 'tap';
import { api, code, startNode } from './helpers';

const CACHES = `[apim.cache.resource]\nenable = true\nexpiry_time = "900s"\n[apim.cache.scopes]\nenable = true\n`;

t.test('a redeployed resource scope and a removed resource apply to the next call', async (t) => {
  const backend = { port: 9 };
  const node = await startNode((port) => {
    backend.port = port;
    return [api('rc', {}, [{ path: '/a', methods: ['GET'], scopes: ['rc:read'] }], port)];
  }, CACHES);
  t.teardown(() => node.close());
  const app = await node.app('RC', { subscribe: ['rc'] });
  const token = await node.token(app);

  const scoped = await node.call('/rc/1/a', token);
  t.equal(scoped.status, 403, 'the token lacks the resource scope');
  t.equal(code(scoped), 900910);

  node.gw.reload({ apis: [api('rc', {}, [{ path: '/a', methods: ['GET'] }], backend.port)] });
  t.equal((await node.call('/rc/1/a', token)).status, 200, 'the scope removed by a redeploy: admitted at once');

  node.gw.reload({ apis: [api('rc', {}, [{ path: '/b', methods: ['GET'] }], backend.port)] });
  const gone = await node.call('/rc/1/a', token);
  t.equal(gone.status, 403, 'the resource removed by a redeploy: no match at once');
  t.equal(code(gone), 900906);
  t.equal((await node.call('/rc/1/b', token)).status, 200, 'the new resource answers at once');
});
