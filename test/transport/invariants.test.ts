import t from 'tap';
import { CHECKS, checkSource, checkTargetAttach } from '../../lib/transport/invariants';
import { ProtocolState as S } from '../../lib/transport/states';

t.test('the state invariants are checked in test processes (TAP=1)', async (t) => {
  t.equal(CHECKS, true);
});

t.test('an impossible source combination throws a coded error', async (t) => {
  // A body both parsed (chunked) and counted (Content-Length) at once.
  t.throws(() => checkSource('feed', S.REQUEST_BODY, true, false, true, 10, false, false), { code: 'ERR_TRANSPORT_INVARIANT' });
  // An exchange in REQUEST_READY.
  t.throws(() => checkSource('finish', S.REQUEST_READY, true, false, false, 0, false, false), { code: 'ERR_TRANSPORT_INVARIANT' });
  t.doesNotThrow(() => checkSource('feed', S.REQUEST_BODY, true, false, false, 10, false, false));
});

t.test('a target attached while serving another exchange throws', async (t) => {
  t.throws(() => checkTargetAttach(S.REQUEST_READY, true, false, false, false), { code: 'ERR_TRANSPORT_INVARIANT' });
  t.throws(() => checkTargetAttach(S.RESPONSE_BODY, false, false, false, false), { code: 'ERR_TRANSPORT_INVARIANT' });
  t.doesNotThrow(() => checkTargetAttach(S.REQUEST_READY, false, false, false, false));
});
