/**
 * A chunked response is relayed to an HTTP/1.1 client verbatim: chunk sizes, extensions, the last chunk
 * and trailers byte for byte (the proxy does not re-frame; its strict parser has validated the framing).
 */
import t from 'tap';
import { rawBackend } from '../helpers/backend';
import { RawClient, get, sleep } from '../helpers/client';
import { checkTransitions, startTransport } from '../helpers/transport';

const BODY = '5\r\nhello\r\n6;ext=1\r\n world\r\n1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-Trailer: done\r\n\r\n';

t.test('chunk framing, extensions and trailers reach the 1.1 client byte for byte', async (t) => {
  const backend = await rawBackend({
    onRequest: (c) => c.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Trailer\r\n\r\n' + BODY),
  });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write(get('/chunked'));
  const res = await c.finalResponse();
  t.equal(res.status, 200);
  t.equal(res.headers['transfer-encoding'], 'chunked', 'Transfer-Encoding kept');
  t.equal(res.rawBody.toString('latin1'), BODY, "body bytes identical to the backend's, framing included");
  t.equal(res.body.toString(), 'hello worldabcdefghijklmnopqrstuvwxyz');
  const raw = c.raw.toString('latin1');
  t.ok(raw.endsWith('\r\n\r\n' + BODY), 'nothing after the last chunk and trailers');
  await sleep(30);
  t.notOk(c.closed, 'the connection stays open');
  t.equal(h.faults.length, 0);
});

t.test('a chunked response delivered in pieces that split the framing arrives verbatim', async (t) => {
  const backend = await rawBackend({
    onRequest: (c) => {
      const all = 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n' + BODY;
      const cuts = [10, 50, 52, 60, 61, 75, all.length - 3];
      let from = 0;
      let i = 0;
      const next = (): void => {
        const to = cuts[i++] ?? all.length;
        c.write(all.slice(from, to));
        from = to;
        if (from < all.length) setTimeout(next, 5);
      };
      next();
    },
  });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write(get('/pieces'));
  const res = await c.finalResponse();
  t.equal(res.rawBody.toString('latin1'), BODY);
  // And the connection is reusable: the response ended exactly where the backend's did.
  await c.write(get('/again'));
  const again = await c.finalResponse(5000, 1);
  t.equal(again.status, 200);
  t.equal(h.faults.length, 0);
});

checkTransitions(t);
