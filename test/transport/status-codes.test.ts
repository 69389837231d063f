/**
 * Backend status codes outside 100-599 (RFC 9110 §15 defines only 1xx-5xx): refused as a protocol
 * violation at target state RESPONSE_HEAD(4), 101506 + 4 = 101510, answered 502, nothing of the response
 * relayed and the backend connection closed. 100 and 599, the ends of the range, are relayed.
 */
import t from 'tap';
import { rawBackend } from '../helpers/backend';
import { get, RawClient, rawRequest, until } from '../helpers/client';
import { assertFault, assertFaultBody, checkTransitions, startTransport } from '../helpers/transport';

for (const code of ['000', '099', '600', '999']) {
  t.test(`status ${code}: 101510 (101506 + 4), 502, nothing relayed, backend connection closed`, async (t) => {
    // A 0xx would pass as an interim response if it were not refused: a real response follows it.
    const backend = await rawBackend({
      onRequest: (c) => c.write(`HTTP/1.1 ${code} Odd\r\nContent-Length: 3\r\n\r\nodd` + 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok'),
    });
    t.teardown(() => backend.close());
    const h = await startTransport(t, backend.url);
    const res = await rawRequest(h.port, get('/odd'));
    assertFaultBody(t, res, 502, 101510, 101506, 4);
    t.equal(res.responses.length, 1, 'one response: the fault');
    t.notOk(res.raw.toString('latin1').includes('Odd'), 'none of the backend response reached the client');
    t.equal(h.faults.length, 1);
    assertFault(t, h.faults[0], {
      code: 101510,
      base: 101506,
      state: 4,
      side: 'target',
      reason: 'protocol',
      httpStatus: 502,
      reused: false,
    });
    t.equal(h.faults[0]?.cause, `status code ${Number(code)} outside 100-599`);
    t.ok(await until(() => backend.conns[0]?.closed === true), 'the backend connection was closed');
  });
}

t.test('status 599 is relayed, and 100 as an interim response before it', async (t) => {
  const backend = await rawBackend({
    onRequest: (c) => c.write('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 599 Edge\r\nContent-Length: 4\r\n\r\nedge'),
  });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write(get('/edge'));
  const res = await c.finalResponse();
  t.equal(c.responses[0]?.status, 100, 'the interim response');
  t.equal(res.status, 599);
  t.equal(res.body.toString(), 'edge');
  t.equal(h.faults.length, 0);
});

checkTransitions(t);
