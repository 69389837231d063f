/**
 * A failure once the response head is on its way to the client cannot change the status line: the client
 * connection is aborted (closed before Content-Length bytes arrived, no fault body), and the fault is
 * still reported once, with the target state RESPONSE_BODY(5).
 */
import t, { type Test } from 'tap';
import { rawBackend, type BackendConn } from '../helpers/backend';
import { RawClient, get, sleep } from '../helpers/client';
import { assertFault, checkTransitions, startTransport, type Harness } from '../helpers/transport';

const DECLARED = 100_000;
const SENT = 1000;

async function cutResponse(t: Test, h: Harness): Promise<void> {
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write(get('/big'));
  const res = await c.finalResponse(5000);
  t.ok(await c.waitClose(3000), 'the client connection is closed');
  t.equal(res.status, 200, 'the status line had already gone out');
  t.equal(res.headers['content-length'], String(DECLARED));
  t.notOk(res.complete, 'the response is incomplete');
  t.equal(res.bodyLength, SENT, `only the ${SENT} bytes the backend sent arrived`);
  t.notOk(c.raw.toString('latin1').includes('"fault"'), 'no fault body is appended to a started response');
  t.equal(c.responses.length, 1, 'nothing after the cut response');
}

function partialResponse(c: BackendConn): void {
  c.write(`HTTP/1.1 200 OK\r\nContent-Length: ${DECLARED}\r\n\r\n` + 'x'.repeat(SENT));
}

t.test('backend resets mid-response-body: client aborted, 101506 (101501 + 5)', async (t) => {
  const backend = await rawBackend({
    onRequest: (c) => {
      partialResponse(c);
      setTimeout(() => c.socket.resetAndDestroy(), 50);
    },
  });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  await cutResponse(t, h);
  await h.waitFaults(1);
  t.equal(h.faults.length, 1, 'one fault');
  assertFault(t, h.faults[0], { code: 101506, base: 101501, state: 5, side: 'target', reason: 'io_receive', reused: false });
  t.equal(h.faults[0]?.cause, 'ECONNRESET');
  await sleep(20);
  t.same(h.transport.connections(), { sources: 0, targets: 0, idleTargets: 0, inFlight: 0, queued: 0 }, 'nothing left open');
});

t.test('backend closes (FIN) mid-response-body: client aborted, 101510 (101505 + 5)', async (t) => {
  const backend = await rawBackend({
    onRequest: (c) => {
      partialResponse(c);
      setTimeout(() => c.socket.end(), 50);
    },
  });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  await cutResponse(t, h);
  await h.waitFaults(1);
  t.equal(h.faults.length, 1, 'one fault');
  assertFault(t, h.faults[0], { code: 101510, base: 101505, state: 5, side: 'target', reason: 'closed', reused: false });
});

t.test('response body slower than the socket timeout: client aborted, 101509 (101504 + 5)', async (t) => {
  const SOCKET_TIMEOUT = 300;
  const backend = await rawBackend({ onRequest: (c) => partialResponse(c) }); // and then nothing
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url, { settings: { socketTimeout: SOCKET_TIMEOUT } });
  const started = Date.now();
  await cutResponse(t, h);
  const took = Date.now() - started;
  t.ok(took >= SOCKET_TIMEOUT, `aborted after the socket timeout (${took} ms)`);
  t.equal(h.faults.length, 1, 'one fault');
  assertFault(t, h.faults[0], { code: 101509, base: 101504, state: 5, side: 'target', reason: 'socket_timeout', reused: false });
  await sleep(20);
  t.ok(backend.conns[0]?.closed, 'the backend socket was closed');
});

t.test('a slow body that keeps trickling within the socket timeout is not cut', async (t) => {
  const SOCKET_TIMEOUT = 300;
  const backend = await rawBackend({
    onRequest: (c) => {
      c.write('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n');
      let i = 0;
      const timer = setInterval(() => {
        c.write(String(i));
        if (++i === 10) clearInterval(timer);
      }, 60); // 10 bytes over ~0.6 s, twice the timeout, each gap well under it
    },
  });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url, { settings: { socketTimeout: SOCKET_TIMEOUT } });
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  await c.write(get('/trickle'));
  const res = await c.finalResponse(5000);
  t.equal(res.body.toString(), '0123456789');
  t.ok(res.complete);
  t.equal(h.faults.length, 0, 'no fault: inactivity is measured between packets, not over the exchange');
});

checkTransitions(t);
