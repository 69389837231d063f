/**
 * The cache-miss bench (bench/cache.ts): callgrind dumps with several events read per event, the kept
 * events per request in total and by function, the table, and its options refused before anything starts.
 */
import t from 'tap';
import * as net from 'node:net';
import { pathWithOnlySh } from '../helpers/path-only-sh';
import { missesOf, renderMisses, runCacheBench, type MissCell, type MissRun } from '../../bench/cache';
import { connectionSet, parseCallgrind, parseCallgrindEvents } from '../../bench/instructions';

// A --cache-sim=yes dump: nine events, trailing zeros left out, a call's inclusive cost to skip.
const DUMP = [
  'version: 1',
  'creator: callgrind-3.19.0',
  'events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw',
  'fl=(1) ???',
  'fn=(1) 0x0000000000001010',
  '0x1010 1000 300 100 5 40 2 1 20 1',
  '+4 200 50',
  'cfn=(2) node::StreamBase::CallJSOnreadMethod(long)',
  'calls=1 0x9000',
  '* 99999 9999 999 99 99 99 99 99 99',
  'fn=(2)',
  '0x9000 3000 900 0 0 60 0 0 30',
  'fn=(3) uv__io_poll',
  '-2 10 2 0 0 1 0 0 0',
  'totals: 4210',
].join('\n');

t.test('parseCallgrindEvents: one cost per event and function, trailing zeros left out, calls skipped', async (t) => {
  const { events, self } = parseCallgrindEvents(DUMP);
  t.same(events, ['Ir', 'Dr', 'Dw', 'I1mr', 'D1mr', 'D1mw', 'ILmr', 'DLmr', 'DLmw']);
  t.same(
    self.get('0x0000000000001010'),
    [1200, 350, 100, 5, 40, 2, 1, 20, 1],
    "the short line adds to the first two events only; the call is the callee's",
  );
  t.same(self.get('node::StreamBase::CallJSOnreadMethod(long)'), [3000, 900, 0, 0, 60, 0, 0, 30, 0], 'named by cfn=, found by its id');
  t.same(self.get('uv__io_poll'), [10, 2, 0, 0, 1, 0, 0, 0, 0]);
  t.equal(parseCallgrind(DUMP).get('0x0000000000001010'), 1200, 'parseCallgrind takes the Ir column, not the last number of the line');
});

t.test('parseCallgrindEvents: a dump with two position columns (instr line) reads its costs after both', async (t) => {
  const dump = ['events: Ir DLmr', 'positions: instr line', 'fn=(1) f', '0x10 12 500 3', '+2 -1 100'].join('\n');
  t.same(parseCallgrindEvents(dump).self.get('f'), [600, 3]);
});

t.test('missesOf: the kept events per request, in total and for functions with at least 0.01 last-level misses per request', async (t) => {
  const names: Record<string, string> = { '0x0000000000001010': 'writeJoined lib/transport/direct-write.js' };
  const m = missesOf(DUMP, (raw) => names[raw] ?? raw, 10);
  t.same(m.total, { Ir: 421, D1mr: 10.1, DLmr: 5 });
  t.same(
    m.byFunction['writeJoined lib/transport/direct-write.js'],
    { Ir: 120, D1mr: 4, DLmr: 2 },
    'JIT addresses by their symbolized name',
  );
  t.same(m.byFunction['node::StreamBase::CallJSOnreadMethod(long)'], { Ir: 300, D1mr: 6, DLmr: 3 });
  t.notOk('uv__io_poll' in m.byFunction, 'no last-level miss: not listed (still in the total)');
  t.throws(() => missesOf('events: Ir\nfn=(1) f\n0x1 5\n', (r) => r, 1), /has no D1mr, DLmr \(events: Ir\): was --cache-sim=yes given\?/);
});

function cell(conns: number, round: number, dl: number, fns: Record<string, number>): MissCell {
  const byFunction: Record<string, { Ir: number; D1mr: number; DLmr: number }> = {};
  for (const [k, v] of Object.entries(fns)) byFunction[k] = { Ir: 100, D1mr: 1, DLmr: v };
  return { conns, round, total: { Ir: 40_000 + round, D1mr: 300, DLmr: dl }, byFunction };
}

t.test('renderMisses: medians per connection count, the growth, and the functions that grow most first', async (t) => {
  const run: MissRun = {
    date: '2026-11-29T00:00:00.000Z',
    clients: 1000,
    requests: 10_000,
    rounds: 2,
    llBytes: 524_288,
    cells: [
      cell(64, 1, 100, { a: 1, b: 2, 'c|d': 1 }),
      cell(1000, 1, 150, { a: 5, b: 2.5, 'c|d': 1 }),
      cell(1000, 2, 160, { a: 6, b: 3, 'c|d': 1 }),
      cell(64, 2, 110, { a: 1, b: 2, 'c|d': 1 }),
    ],
  };
  const out = renderMisses(run, 3);
  t.match(out, /last level 512 KiB\), 2 round\(s\) of 10000 requests per cell/);
  t.match(out, /\| 64 \| 40002 \(40001–40002\) \| 300\.0 \(300\.0–300\.0\) \| 105\.0 \(100\.0–110\.0\) \|/);
  t.match(out, /\| 1,000 \| 40002 \(40001–40002\) \| 300\.0 \(300\.0–300\.0\) \| 155\.0 \(150\.0–160\.0\) \|/);
  t.match(out, /Last-level misses per request, 1,000 ÷ 64: 1\.48×; instructions 1\.000×\./);
  const rows = out.split('\n').filter((l) => /^\| (a|b|c\\\|d) \|/.test(l));
  t.same(
    rows,
    ['| a | 1.00 | 5.50 | +4.50 |', '| b | 2.00 | 2.75 | +0.75 |', '| c\\|d | 1.00 | 1.00 | +0.00 |'],
    'largest growth first; a | in a name is escaped',
  );
});

t.test('bad options are refused before anything is started', async (t) => {
  await t.rejects(runCacheBench(['--clients', '64']), /--clients needs a whole number above 64/);
  await t.rejects(runCacheBench(['--requests', '0']), /--requests needs a positive whole number/);
  await t.rejects(runCacheBench(['--ll', '100000']), /--ll needs a power of two of at least 65536 bytes/);
  await t.rejects(runCacheBench(['--connections', '5']), /--cache-misses: unknown option --connections/);
});

t.test('without valgrind on the PATH it says so and how to get it, before starting anything', async (t) => {
  pathWithOnlySh(t);
  await t.rejects(runCacheBench(['--rounds', '1']), /--cache-misses needs valgrind, not found \(Debian: apt-get install valgrind\)/);
});

t.test('the client: each connection asks again when answered, n requests in all; a closed connection fails the next send', async (t) => {
  const seen: net.Socket[] = [];
  let requests = 0;
  const server = net.createServer((s) => {
    seen.push(s);
    s.on('data', (d: Buffer) => {
      const n = d.toString('latin1').split('\r\n\r\n').length - 1;
      requests += n;
      for (let i = 0; i < n; i++)
        s.write(requests % 7 === 0 ? 'HTTP/1.1 503 No\r\ncontent-length: 0\r\n\r\n' : 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => server.close());
  const port = (server.address() as net.AddressInfo).port;
  const set = await connectionSet(port, 3, Buffer.from('GET /small HTTP/1.1\r\nHost: x\r\n\r\n'));
  t.equal(await set.send(20), 2, 'the answers other than 200 are counted (the 7th and 14th)');
  t.equal(requests, 20, 'exactly n requests');
  t.equal(seen.length, 3, 'over the connections it opened once');
  t.equal(await set.send(0), 0, 'nothing to send: done at once');
  (seen[1] as net.Socket).destroy();
  await new Promise((r) => setTimeout(r, 50));
  await t.rejects(set.send(5), /connection 2 of 3 closed/, 'a send after a connection closed fails instead of waiting');
  set.close();
});
