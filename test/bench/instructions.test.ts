/**
 * bench/instructions.ts without valgrind: reading callgrind's output format and Node's perf map, the
 * classes (GC, compiler, program), the per-request counts and their table, and the fixed-count client.
 */
import t from 'tap';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import {
  classify,
  countOf,
  parseCallgrind,
  readPerfMap,
  renderInstructions,
  sendFixed,
  symbolize,
  type InstructionCount,
} from '../../bench/instructions';

// A callgrind dump in its compressed form: names given once with their id, relative positions, a call whose
// inclusive cost (the line after calls=) belongs to the callee and must not be added to the caller.
const DUMP = [
  'version: 1',
  'creator: callgrind-3.19.0',
  'events: Ir',
  'fl=(1) ???',
  'fn=(1) 0x0000000000001010',
  '0x1010 100',
  '+4 20',
  'cfn=(2) v8::internal::Scavenger::ScavengePage(v8::internal::MemoryChunk*)',
  'calls=1 0x9000',
  '* 5000',
  'fn=(2)',
  '0x9000 300',
  'fn=(3) v8::internal::compiler::GraphReducer::ReduceTop()',
  '0x7000 50',
  'fn=(4) Builtins_StringAdd_CheckNone',
  '-2 70',
  'fn=(1)',
  '0x1020 10',
  'fn=(5) 0x0000000000005000',
  '0x5000 9',
  'totals: 559',
].join('\n');

const MAP = [
  '2000 100 JS:*beginExchange /home/u/throughway/dist/lib/transport/source.js:324:18',
  '1000 80 JS:*check /home/u/throughway/dist/lib/throttle/engine.js:236:10',
  'garbage line',
].join('\n');

t.test('parseCallgrind: self cost per function, names reused by id, call costs left to the callee', async (t) => {
  const self = parseCallgrind(DUMP);
  t.equal(self.get('0x0000000000001010'), 130, "100 + 20 + 10: the 5000 of the call is not the caller's");
  t.equal(
    self.get('v8::internal::Scavenger::ScavengePage(v8::internal::MemoryChunk*)'),
    300,
    'a name first given by cfn= is found by its id',
  );
  t.equal(self.get('v8::internal::compiler::GraphReducer::ReduceTop()'), 50);
  t.equal(self.get('Builtins_StringAdd_CheckNone'), 70, 'a relative position (-2) is a cost line');
  t.equal(self.get('0x0000000000005000'), 9);
  t.equal(
    [...self.values()].reduce((a, b) => a + b, 0),
    559,
    "the sum is callgrind's own total",
  );
});

t.test("symbolize: JIT addresses take the perf map's name, without tier mark, checkout and position", async (t) => {
  const map = readPerfMap(MAP);
  t.equal(map.starts.length, 2, 'lines that are not `start size name` are skipped');
  t.equal(symbolize('0x0000000000001010', map), 'check lib/throttle/engine.js');
  t.equal(symbolize('0x20ff', map), 'beginExchange lib/transport/source.js', 'the last byte of a range (sizes are hex too)');
  t.equal(symbolize('0x2100', map), 'JIT or wasm code without a name', 'one past the range');
  t.equal(symbolize('0x0fff', map), 'JIT or wasm code without a name', 'below every range');
  t.equal(symbolize('Builtins_LoadIC', map), 'Builtins_LoadIC', 'named functions keep their names');
});

t.test('classify: GC, compiler, and the program', async (t) => {
  t.equal(classify('v8::internal::Scavenger::ScavengePage(v8::internal::MemoryChunk*)'), 'gc');
  t.equal(classify('v8::internal::ConcurrentMarking::RunMajor(v8::JobDelegate*)'), 'gc');
  t.equal(classify('v8::internal::(anonymous namespace)::IterateObjectCache(v8::internal::Isolate*)'), 'gc');
  t.equal(classify('v8::internal::compiler::GraphReducer::ReduceTop()'), 'compiler');
  t.equal(classify('v8::internal::maglev::MaglevGraphBuilder::Build()'), 'compiler');
  t.equal(classify('v8::internal::Maglev::Compile(v8::internal::Isolate*)'), 'compiler');
  t.equal(classify('Builtins_StringAdd_CheckNone'), 'program');
  t.equal(classify('check lib/throttle/engine.js'), 'program');
  t.equal(classify('__memcpy_avx_unaligned_erms'), 'program');
});

t.test('countOf: per request, by class; only the program is listed by function', async (t) => {
  const c = countOf(parseCallgrind(DUMP), readPerfMap(MAP), 10);
  t.equal(c.gc, 30);
  t.equal(c.compiler, 5);
  t.equal(c.program, (130 + 70 + 9) / 10);
  t.equal(c.total, 55.9);
  t.same(c.byFunction, { 'check lib/throttle/engine.js': 13, Builtins_StringAdd_CheckNone: 7, 'JIT or wasm code without a name': 0.9 });
});

t.test('renderInstructions: medians, the program ratio per round, the largest differences first', async (t) => {
  const cell = (program: number, fns: Record<string, number>): InstructionCount => ({
    total: program + 3000,
    gc: 2000,
    compiler: 1000,
    program,
    byFunction: fns,
  });
  const out = renderInstructions(
    {
      date: '2026-11-27T00:00:00.000Z',
      requests: 20000,
      rounds: 3,
      transport: [cell(64000, { parse: 15000, a: 10 }), cell(65000, { parse: 15000, a: 10 }), cell(66000, { parse: 15000, a: 10 })],
      gateway: [
        cell(80000, { parse: 15000, a: 10, check: 1500, 'x|y': 400 }),
        cell(84500, { parse: 15000, a: 10, check: 1400, 'x|y': 420 }),
        cell(83000, { parse: 15000, a: 30, check: 1450, 'x|y': 410 }),
      ],
    },
    3,
  );
  t.match(out, '| transport, same request | 68000 | 2000 | 1000 | 65000 |');
  t.match(out, '| full gateway | 86000 | 2000 | 1000 | 83000 |');
  t.match(out, 'gateway / transport: 1.258 (1.250, 1.300, 1.258)');
  const rows = out.split('\n').filter((l) => /^\| (check|x|a|parse)/.test(l));
  t.same(
    rows,
    ['| check | 0 | 1450 | +1450 |', '| x\\|y | 0 | 410 | +410 |', '| parse | 15000 | 15000 | +0 |'],
    'sorted by difference, three rows, | escaped',
  );
});

t.test('sendFixed: exactly n requests over the connections, answers other than 200 counted', async (t) => {
  let seen = 0;
  const server = net.createServer((s) => {
    s.on('data', (d) => {
      // One request per write from the client: answer each; every fifth with a 503.
      for (const _ of d.toString('latin1').split('\r\n\r\n').slice(1)) {
        seen++;
        s.write(seen % 5 === 0 ? 'HTTP/1.1 503 No\r\nContent-Length: 2\r\n\r\nno' : 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello');
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => server.close());
  const port = (server.address() as net.AddressInfo).port;
  const bad = await sendFixed(port, Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n'), 50, 4);
  t.equal(seen, 50, 'the server saw 50 requests');
  t.equal(bad, 10, 'ten 503s');
});

/** A cell whose every instruction is the program's. */
const cell = (program: number, fns: Record<string, number>): InstructionCount => ({
  total: program,
  gc: 0,
  compiler: 0,
  program,
  byFunction: fns,
});

t.test('renderInstructions with the traced cell: its row, its ratio and what tracing adds to the full gateway', async (t) => {
  const out = renderInstructions(
    {
      date: '2026-11-27T00:00:00.000Z',
      requests: 20000,
      rounds: 1,
      transport: [cell(64000, { parse: 15000 })],
      gateway: [cell(80000, { parse: 15000, check: 1500 })],
      traced: [cell(88000, { parse: 15000, check: 1500, parseTraceParent: 1900, start: 400 })],
    },
    2,
  );
  t.match(out, '| traced gateway, 1 % sampled | 88000 | 0 | 0 | 88000 |');
  t.match(out, 'traced gateway / transport: 1.375');
  const after = out.slice(out.indexOf('What tracing adds to the full gateway'));
  t.match(after, '| function | gateway | traced | difference |');
  t.same(
    after.split('\n').filter((l) => /^\| (parseTraceParent|start|check|parse) /.test(l)),
    ['| parseTraceParent | 0 | 1900 | +1900 |', '| start | 0 | 400 | +400 |'],
    'two rows, largest first',
  );
  const plain = renderInstructions({
    date: '2026-11-27T00:00:00.000Z',
    requests: 1,
    rounds: 1,
    transport: [cell(1, {})],
    gateway: [cell(2, {})],
  });
  t.notMatch(plain, 'traced', 'no traced row or table without the cell');
});

t.test('renderInstructions with --node-bodies: the 64 KiB and 1 MiB rows, their ratios and differences', async (t) => {
  const out = renderInstructions(
    {
      date: '2026-12-04T00:00:00.000Z',
      requests: 5000,
      rounds: 1,
      transport: [],
      gateway: [],
      transportPlain: [cell(40000, { parse: 9000 })],
      node: [cell(48000, { parse: 9000, routePhase: 700 })],
      bodies: {
        transport64k: [cell(60000, { copy: 20000 })],
        node64k: [cell(69000, { copy: 20000, routePhase: 700 })],
        transportUpload: [cell(500000, { relay: 300000 })],
        nodeUpload: [cell(510000, { relay: 300000, sendPhase: 300 })],
      },
    },
    1,
  );
  t.match(out, '| transport, GET /64k | 60000 | 0 | 0 | 60000 |');
  t.match(out, '| deployed node, POST /upload 1 MiB | 510000 | 0 | 0 | 510000 |');
  t.match(out, 'deployed node / transport (GET /64k): 1.150');
  t.match(out, 'deployed node / transport (POST /upload 1 MiB): 1.020');
  const upload = out.slice(out.indexOf('go on POST /upload 1 MiB'));
  t.same(
    upload.split('\n').filter((l) => /^\| (sendPhase|relay|routePhase) /.test(l)),
    ['| sendPhase | 0 | 300 | +300 |'],
    'the largest difference of the upload cells',
  );
  t.notMatch(renderInstructions({ date: '', requests: 1, rounds: 1, transport: [], gateway: [] }), '64k', 'no rows without the cells');
});

t.test('sendFixed with a list: the requests in turn, across connections', async (t) => {
  const seen: string[] = [];
  const server = net.createServer((s) => {
    s.on('data', (d) => {
      for (const head of d.toString('latin1').split('\r\n\r\n').slice(0, -1)) {
        seen.push(head.split(' ')[1] as string);
        s.write('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n');
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => server.close());
  const port = (server.address() as net.AddressInfo).port;
  const list = ['/a', '/b', '/c'].map((p) => Buffer.from(`GET ${p} HTTP/1.1\r\nHost: x\r\n\r\n`));
  t.equal(await sendFixed(port, list, 30, 4), 0);
  t.equal(seen.length, 30);
  t.same(
    ['/a', '/b', '/c'].map((p) => seen.filter((x) => x === p).length),
    [10, 10, 10],
    'each of the three sent ten times',
  );
  await t.rejects(sendFixed(port, [], 1, 1), /no request to send/);
});

t.test('--instructions refuses a bad count and a machine without valgrind, before starting anything', async (t) => {
  const runJs = path.join(__dirname, '..', '..', 'bench', 'run.js');
  const bad = spawnSync(process.execPath, [runJs, '--instructions', '--requests', '0'], { encoding: 'utf8', timeout: 30_000 });
  t.equal(bad.status, 1, 'a failed bench exits 1');
  t.match(bad.stderr, 'bench failed: Error: --requests needs a positive whole number, got 0');
  const half = spawnSync(process.execPath, [runJs, '--instructions', '--rounds'], { encoding: 'utf8', timeout: 30_000 });
  t.match(half.stderr, '--rounds needs a positive whole number, got undefined');
  // A PATH with nothing on it: neither valgrind nor callgrind_control is found.
  const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-no-valgrind-'));
  t.teardown(() => fs.rmSync(empty, { recursive: true, force: true }));
  const none = spawnSync(process.execPath, [runJs, '--instructions'], {
    encoding: 'utf8',
    timeout: 30_000,
    env: { ...process.env, PATH: empty },
  });
  t.equal(none.status, 1);
  t.match(none.stderr, '--instructions needs valgrind, not found (Debian: apt-get install valgrind)');
});
