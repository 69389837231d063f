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
  return Object.freeze({ method: 'GET', url, headers: Object.freeze(headers), versionMajor: 1, versionMinor: 1, remoteAddress: '127.0.0.1', remotePort: 1, secure: false, connectionId: 1, requestNumber: 1, contentLength: -1, chunked: false });
}

const isPromise = (v: unknown): boolean => typeof (v as Promise<unknown> | undefined)?.then === 'function';

t.test('no Promise for auth = "none" or a cached token; one for a new token', async (t) => {
  const node = await startNode((port) => [api('s', {}, [{ path: '/open', methods: ['GET'], auth: 'none' }, { path: '/closed', methods: ['GET'] }], port)], `[apim.jwt]\nenable = true\n`);
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
