/**
 * The hot path stays synchronous (docs/architecture.md): the gateway's router answers without a
 * Promise for auth = "none" and for a token already in the cache; only a token seen for the first time
 * (signature check) makes the decision asynchronous. Checked on the router itself, with the request head
 * the transport would hand it.
 */
import t from 'tap';
import type { ForwardDecision, SourceRequest } from '../../lib/transport/types';
import { api, startNode } from './helpers';

function head(url: string, token?: string): SourceRequest {
  const headers = ['Host', 'gw', ...(token !== undefined ? ['Authorization', `Bearer ${token}`] : [])];
  return Object.freeze({
    method: 'GET',
    url,
    headers: Object.freeze(headers),
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

const isPromise = (v: unknown): boolean => typeof (v as Promise<unknown> | undefined)?.then === 'function';

t.test('no Promise for auth = "none" or a cached token; one for a new token', async (t) => {
  const node = await startNode(
    (port) => [
      api(
        's',
        {},
        [
          { path: '/open', methods: ['GET'], auth: 'none' },
          { path: '/closed', methods: ['GET'] },
        ],
        port,
      ),
    ],
    `[apim.jwt]\nenable = true\n`,
  );
  t.teardown(() => node.close());
  const app = await node.app('Sync', { subscribe: ['s'] });
  const token = await node.token(app);

  const open = node.gw.route(head('/s/1/open'));
  t.notOk(isPromise(open), 'auth = "none": synchronous');
  t.ok('target' in (open as ForwardDecision), 'and forwarded');

  const first = node.gw.route(head('/s/1/closed', token));
  t.ok(isPromise(first), 'a new token: asynchronous (signature check)');
  const forwarded = (await first) as ForwardDecision;
  t.ok('target' in forwarded, 'forwarded once validated');
  t.ok(forwarded.headers?.includes('X-JWT-Assertion'), 'with the backend JWT');

  const again = node.gw.route(head('/s/1/closed', token));
  t.notOk(isPromise(again), 'the same token again: synchronous (token cache, cached backend JWT)');
  t.ok('target' in (again as ForwardDecision));

  const missing = node.gw.route(head('/s/1/closed'));
  t.notOk(isPromise(missing), 'no token: a synchronous 900902');
  t.equal((missing as { faultCode?: number }).faultCode, 900902);
});

t.test('the token header is found in any letter case, and only a field of that name', async (t) => {
  const node = await startNode((port) => [api('s', {}, [{ path: '/closed', methods: ['GET'] }], port)]);
  t.teardown(() => node.close());
  const token = await node.token(await node.app('Case', { subscribe: ['s'] }));
  const named = (name: string, value = `Bearer ${token}`): SourceRequest => ({
    ...head('/s/1/closed'),
    headers: Object.freeze(['Host', 'gw', name, value]),
  });
  for (const name of ['Authorization', 'authorization', 'AUTHORIZATION', 'aUtHoRiZaTiOn']) {
    const d = (await node.gw.route(named(name))) as ForwardDecision;
    t.ok('target' in d, `${name}: forwarded`);
  }
  // The same length as Authorization, one letter apart at each end: another field, so no token.
  for (const name of ['Buthorization', 'Authorizatiom', 'Authorization-']) {
    t.equal(((await node.gw.route(named(name))) as { faultCode?: number }).faultCode, 900902, `${name}: not the token header`);
  }
});

t.test('a custom auth_header is read in any letter case', async (t) => {
  const node = await startNode(
    (port) => [api('s', {}, [{ path: '/closed', methods: ['GET'] }], port)],
    `[apim.oauth_config]\nauth_header = "X-API-Token"\n`,
  );
  t.teardown(() => node.close());
  const token = await node.token(await node.app('Custom', { subscribe: ['s'] }));
  const named = (name: string): SourceRequest => ({
    ...head('/s/1/closed'),
    headers: Object.freeze(['Host', 'gw', name, `Bearer ${token}`]),
  });
  for (const name of ['X-API-Token', 'x-api-token', 'X-Api-Token'])
    t.ok('target' in ((await node.gw.route(named(name))) as ForwardDecision), `${name}: forwarded`);
  t.equal(
    ((await node.gw.route(named('Authorization'))) as { faultCode?: number }).faultCode,
    900902,
    'Authorization is not the token header then',
  );
});
