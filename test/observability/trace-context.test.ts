/**
 * W3C Trace Context parsing (traceparent §3.2, tracestate §3.3) and the phase observer the tracer hangs
 * on (phases.ts runChainObserved), with synchronous, asynchronous and failing phases.
 */
import t from 'tap';
import { redactUrl } from '../../lib/observability/post';
import {
  formatTraceParent,
  newSpanId,
  newTraceId,
  parseTraceParent,
  traceContextOf,
  withTraceFields,
} from '../../lib/observability/trace-context';
import { CallContext, runChainObserved, type Outcome, type Phase, type PhaseObserver } from '../../lib/gateway/phases';
import type { GatewayRuntime } from '../../lib/gateway/runtime';
import type { LocalResponse, SourceRequest } from '../../lib/transport/types';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';

t.test('traceparent: valid and invalid values', async (t) => {
  t.same(parseTraceParent(`00-${TRACE}-${PARENT}-01`), { traceId: TRACE, parentId: PARENT, flags: 1 });
  t.same(
    parseTraceParent(`  00-${TRACE}-${PARENT}-00 `),
    { traceId: TRACE, parentId: PARENT, flags: 0 },
    'optional whitespace around the value',
  );
  t.same(
    parseTraceParent(`01-${TRACE}-${PARENT}-03-future-field`),
    { traceId: TRACE, parentId: PARENT, flags: 3 },
    'a later version: the first four fields',
  );
  t.same(parseTraceParent(`cc-${TRACE}-${PARENT}-09`), { traceId: TRACE, parentId: PARENT, flags: 9 });
  t.same(
    [`00-${TRACE}-${PARENT}-ab`, `00-${TRACE}-${PARENT}-f0`, `00-${TRACE}-${PARENT}-1e`].map((v) => parseTraceParent(v)?.flags),
    [0xab, 0xf0, 0x1e],
    'flags: both hex digits, letters too',
  );
  const invalid: Record<string, string> = {
    'version ff': `ff-${TRACE}-${PARENT}-01`,
    'version 00 with more': `00-${TRACE}-${PARENT}-01-x`,
    'later version, junk after flags': `01-${TRACE}-${PARENT}-01x`,
    'zero trace id': `00-${'0'.repeat(32)}-${PARENT}-01`,
    'zero parent id': `00-${TRACE}-${'0'.repeat(16)}-01`,
    'upper-case hex': `00-${TRACE.toUpperCase()}-${PARENT}-01`,
    'short trace id': `00-${TRACE.slice(1)}-${PARENT}-01`,
    'non-hex flags': `00-${TRACE}-${PARENT}-0g`,
    'non-hex version': `0x-${TRACE}-${PARENT}-01`,
    'wrong separators': `00_${TRACE}_${PARENT}_01`,
    empty: '',
  };
  for (const [why, v] of Object.entries(invalid)) t.equal(parseTraceParent(v), undefined, why);
});

t.test('traceparent: every position of the ids checked, one digit enough to make an id not zero', async (t) => {
  const bad: string[] = [];
  // Characters next to the hex ranges in ASCII, and the upper-case letters.
  for (const c of ['/', ':', '`', 'g', 'A', 'F', ' ', '-']) {
    for (let i = 3; i < 52; i++) {
      if (i === 35) continue;
      const v = `00-${TRACE}-${PARENT}-01`;
      const w = v.slice(0, i) + c + v.slice(i + 1);
      if (parseTraceParent(w) !== undefined) bad.push(`${c} at ${i}`);
    }
  }
  t.same(bad, [], 'a character other than a lower-case hex digit anywhere in an id makes it invalid');
  const alone: string[] = [];
  for (let i = 0; i < 32; i++) {
    const id = '0'.repeat(i) + 'f' + '0'.repeat(31 - i);
    if (parseTraceParent(`00-${id}-${PARENT}-01`)?.traceId !== id) alone.push(`trace ${i}`);
  }
  for (let i = 0; i < 16; i++) {
    const id = '0'.repeat(i) + '1' + '0'.repeat(15 - i);
    if (parseTraceParent(`00-${TRACE}-${id}-01`)?.parentId !== id) alone.push(`parent ${i}`);
  }
  t.same(alone, [], 'an id with a single digit other than 0, at any position, is valid');
  t.equal(parseTraceParent(`00-${TRACE}-${PARENT}-0`), undefined, 'one flags digit');
  t.equal(parseTraceParent(`0-${TRACE}-${PARENT}-01`), undefined, 'one version digit');
  t.same(parseTraceParent(`\t00-${TRACE}-${PARENT}-01\t`)?.flags, 1, 'tabs around the value are trimmed');
});

t.test('formatTraceParent: every flags value as two lower-case hex digits', async (t) => {
  const wrong: number[] = [];
  for (let f = 0; f < 256; f++)
    if (formatTraceParent(TRACE, PARENT, f) !== `00-${TRACE}-${PARENT}-${f.toString(16).padStart(2, '0')}`) wrong.push(f);
  t.same(wrong, []);
  t.equal(parseTraceParent(formatTraceParent(TRACE, PARENT, 0xa7))?.flags, 0xa7, 'what it writes reads back');
});

t.test('trace context of request fields', async (t) => {
  t.same(traceContextOf(['Host', 'h', 'TraceParent', `00-${TRACE}-${PARENT}-01`, 'tracestate', 'a=1', 'TRACESTATE', ' b=2 ']), {
    parent: { traceId: TRACE, parentId: PARENT, flags: 1 },
    state: 'a=1,b=2',
  });
  t.same(
    traceContextOf(['traceparent', `00-${TRACE}-${PARENT}-01`, 'traceparent', `00-${TRACE}-${PARENT}-01`, 'tracestate', 'a=1']),
    { parent: undefined, state: undefined },
    'two traceparent fields: invalid, tracestate ignored',
  );
  t.same(traceContextOf(['tracestate', 'a=1']), { parent: undefined, state: undefined }, 'tracestate alone is not used');
  t.same(traceContextOf([]), { parent: undefined, state: undefined });
  t.same(
    traceContextOf(['traceparenx', `00-${TRACE}-${PARENT}-01`, 'tracestatf', 'a=1']),
    { parent: undefined, state: undefined },
    'names of the same length that differ are other fields',
  );
  t.same(
    traceContextOf(['TRACEPARENT', `00-${TRACE}-${PARENT}-00`, 'TraceState', 'x=1']),
    { parent: { traceId: TRACE, parentId: PARENT, flags: 0 }, state: 'x=1' },
    'any letter case',
  );
});

t.test('ids and the outgoing fields', async (t) => {
  const traces = new Set<string>();
  const spans = new Set<string>();
  for (let i = 0; i < 1000; i++) {
    traces.add(newTraceId());
    spans.add(newSpanId());
  }
  t.equal(traces.size, 1000, 'unique trace ids (the pooled buffer refills)');
  t.equal(spans.size, 1000);
  t.ok([...traces].every((x) => /^[0-9a-f]{32}$/.test(x)) && [...spans].every((x) => /^[0-9a-f]{16}$/.test(x)));
  t.equal(formatTraceParent(TRACE, PARENT, 1), `00-${TRACE}-${PARENT}-01`);
  t.equal(formatTraceParent(TRACE, PARENT, 0xab), `00-${TRACE}-${PARENT}-ab`);
  const inFields = ['Host', 'h', 'traceparent', 'old', 'X-A', '1', 'TraceState', 'old=1'];
  const out = withTraceFields(inFields, 'new', 's=1');
  t.same(out, ['Host', 'h', 'X-A', '1', 'traceparent', 'new', 'tracestate', 's=1']);
  t.same(inFields, ['Host', 'h', 'traceparent', 'old', 'X-A', '1', 'TraceState', 'old=1'], 'the request fields are not edited');
  t.same(withTraceFields(['Host', 'h'], 'new', undefined), ['Host', 'h', 'traceparent', 'new']);
  t.same(
    withTraceFields(['TRACEPARENT', 'old', 'traceparenx', 'kept', 'tracestate', 'old=1'], 'new', undefined),
    ['traceparenx', 'kept', 'traceparent', 'new'],
    'names in any case are replaced, others of the same length kept',
  );
});

t.test('an all-zero id from the random pool is skipped, never handed out (§3.2.2.3)', async (t) => {
  // trace-context.ts calls crypto's randomFillSync through the module object: the next refill of its
  // pool gives zeros only, every one of its 256 span ids invalid, and the refill after that is random.
  const cryptoModule = require('node:crypto') as { randomFillSync: (b: Buffer) => Buffer };
  const real = cryptoModule.randomFillSync;
  let fills = 0;
  cryptoModule.randomFillSync = (b: Buffer): Buffer => {
    fills++;
    return fills === 1 ? b.fill(0) : real(b);
  };
  t.teardown(() => {
    cryptoModule.randomFillSync = real;
  });
  const ids: string[] = [];
  // At most 256 ids are left in the pool before the zero refill.
  while (fills === 0 && ids.length < 300) ids.push(newSpanId());
  t.equal(fills, 2, 'the pool of zeros was passed over whole and filled again at once');
  const after = [newSpanId(), newTraceId()];
  t.notOk(
    [...ids, ...after].some((id) => /^0+$/.test(id)),
    'no id handed out is all zeros',
  );
  t.ok(after.every((id) => /^[0-9a-f]+$/.test(id) && id.length >= 16));
});

t.test('receiver URLs in log lines never show credentials', async (t) => {
  t.equal(redactUrl('http://pub:s3cret@127.0.0.1:9/events'), 'http://****@127.0.0.1:9/events');
  t.equal(redactUrl('ssl://admin:admin@localhost:7712'), 'ssl://****@localhost:7712');
  t.equal(redactUrl('http://127.0.0.1:9/a@b'), 'http://127.0.0.1:9/a@b', 'an @ in the path is not user information');
});

t.test('runChainObserved: begin/end around each phase, synchronous and asynchronous; errors reported', async (t) => {
  const calls: string[] = [];
  const obs: PhaseObserver = {
    begin: (_ctx, p) => {
      calls.push(`begin ${p.name}`);
      return 42;
    },
    end: (_ctx, p, started, o: Outcome, err?: unknown) => {
      calls.push(
        `end ${p.name} ${started} ${o === undefined ? '-' : Object.keys(o)[0]}${err !== undefined ? ` error ${(err as Error).message}` : ''}`,
      );
    },
  };
  const answer: LocalResponse = { status: 204 };
  const ctx = (): CallContext =>
    new CallContext(
      { method: 'GET', url: '/', headers: [] } as unknown as SourceRequest,
      { headers: { dropFromResponseSet: undefined } } as unknown as GatewayRuntime,
    );
  const sync: Phase[] = [
    { name: 'route', enforced: true, run: () => undefined },
    { name: 'cors', enforced: true, run: () => ({ answer }) },
    {
      name: 'send',
      enforced: true,
      run: () => {
        t.fail('not reached');
        return undefined;
      },
    },
  ];
  const d = runChainObserved(ctx(), sync, obs);
  t.same(d, answer);
  t.same(calls, ['begin route', 'end route 42 -', 'begin cors', 'end cors 42 answer']);

  calls.length = 0;
  const async: Phase[] = [
    { name: 'route', enforced: true, run: () => Promise.resolve(undefined) },
    { name: 'authentication', enforced: true, run: () => Promise.resolve({ answer }) },
  ];
  const p = runChainObserved(ctx(), async, obs);
  t.ok(p instanceof Promise);
  t.same(await p, answer);
  t.same(
    calls,
    ['begin route', 'end route 42 -', 'begin authentication', 'end authentication 42 answer'],
    'an asynchronous phase ends when its promise settles',
  );

  calls.length = 0;
  const failing: Phase[] = [{ name: 'throttling', enforced: true, run: () => Promise.reject(new Error('redis down')) }];
  await t.rejects(Promise.resolve(runChainObserved(ctx(), failing, obs)), { message: 'redis down' });
  t.same(calls, ['begin throttling', 'end throttling 42 - error redis down']);

  calls.length = 0;
  const throwing: Phase[] = [
    {
      name: 'mediation',
      enforced: true,
      run: () => {
        throw new Error('boom');
      },
    },
  ];
  t.throws(() => runChainObserved(ctx(), throwing, obs), { message: 'boom' });
  t.same(calls, ['begin mediation', 'end mediation 42 - error boom']);
});
