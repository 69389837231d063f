/**
 * A backend that sends garbage instead of a status line: protocol violation at target state
 * RESPONSE_HEAD(4), 101506 + 4 = 101510, answered 502. Nothing of the garbage reaches the client.
 */
import t from 'tap';
import { rawBackend } from '../helpers/backend';
import { get, rawRequest } from '../helpers/client';
import { assertFault, assertFaultBody, checkTransitions, startTransport } from '../helpers/transport';

const GARBAGE = [
  ['not HTTP at all', 'SSH-2.0-OpenSSH_9.6\r\n'],
  ['a status line without a code', 'HTTP/1.1 OK\r\n\r\n'],
  ['bare LF line endings', 'HTTP/1.1 200 OK\nContent-Length: 2\n\nok'],
] as const;

for (const [what, bytes] of GARBAGE) {
  t.test(`garbage response (${what}): 101510 (101506 + 4), 502`, async (t) => {
    const backend = await rawBackend({ onRequest: (c) => c.write(bytes) });
    t.teardown(() => backend.close());
    const h = await startTransport(t, backend.url);
    const res = await rawRequest(h.port, get('/garbage'));
    assertFaultBody(t, res, 502, 101510, 101506, 4);
    // Exactly one message reached the client, the fault: none of the garbage was relayed.
    t.equal(res.responses.length, 1, 'one response');
    t.equal(res.raw.length, res.response.rawHead.length + res.response.rawBody.length, 'no byte besides the fault response');
    t.notOk(res.raw.toString('latin1').includes(bytes.slice(9)), 'none of the garbage reached the client');
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
    t.ok(h.faults[0]?.cause?.startsWith('HPE_'), `the parser's error is the cause (${h.faults[0]?.cause})`);
  });
}

checkTransitions(t);
