import t from 'tap';
import { checkTargetAttach, invariantBroken, InvariantError } from '../../lib/transport/invariants';
import { ProtocolState as S } from '../../lib/transport/states';
import {
  discardBody,
  Exchange,
  requestBody,
  markRequestComplete,
  markResponseDone,
  markResponseStarted,
  Progress,
  type ExchangeOwner,
} from '../../lib/transport/exchange';

t.test('a broken invariant throws a coded error naming the state', async (t) => {
  t.throws(() => invariantBroken('source', 'feed', S.REQUEST_READY, 'an exchange in REQUEST_READY'), {
    code: 'ERR_TRANSPORT_INVARIANT',
    name: 'InvariantError',
  });
  t.ok(new InvariantError('source', 'feed', S.REQUEST_READY, 'x').message.includes('REQUEST_READY'));
});

t.test('a target attached while serving another exchange throws', async (t) => {
  t.throws(() => checkTargetAttach(S.REQUEST_READY, true, false, false), { code: 'ERR_TRANSPORT_INVARIANT' });
  t.throws(() => checkTargetAttach(S.RESPONSE_BODY, false, false, false), { code: 'ERR_TRANSPORT_INVARIANT' });
  t.throws(() => checkTargetAttach(S.REQUEST_READY, false, true, false), { code: 'ERR_TRANSPORT_INVARIANT' });
  t.throws(() => checkTargetAttach(S.REQUEST_READY, false, false, true), { code: 'ERR_TRANSPORT_INVARIANT' });
  t.doesNotThrow(() => checkTargetAttach(S.REQUEST_READY, false, false, false));
});

/** An exchange over a stand-in owner: only what the constructor reads. */
function exchangeOf(head: { chunked?: boolean; contentLength?: number }): Exchange {
  const parser = {
    method: 'POST',
    url: '/',
    headers: ['Host', 'x'],
    versionMajor: 1,
    versionMinor: 1,
    contentLength: head.contentLength ?? -1,
    chunked: head.chunked ?? false,
    upgrade: false,
  };
  const owner = {
    id: 1,
    remoteAddress: '127.0.0.1',
    trustedPeer: false,
    core: { trusted: null },
    remotePort: 1,
    secure: false,
    writer: {},
    parser,
    requests: 0,
  } as unknown as ExchangeOwner;
  const ex = new Exchange(owner, 0);
  ex.body = requestBody(parser.chunked, parser.contentLength);
  return ex;
}

t.test('an exchange progress only moves forward, and ABORTED ends it', async (t) => {
  const early = exchangeOf({ contentLength: 10 });
  t.equal(early.progress, Progress.WAITING);
  t.equal(early.ready, false);
  markResponseStarted(early);
  t.equal(early.progress, Progress.EARLY, 'a response before the request is complete');
  t.equal(early.requestComplete, false);
  markResponseDone(early);
  t.equal(early.progress, Progress.ANSWERED);
  markRequestComplete(early);
  t.equal(early.progress, Progress.DONE);
  const plain = exchangeOf({});
  markRequestComplete(plain);
  t.equal(plain.progress, Progress.REQUESTED);
  markResponseStarted(plain);
  t.equal(plain.progress, Progress.RESPONDING);
  plain.progress = Progress.ABORTED;
  markResponseDone(plain);
  t.equal(plain.progress, Progress.ABORTED, 'nothing moves an aborted exchange');
  t.equal(plain.responseDone, false);
});

t.test('a body mode carries its framing into discard', async (t) => {
  const counted = exchangeOf({ contentLength: 10 });
  t.same(counted.body, { kind: 'counted', remaining: 10 });
  discardBody(counted);
  t.same(counted.body, { kind: 'discard', remaining: 10 }, 'a Content-Length body is still counted while dropped');
  const chunked = exchangeOf({ chunked: true });
  t.equal(chunked.body.kind, 'parsed');
  discardBody(chunked);
  t.same(chunked.body, { kind: 'discard', remaining: -1 }, 'a chunked one is still parsed');
  const none = exchangeOf({});
  t.equal(none.body.kind, 'none');
  discardBody(none);
  t.equal(none.body.kind, 'none', 'no body, nothing to drop');
});
