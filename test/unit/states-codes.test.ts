import t from 'tap';
import { ProtocolState as S, TRANSITIONS, STATE_NAMES, canTransition } from '../../lib/transport/states';
import { makeFault, FAULT_KINDS, TransportBase, faultJson } from '../../lib/transport/codes';

t.test('the spec numbers the states 0..8 (spec 002 part 3)', async (t) => {
  t.same(STATE_NAMES, [
    'REQUEST_READY',
    'REQUEST_HEAD',
    'REQUEST_BODY',
    'REQUEST_DONE',
    'RESPONSE_HEAD',
    'RESPONSE_BODY',
    'RESPONSE_DONE',
    'CLOSING',
    'CLOSED',
  ]);
  t.equal(S.REQUEST_DONE, 3);
  t.equal(S.CLOSED, 8);
  t.equal(TRANSITIONS.length, 9);
});

t.test('transition table', async (t) => {
  t.ok(canTransition(S.RESPONSE_DONE, S.REQUEST_READY), 'keep-alive reuse');
  t.ok(canTransition(S.REQUEST_BODY, S.RESPONSE_HEAD), 'early response');
  t.ok(canTransition(S.RESPONSE_HEAD, S.RESPONSE_HEAD), 'interim 1xx');
  t.notOk(canTransition(S.CLOSED, S.REQUEST_READY), 'closed is final');
  t.notOk(canTransition(S.REQUEST_READY, S.RESPONSE_BODY), 'no skipping the head');
  t.notOk(canTransition(S.REQUEST_DONE, S.REQUEST_HEAD), 'no going back within an exchange');
  for (let s = 0; s < 8; s++) t.ok(canTransition(s, S.CLOSED) || s === S.CLOSED, `state ${s} can close`);
});

t.test('code = base + state (spec 002 part 7 rules 1 and 2)', async (t) => {
  const f = makeFault('socket_timeout', S.REQUEST_DONE, true, 'no data');
  t.equal(f.code, 101507, "the spec's example: timeout at state 3");
  t.equal(f.base, TransportBase.CONNECTION_TIMEOUT);
  t.equal(f.state, 3);
  t.equal(f.stateName, 'REQUEST_DONE');
  t.equal(f.side, 'target');
  t.equal(f.httpStatus, 504);
  t.match(f.description, /base 101504, target state REQUEST_DONE\(3\), reused connection, no data/);
  t.equal(makeFault('connect_refused', S.REQUEST_READY).code, 101503);
  t.equal(makeFault('closed', S.REQUEST_BODY).code, 101507);
  t.equal(makeFault('protocol', S.RESPONSE_HEAD).code, 101510);
  t.equal(makeFault('body_too_large', S.REQUEST_BODY).code, 103001, 'own codes do not add the state');
});

t.test('statuses: 502 connection/protocol, 504 timeouts, 503 full', async (t) => {
  t.equal(FAULT_KINDS.connect_refused.httpStatus, 502);
  t.equal(FAULT_KINDS.protocol.httpStatus, 502);
  t.equal(FAULT_KINDS.connect_timeout.httpStatus, 504);
  t.equal(FAULT_KINDS.socket_timeout.httpStatus, 504);
  t.equal(FAULT_KINDS.pool_full.httpStatus, 503);
  t.equal(FAULT_KINDS.queue_full.httpStatus, 503);
});

t.test('fault body is the spec shape', async (t) => {
  t.same(JSON.parse(faultJson(101503, 'Connection failed', 'd "quoted"')), {
    fault: { code: 101503, type: 'Status report', message: 'Connection failed', description: 'd "quoted"' },
  });
});
