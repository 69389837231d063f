/**
 * A backend that answers before it has read the whole request body (a 413 from the backend, an auth
 * failure, ...): the response is relayed at once with `Connection: close` (the rest of the request will
 * not be read), and neither socket is reused.
 */
import t from 'tap';
import { rawBackend } from '../helpers/backend';
import { RawClient } from '../helpers/client';
import { checkTransitions, startTransport } from '../helpers/transport';

t.test('the backend answers 413 after the head, while the body is still coming', async (t) => {
  const backend = await rawBackend({
    onRequestHead: (c) => {
      c.write('HTTP/1.1 413 Payload Too Large\r\nContent-Length: 8\r\n\r\ntoo big!');
    },
  });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write('POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: 1000000\r\n\r\n' + 'z'.repeat(1000));
  const res = await c.finalResponse(3000);
  t.equal(res.status, 413);
  t.equal(res.body.toString(), 'too big!');
  t.equal(res.headers['connection'], 'close', 'the client is told the connection closes');
  t.ok(await c.waitClose(2000), 'and it does');
  t.ok(
    backend.conns.every((x) => x.closed),
    'the backend socket with the unfinished request is not reused',
  );
  t.equal(h.transport.connections().idleTargets, 0);
  t.equal(h.faults.length, 0, "the backend's answer is not a transport fault");
});

checkTransitions(t);
