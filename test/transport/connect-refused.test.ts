/**
 * A backend that refuses the connection: 101503 at target state REQUEST_READY(0), answered 502 with the
 * spec's fault body; the client connection stays usable (the request was complete).
 */
import t from 'tap';
import { closedPort, rawBackend } from '../helpers/backend';
import { RawClient, get, rawRequest } from '../helpers/client';
import { assertFault, assertFaultBody, checkTransitions, saysClose, startTransport } from '../helpers/transport';
import { targetFromUrl } from '../../lib/transport';

t.test('connect refused: 101503 at state 0, 502, fault reported once', async (t) => {
  const port = await closedPort();
  const h = await startTransport(t, `http://127.0.0.1:${port}`);
  const res = await rawRequest(h.port, get('/refused'));
  assertFaultBody(t, res, 502, 101503, 101503, 0);
  t.equal(h.faults.length, 1, 'one fault reported');
  assertFault(t, h.faults[0], {
    code: 101503,
    base: 101503,
    state: 0,
    side: 'target',
    reason: 'connect_refused',
    httpStatus: 502,
    reused: false,
  });
  t.equal(h.faults[0]?.cause, 'ECONNREFUSED');
  t.equal(h.faultRecords[0]?.req?.url, '/refused', 'the fault names the request');
  t.equal(h.transport.connections().targets, 0, 'the failed target is gone');
});

t.test('connect refused keeps the client connection: the next request on it is served', async (t) => {
  const port = await closedPort();
  const good = await rawBackend({ onRequest: (c, req) => c.respond(200, `ok ${req.url}`) });
  t.teardown(() => good.close());
  const refused = targetFromUrl(`http://127.0.0.1:${port}`);
  const working = targetFromUrl(good.url);
  const h = await startTransport(t, (req) => ({ target: req.url.startsWith('/down') ? refused : working }));
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write(get('/down'));
  const first = await c.finalResponse();
  t.equal(first.status, 502);
  t.notOk(saysClose(first), 'a complete request that failed upstream does not close the client connection');
  await c.write(get('/up'));
  const second = await c.finalResponse(5000, 1);
  t.equal(second.status, 200);
  t.equal(second.body.toString(), 'ok /up');
  t.notOk(c.closed, 'still open');
  t.equal(h.faults.length, 1);
});

t.test("a HEAD request to a refused backend: 502 head with the fault's Content-Length, no body", async (t) => {
  const port = await closedPort();
  const h = await startTransport(t, `http://127.0.0.1:${port}`);
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  c.expectHeadResponse();
  await c.write('HEAD /refused HTTP/1.1\r\nHost: a\r\n\r\n');
  const res = await c.finalResponse();
  t.equal(res.status, 502);
  t.ok(Number(res.headers['content-length']) > 0, 'Content-Length of the body a GET would get');
  await c.write('GET /then HTTP/1.1\r\nHost: a\r\n\r\n');
  const next = await c.finalResponse(3000, 1);
  t.equal(next.status, 502);
  t.equal(JSON.parse(next.body.toString()).fault.code, 101503, 'the next response starts right after the HEAD response head');
  t.equal(c.raw.indexOf('HTTP/1.1 502', 1), res.rawHead.length, 'no body bytes between them');
});

checkTransitions(t);
