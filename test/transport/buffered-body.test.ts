/**
 * The transport capability mediation needs: a router gathers the whole request body before deciding
 * (SourceRequest.readBody, Content-Length and chunked, bounded by a limit) and forwards a replacement body
 * with a correct Content-Length (ForwardDecision.body); and the global response timeout
 * ([mediation] engine.global_timeout_interval, fault 103064).
 */
import t from 'tap';
import { targetFromUrl, type BodyRead, type BufferedResponse, type RouteFn, type SourceRequest } from '../../lib/transport';
import { rawBackend, type BackendConn } from '../helpers/backend';
import { RawClient, rawRequest, sleep } from '../helpers/client';
import { checkTransitions, startTransport } from '../helpers/transport';
import type { Message } from '../helpers/wire';

async function echoing(): Promise<{ url: string; seen: Message[]; close(): Promise<void> }> {
  const seen: Message[] = [];
  const b = await rawBackend({
    onRequest: (c: BackendConn, req: Message) => {
      seen.push(req);
      c.respond(200, `got ${req.body.length}`);
    },
  });
  return { url: b.url, seen, close: () => b.close() };
}

/** A router that reads the body (limit `limit`), upper-cases it and forwards it; too large -> 413. */
function upperRouter(url: string, limit: number, reads: BodyRead[]): RouteFn {
  const target = targetFromUrl(url);
  return async (req: SourceRequest) => {
    const r = await (req.readBody as (n: number) => Promise<BodyRead>)(limit);
    reads.push(r);
    if (!r.ok) return { status: 413, body: r.reason, faultCode: 103061 };
    return { target, body: Buffer.from(r.body.toString('latin1').toUpperCase(), 'latin1') };
  };
}

t.test('Content-Length body: gathered, replaced, forwarded with the new length; keep-alive goes on', async (t) => {
  const be = await echoing();
  t.teardown(() => be.close());
  const reads: BodyRead[] = [];
  const h = await startTransport(t, upperRouter(be.url, 1024, reads));
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write('POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello');
  const r1 = await c.finalResponse(5000);
  t.equal(r1.status, 200);
  t.equal(r1.body.toString(), 'got 5');
  t.equal(be.seen[0]?.body.toString(), 'HELLO', 'the replacement body reached the backend');
  t.equal(be.seen[0]?.headers['content-length'], '5');
  // A second request on the same connection, its body in two writes, proves the parser went on cleanly.
  await c.write('POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\n\r\nab');
  await sleep(30);
  await c.write('cdef');
  const r2 = await c.finalResponse(5000, 1);
  t.equal(r2.status, 200);
  t.equal(be.seen[1]?.body.toString(), 'ABCDEF');
  t.equal(reads.length, 2);
});

t.test("a longer replacement body gets its own Content-Length, not the client's", async (t) => {
  const be = await echoing();
  t.teardown(() => be.close());
  const target = targetFromUrl(be.url);
  const h = await startTransport(t, async (req) => {
    const r = await (req.readBody as (n: number) => Promise<BodyRead>)(1 << 20);
    return { target, body: r.ok ? Buffer.concat([r.body, Buffer.from('-and-more')]) : Buffer.alloc(0) };
  });
  const res = await rawRequest(h.port, 'PUT /x HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc');
  t.equal(res.status, 200);
  t.equal(be.seen[0]?.body.toString(), 'abc-and-more');
  t.equal(be.seen[0]?.headers['content-length'], '12');
});

t.test('chunked body: gathered de-chunked and forwarded with Content-Length, no Transfer-Encoding', async (t) => {
  const be = await echoing();
  t.teardown(() => be.close());
  const reads: BodyRead[] = [];
  const h = await startTransport(t, upperRouter(be.url, 1024, reads));
  const res = await rawRequest(
    h.port,
    'POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n4;ext=1\r\ndefg\r\n0\r\n\r\n',
  );
  t.equal(res.status, 200);
  const seen = be.seen[0];
  t.equal(seen?.body.toString(), 'ABCDEFG');
  t.equal(seen?.headers['content-length'], '7');
  t.equal(seen?.headers['transfer-encoding'], undefined, 'framing replaced');
  t.equal(seen?.chunked, false);
});

t.test('limit: a Content-Length above it resolves too_large before any body byte, and the connection closes', async (t) => {
  const be = await echoing();
  t.teardown(() => be.close());
  const reads: BodyRead[] = [];
  const h = await startTransport(t, upperRouter(be.url, 10, reads));
  const res = await rawRequest(h.port, 'POST /big HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\nhello world', { waitClose: true });
  t.equal(res.status, 413);
  t.equal(res.text, 'too_large');
  t.ok(res.closed, 'closed after the answer');
  t.same(reads, [{ ok: false, reason: 'too_large', size: 11 }]);
  t.equal(be.seen.length, 0, 'nothing forwarded');
});

t.test('limit: a chunked body growing past it resolves too_large and the rest is dropped', async (t) => {
  const be = await echoing();
  t.teardown(() => be.close());
  const reads: BodyRead[] = [];
  const h = await startTransport(t, upperRouter(be.url, 5, reads));
  const res = await rawRequest(
    h.port,
    'POST /big HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n4\r\nefgh\r\n0\r\n\r\n',
    { waitClose: true },
  );
  t.equal(res.status, 413);
  t.ok(res.closed);
  t.equal(reads[0]?.ok, false);
  t.equal(be.seen.length, 0);
});

t.test('Expect: 100-continue: the transport sends 100 itself and drops Expect toward the backend', async (t) => {
  const be = await echoing();
  t.teardown(() => be.close());
  const h = await startTransport(t, upperRouter(be.url, 1024, []));
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write('POST /e HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n');
  const deadline = Date.now() + 3000;
  while (c.responses.length === 0 && Date.now() < deadline) await sleep(10);
  t.equal(c.responses[0]?.status, 100, '100 Continue before the body was sent');
  await c.write('ok');
  const res = await c.finalResponse(5000, 1);
  t.equal(res.status, 200);
  t.equal(be.seen[0]?.body.toString(), 'OK');
  t.equal(be.seen[0]?.headers['expect'], undefined);
});

t.test('a bodiless request: readBody gives an empty body and nothing is added to the head', async (t) => {
  const be = await echoing();
  t.teardown(() => be.close());
  const reads: BodyRead[] = [];
  const h = await startTransport(t, upperRouter(be.url, 1024, reads));
  const res = await rawRequest(h.port, 'GET /g HTTP/1.1\r\nHost: x\r\n\r\n');
  t.equal(res.status, 200);
  t.equal(reads[0]?.ok, true);
  t.equal(be.seen[0]?.headers['content-length'], undefined);
});

t.test('readBody twice: the second call says already_read', async (t) => {
  const be = await echoing();
  t.teardown(() => be.close());
  const target = targetFromUrl(be.url);
  let second: BodyRead | undefined;
  const h = await startTransport(t, async (req) => {
    const read = req.readBody as (n: number) => Promise<BodyRead>;
    await read.call(req, 100);
    second = await read.call(req, 100);
    return { target };
  });
  const res = await rawRequest(h.port, 'POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc');
  t.equal(res.status, 200);
  t.equal(second?.ok, false);
  t.equal(be.seen[0]?.body.toString(), 'abc', 'the gathered body is forwarded when the decision names none');
});

t.test('global timeout: no response head in time -> 103064 (504), the late response is dropped with a warning', async (t) => {
  let conns = 0;
  const b = await rawBackend({
    onRequest: (c) => {
      conns++;
      setTimeout(() => {
        if (!c.closed) c.respond(200, 'late');
      }, 1500);
    },
  });
  t.teardown(() => b.close());
  const h = await startTransport(t, b.url, { settings: { globalTimeout: 200 } });
  const res = await rawRequest(h.port, 'GET /slow HTTP/1.1\r\nHost: x\r\n\r\n');
  t.equal(res.status, 504);
  const body = JSON.parse(res.text) as { fault: { code: number } };
  t.equal(body.fault.code, 103064);
  t.equal(h.faults[0]?.reason, 'global_timeout');
  t.equal(conns, 1);
  await sleep(50);
  t.ok(b.conns[0]?.closed, 'the backend socket is closed: its late response goes nowhere');
});

t.test('global timeout: a response head in time is not cut, however long its body takes', async (t) => {
  const b = await rawBackend({
    onRequest: (c) => {
      c.write(Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nab'));
      setTimeout(() => c.write(Buffer.from('cd')), 400);
    },
  });
  t.teardown(() => b.close());
  const h = await startTransport(t, b.url, { settings: { globalTimeout: 150 } });
  const res = await rawRequest(h.port, 'GET /x HTTP/1.1\r\nHost: x\r\n\r\n');
  t.equal(res.status, 200);
  t.equal(res.text, 'abcd');
});

/** A router whose forward gathers the response and answers it upper-cased with an X-Seen field. */
function gatherRouter(url: string, limit: number, seen: BufferedResponse[]): RouteFn {
  const target = targetFromUrl(url);
  return () => ({
    target,
    responseHeaders: ['X-Cors', 'yes'],
    bufferResponse: {
      limit,
      handle: async (res: BufferedResponse) => {
        seen.push(res);
        if (res.body.toString() === 'throw') throw new Error('hook failed');
        return {
          status: res.status === 200 ? 201 : res.status,
          headers: ['Content-Type', 'text/plain', 'X-Seen', String(res.body.length), 'Transfer-Encoding', 'chunked'],
          body: res.body.toString('latin1').toUpperCase(),
        };
      },
    },
  });
}

t.test(
  'gathered response: Content-Length, chunked and close-delimited bodies reach the hook whole; its answer is framed anew',
  async (t) => {
    const replies = [
      'HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello',
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n',
    ];
    let n = 0;
    const b = await rawBackend({ onRequest: (c) => c.write(Buffer.from(replies[n++] ?? '')) });
    t.teardown(() => b.close());
    const seen: BufferedResponse[] = [];
    const h = await startTransport(t, gatherRouter(b.url, 1024, seen));
    const c = await RawClient.connect(h.port);
    t.teardown(() => c.destroy());
    await c.write('GET /a HTTP/1.1\r\nHost: x\r\n\r\n');
    const r1 = await c.finalResponse(5000);
    t.equal(r1.status, 201);
    t.equal(r1.body.toString(), 'HELLO');
    t.equal(r1.headers['content-length'], '5');
    t.equal(r1.headers['x-seen'], '5');
    t.equal(r1.headers['x-cors'], 'yes', "the forward's response fields are added");
    t.equal(r1.headers['transfer-encoding'], undefined, "framing is the transport's");
    await c.write('GET /b HTTP/1.1\r\nHost: x\r\n\r\n');
    const r2 = await c.finalResponse(5000, 1);
    t.equal(r2.body.toString(), 'ABCDE', 'chunked body gathered de-framed');
    t.equal(seen[1]?.body.toString(), 'abcde');
    t.equal(b.conns.length, 1, 'the backend connection was reused for the second exchange');
    const closer = await rawBackend({ onRequest: (conn) => conn.socket.end('HTTP/1.1 200 OK\r\n\r\nuntil close') });
    t.teardown(() => closer.close());
    const h2 = await startTransport(t, gatherRouter(closer.url, 1024, seen));
    const r3 = await rawRequest(h2.port, 'GET /c HTTP/1.1\r\nHost: x\r\n\r\n');
    t.equal(r3.text, 'UNTIL CLOSE', 'a close-delimited body ends at the close');
  },
);

t.test('gathered response above the limit: 101510 + state (500), the client gets a fault, nothing partial', async (t) => {
  const b = await rawBackend({ onRequest: (c) => c.respond(200, 'x'.repeat(5000)) });
  t.teardown(() => b.close());
  const h = await startTransport(t, gatherRouter(b.url, 1000, []));
  const res = await rawRequest(h.port, 'GET /big HTTP/1.1\r\nHost: x\r\n\r\n');
  t.equal(res.status, 500);
  t.equal((JSON.parse(res.text) as { fault: { code: number } }).fault.code, 101515, '101510 + RESPONSE_BODY(5)');
  const chunky = await rawBackend({
    onRequest: (c) =>
      c.write(
        Buffer.from(`HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n${(3000).toString(16)}\r\n${'y'.repeat(3000)}\r\n0\r\n\r\n`),
      ),
  });
  t.teardown(() => chunky.close());
  const h2 = await startTransport(t, gatherRouter(chunky.url, 1000, []));
  const r2 = await rawRequest(h2.port, 'GET /big HTTP/1.1\r\nHost: x\r\n\r\n');
  t.equal(r2.status, 500, 'chunked too');
});

t.test('gathered response: a hook that throws is a 101510 fault; HEAD responses are streamed, not gathered', async (t) => {
  const b = await rawBackend({
    onRequest: (c, req) =>
      req.method === 'HEAD' ? c.write(Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n')) : c.respond(200, 'throw'),
  });
  t.teardown(() => b.close());
  const seen: BufferedResponse[] = [];
  const h = await startTransport(t, gatherRouter(b.url, 1000, seen));
  const res = await rawRequest(h.port, 'GET /t HTTP/1.1\r\nHost: x\r\n\r\n');
  t.equal(res.status, 500);
  t.equal((JSON.parse(res.text) as { fault: { code: number } }).fault.code, 101516);
  const head = await rawRequest(h.port, 'HEAD /h HTTP/1.1\r\nHost: x\r\n\r\n', { head: true });
  t.equal(head.status, 200);
  t.equal(head.headers['content-length'], '5');
  t.equal(seen.length, 1, 'the HEAD response never reached the hook');
});

checkTransitions(t);
