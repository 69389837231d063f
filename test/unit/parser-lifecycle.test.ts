/**
 * lib/transport/parser.ts shares one wasm instance, one input buffer and one "current parser" between
 * all parsers: interleaved parsers must not disturb each other, a nested execute must be refused
 * (one shared wasm instance), a throwing callback must not wedge the module, and destroyed parsers must give their wasm
 * memory back (the wasm heap is never garbage collected).
 */
import t from 'tap';
import { ExecStatus, HEAD_CONTINUE, HttpParser, wasmHeapBytes } from '../../lib/transport/parser';
import { latin1, parseCut, Recorder } from './helpers/parser-recorder';

const GET = latin1('GET /a HTTP/1.1\r\nHost: h\r\nX-Long: ' + 'v'.repeat(100) + '\r\n\r\n');

t.test('interleaved parsers keep their own split spans', async (t) => {
  const recA = new Recorder();
  const recB = new Recorder();
  const a = new HttpParser('request', recA, 8192);
  const b = new HttpParser('response', recB, 8192);
  const reqA = latin1('GET /first-half-second-half HTTP/1.1\r\nX-Name: first-value-second-value\r\n\r\n');
  const resB = latin1('HTTP/1.1 200 OK\r\nX-Other: other\r\nContent-Length: 3\r\n\r\nabc');
  // Cut A inside the URL, then inside a value, parsing B whole in between each time.
  const cut1 = reqA.indexOf('second-half');
  const cut2 = reqA.indexOf('second-value');
  t.equal(a.execute(reqA, 0, cut1), ExecStatus.OK);
  t.equal(b.execute(resB), ExecStatus.OK);
  t.equal(a.execute(reqA, cut1, cut2), ExecStatus.OK);
  b.reset();
  t.equal(b.execute(resB), ExecStatus.OK);
  t.equal(a.execute(reqA, cut2), ExecStatus.OK);
  t.strictSame(parseCut('request', reqA, []).events, recA.events, 'A as if parsed alone');
  t.equal(recB.events.filter((e) => e.event === 'complete').length, 2);
  a.destroy();
  b.destroy();
});

t.test('a nested execute is refused and a caught refusal leaves the outer parse intact', async (t) => {
  const other = new HttpParser('request', new Recorder(), 8192);
  const rec = new Recorder();
  const refusals: string[] = [];
  rec.head = () => {
    try {
      other.execute(GET);
    } catch (err) {
      refusals.push((err as Error).message);
    }
    return HEAD_CONTINUE;
  };
  const parser = new HttpParser('request', rec, 8192);
  const two = Buffer.concat([GET, latin1('POST /b HTTP/1.1\r\nContent-Length: 2\r\n\r\nok')]);
  t.equal(parser.execute(two), ExecStatus.OK);
  t.equal(refusals.length, 2);
  t.match(refusals[0], /inside a parser callback/);
  t.strictSame(
    rec.events.map((e) => (e.event === 'head' ? e.url : e.event === 'body' ? e.text : 'complete')),
    ['/a', 'complete', '/b', 'ok', 'complete'],
  );
  t.equal(other.execute(GET), ExecStatus.OK, 'the other parser was never touched');
  t.equal(other.url, '/a');
  parser.destroy();
  other.destroy();
});

t.test('a throwing callback propagates, fails that parser only, and reset() recovers it', async (t) => {
  for (const where of ['head', 'body', 'complete'] as const) {
    const rec = new Recorder();
    const boom = (): never => {
      throw new Error(`boom in ${where}`);
    };
    if (where === 'head') rec.head = boom;
    if (where === 'complete') rec.complete = boom;
    if (where === 'body') rec.onBody = boom;
    const parser = new HttpParser('request', rec, 8192);
    const input = latin1('POST /x HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi');
    t.throws(() => parser.execute(input), { message: `boom in ${where}` });
    t.equal(parser.execute(input), ExecStatus.ERROR, `${where}: the parser is failed`);
    t.equal(parser.errorName, 'HPE_USER');
    const bystander = new HttpParser('request', new Recorder(), 8192);
    t.equal(bystander.execute(GET), ExecStatus.OK, `${where}: other parsers still work`);
    bystander.destroy();
    parser.reset();
    rec.head = HEAD_CONTINUE;
    rec.complete = HEAD_CONTINUE;
    rec.onBody = Recorder.prototype.onBody;
    rec.events = [];
    t.equal(parser.execute(input), ExecStatus.OK, `${where}: usable after reset()`);
    t.strictSame(
      rec.events.map((e) => e.event),
      ['head', 'body', 'complete'],
    );
    parser.destroy();
  }
});

t.test('reset() in the middle of a head forgets it', async (t) => {
  const rec = new Recorder();
  const parser = new HttpParser('request', rec, 8192);
  t.equal(parser.execute(latin1('GET /abandoned HTTP/1.1\r\nX-Half: va')), ExecStatus.OK);
  parser.reset();
  t.equal(parser.execute(GET), ExecStatus.OK);
  t.strictSame(rec.events, parseCut('request', GET, []).events);
  parser.destroy();
});

t.test('misuse is refused loudly', async (t) => {
  const parser = new HttpParser('request', new Recorder(), 8192);
  t.throws(() => parser.resume(), /not paused/);
  t.throws(() => parser.execute(GET, 0, GET.length + 1), RangeError, 'a range past the Buffer would parse stale wasm memory');
  t.throws(() => parser.execute(GET, -1), RangeError);
  parser.destroy();
  parser.destroy();
  t.equal(parser.ptr, 0);
  t.throws(() => parser.execute(GET), /after destroy/);
  t.throws(() => parser.finish(), /after destroy/);
  t.throws(() => parser.reset(), /after destroy/);
});

t.test('create/execute/destroy cycles do not grow wasm memory', async (t) => {
  const warm = new HttpParser('request', new Recorder(), 8192);
  warm.execute(GET);
  warm.destroy();
  const before = wasmHeapBytes();
  for (let i = 0; i < 50_000; i++) {
    const p = new HttpParser(i % 2 === 0 ? 'request' : 'response', new Recorder(), 8192);
    p.execute(GET);
    p.destroy();
  }
  t.equal(wasmHeapBytes(), before);
});

t.test('a large read grows the shared input buffer once, not per execute', async (t) => {
  const body = Buffer.alloc(1 << 20, 0x62);
  const big = Buffer.concat([latin1(`POST / HTTP/1.1\r\nContent-Length: ${body.length}\r\n\r\n`), body]);
  const parser = new HttpParser('request', new Recorder(), 8192);
  t.equal(parser.execute(big), ExecStatus.OK);
  const after = wasmHeapBytes();
  for (let i = 0; i < 50; i++) t.equal(parser.execute(big), ExecStatus.OK);
  t.equal(wasmHeapBytes(), after);
  parser.destroy();
});

t.test('control: parsers that are never destroyed do grow the heap', async (t) => {
  // Shows the check above can fail: this is the leak of a never-collected wasm heap.
  const before = wasmHeapBytes();
  const leaked: HttpParser[] = [];
  for (let i = 0; i < 50_000; i++) leaked.push(new HttpParser('request', new Recorder(), 8192));
  t.ok(wasmHeapBytes() > before);
  for (const p of leaked) p.destroy();
});
