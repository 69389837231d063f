/**
 * A backend whose connect never completes: 101508 at target state REQUEST_READY(0), answered 504 once
 * connectTimeout has passed. Never by connecting outside 127.0.0.0/8: a loopback listener with a full
 * accept queue drops the SYN, and an injected connect step gives a socket that stays "connecting".
 */
import t from 'tap';
import * as net from 'node:net';
import { blackholeListener } from '../helpers/backend';
import { get, rawRequest } from '../helpers/client';
import { assertFault, assertFaultBody, checkTransitions, startTransport } from '../helpers/transport';

const CONNECT_TIMEOUT = 300;

t.test('connect timeout against a loopback listener whose accept queue is full: 101508, 504', async (t) => {
  const hole = await blackholeListener();
  t.teardown(() => hole.close());
  const h = await startTransport(t, hole.url, { settings: { connectTimeout: CONNECT_TIMEOUT } });
  const started = Date.now();
  const res = await rawRequest(h.port, get('/slow-connect'));
  const took = Date.now() - started;
  assertFaultBody(t, res, 504, 101508, 101508, 0);
  t.ok(took >= CONNECT_TIMEOUT, `answered after the connect timeout (${took} ms >= ${CONNECT_TIMEOUT})`);
  t.ok(took < CONNECT_TIMEOUT + 3000, `and not much later (${took} ms)`);
  t.equal(h.faults.length, 1, 'one fault');
  assertFault(t, h.faults[0], {
    code: 101508,
    base: 101508,
    state: 0,
    side: 'target',
    reason: 'connect_timeout',
    httpStatus: 504,
    reused: false,
  });
  t.equal(h.transport.connections().targets, 0, 'the connecting socket was destroyed');
});

t.test('connect timeout with an injected connect step that never connects: 101508, 504', async (t) => {
  const hole = await blackholeListener();
  t.teardown(() => hole.close());
  const made: net.Socket[] = [];
  const h = await startTransport(t, 'http://backend.invalid:8080', {
    settings: { connectTimeout: CONNECT_TIMEOUT },
    // Whatever host the route names, the socket goes to the loopback black hole.
    connect: () => {
      const s = net.connect({ port: hole.port, host: '127.0.0.1' });
      made.push(s);
      return s;
    },
  });
  const res = await rawRequest(h.port, get('/x'));
  assertFaultBody(t, res, 504, 101508, 101508, 0);
  assertFault(t, h.faults[0], { code: 101508, base: 101508, state: 0, side: 'target', reason: 'connect_timeout', reused: false });
  t.equal(made.length, 1, 'one connect attempt (a connect timeout is not retried)');
  t.ok(made[0]?.destroyed, 'the socket was destroyed at the timeout');
});

t.test('a request body waiting on a connect that times out: 101508, 504, connection closed', async (t) => {
  const hole = await blackholeListener();
  t.teardown(() => hole.close());
  const h = await startTransport(t, hole.url, { settings: { connectTimeout: CONNECT_TIMEOUT } });
  // The body is incomplete (10 of 20 bytes): the client connection cannot be reused after the fault.
  const res = await rawRequest(h.port, 'POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: 20\r\n\r\n0123456789');
  assertFaultBody(t, res, 504, 101508, 101508, 0);
  t.equal(res.headers['connection'], 'close');
  t.ok(res.closed, 'closed after the fault');
});

checkTransitions(t);
