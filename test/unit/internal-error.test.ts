/**
 * ERR_INTERNAL (lib/errors.ts InternalError, docs/operations.md) raised by real code for a broken
 * invariant, not built by hand: the fault table asked for a code it does not hold, and the HTTP parser
 * driven out of order (resumed while not paused, used after destroy()).
 */
import t from 'tap';
import { InternalError, ThroughwayError } from '../../lib/errors';
import { fault, type GatewayCode } from '../../lib/faults';
import { HttpParser } from '../../lib/transport/parser';
import { Recorder } from './helpers/parser-recorder';

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  return undefined;
}

t.test('fault() with a code the fault table lacks throws ERR_INTERNAL', async (t) => {
  const err = thrown(() => fault(123456 as GatewayCode));
  t.ok(err instanceof InternalError, 'an InternalError');
  t.ok(err instanceof ThroughwayError);
  t.match(err, { code: 'ERR_INTERNAL', message: 'unknown fault code 123456' });
  t.equal(
    thrown(() => fault(900901 as GatewayCode)),
    undefined,
    'a code of the table is no error',
  );
});

t.test('the HTTP parser used out of order throws ERR_INTERNAL', async (t) => {
  const parser = new HttpParser('request', new Recorder(), 8192);
  t.match(
    thrown(() => parser.resume()),
    { code: 'ERR_INTERNAL', message: 'HttpParser.resume() while not paused' },
  );
  parser.destroy();
  const after = thrown(() => parser.execute(Buffer.from('GET / HTTP/1.1\r\n\r\n', 'latin1')));
  t.ok(after instanceof InternalError);
  t.match(after, { code: 'ERR_INTERNAL', message: 'HttpParser used after destroy()' });
});
