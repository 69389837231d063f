/**
 * [http_access_log] (spec 001): one line per call in the common log format plus upstream ms, fault code
 * and fault state, to a file under the working directory, or to the server log with useLogger = true.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import t from 'tap';
import { BASE_TOML, apiToml, closedPort, echoBackend, memoryLogger, request, startGateway, until } from './helpers';
import { AccessLog, FLUSH_MS, clfDate, millis } from '../../lib/observability/access-log';

const LINE =
  /^127\.0\.0\.1 - - \[\d{2}\/[A-Z][a-z]{2}\/\d{4}:\d{2}:\d{2}:\d{2} \+0000\] "([A-Z]+) (\S+) HTTP\/1\.1" (\d{3}) (\d+|-) (\d+\.\d{3}|-) (\d+|-) (\S+) (\S+)$/;

type Rec = Parameters<AccessLog['record']>[0];
/** A served GET from 10.0.0.1, `over` changing what a test needs. */
const rec = (over: Partial<Rec> = {}): Rec => ({
  method: 'GET',
  url: '/x',
  httpVersion: '1.1',
  remoteAddress: '10.0.0.1',
  connectionId: 1,
  requestNumber: 1,
  status: 200,
  requestBytes: 0,
  responseBytes: 10,
  durationMs: 1,
  upstreamMs: 0.5,
  retries: 0,
  target: '127.0.0.1:1',
  fault: undefined,
  faultCode: undefined,
  ...over,
});
/** The `line` of every http_access event a memoryLogger got. */
const accessLines = (logger: ReturnType<typeof memoryLogger>): string[] =>
  logger.lines.filter((l) => l.event === 'http_access').map((l) => String(l.line));

t.test('one line per call: served, gateway fault, transport fault', async (t) => {
  const backend = await echoBackend();
  const down = await closedPort();
  const g = await startGateway(`${BASE_TOML}[http_access_log]\nenabled = true\n[throughway]\naccess_log_file = "logs/access.log"\n`, {
    a: apiToml({ endpoint: `http://127.0.0.1:${backend.port}`, resources: [['/r', ['GET']]] }),
    b: apiToml({ name: 'Down', context: '/down', endpoint: `http://127.0.0.1:${down}`, resources: [['/r', ['GET']]] }),
  });
  t.teardown(() => backend.close());
  const ok = await request(g.port, '/test/1.0.0/r?q=1');
  await request(g.port, '/nowhere');
  await request(g.port, '/down/1.0.0/r');
  await request(g.port, '/test/1.0.0/r', {
    method: 'OPTIONS',
    headers: { Origin: 'https://a.example', 'Access-Control-Request-Method': 'GET' },
  });
  const file = path.join(g.dir, 'logs', 'access.log');
  await g.gw.close();
  const lines = fs.readFileSync(file, 'utf8').trim().split('\n');
  fs.rmSync(g.dir, { recursive: true, force: true });
  t.equal(lines.length, 4);
  const m = lines.map((l) => LINE.exec(l));
  t.ok(
    m.every((x) => x !== null),
    lines.join('\n'),
  );
  t.same(m[0]?.slice(1, 5), ['GET', '/test/1.0.0/r?q=1', '200', String(ok.body.length)]);
  t.not(m[0]?.[5], '-', 'upstream time of a forwarded call');
  t.same(m[0]?.slice(6), ['-', '-', 'carbon.super'], "no fault; the super tenant's call");
  t.same(m[1]?.slice(1, 4), ['GET', '/nowhere', '404']);
  t.same(m[1]?.slice(5), ['-', '103005', '-', 'carbon.super'], 'a gateway fault: code, no backend, no state');
  t.same(m[2]?.slice(3, 4), ['502']);
  t.same(m[2]?.slice(6), ['101503', '101503+0', 'carbon.super'], 'a transport fault: code and base+state');
  t.same(m[3]?.slice(1, 4), ['OPTIONS', '/test/1.0.0/r', '204']);
  t.same(m[3]?.slice(4), ['-', '-', '-', '-', 'carbon.super']);
});

t.test('useLogger = true: lines go to the server log', async (t) => {
  const backend = await echoBackend();
  const g = await startGateway(`${BASE_TOML}[http_access_log]\nenabled = true\nuseLogger = true\n`, {
    a: apiToml({ endpoint: `http://127.0.0.1:${backend.port}`, resources: [['/r', ['GET']]] }),
  });
  t.teardown(async () => {
    await g.close();
    await backend.close();
  });
  await request(g.port, '/test/1.0.0/r');
  t.ok(await until(() => g.logger.lines.some((l) => l.event === 'http_access')));
  const line = g.logger.lines.find((l) => l.event === 'http_access')?.line as string;
  t.match(line, LINE);
  t.notOk(fs.existsSync(path.join(g.dir, 'logs')), 'no file');
});

t.test('off unless enabled', async (t) => {
  const backend = await echoBackend();
  const g = await startGateway(BASE_TOML, { a: apiToml({ endpoint: `http://127.0.0.1:${backend.port}`, resources: [['/r', ['GET']]] }) });
  t.teardown(() => backend.close());
  await request(g.port, '/test/1.0.0/r');
  await g.gw.close();
  t.notOk(fs.existsSync(path.join(g.dir, 'logs')));
  t.notOk(g.logger.lines.some((l) => l.event === 'http_access'));
  fs.rmSync(g.dir, { recursive: true, force: true });
});

t.test('clfDate and the aborted-exchange fault state', async (t) => {
  t.equal(clfDate(Date.UTC(2000, 9, 10, 13, 55, 36)), '[10/Oct/2000:13:55:36 +0000]');
  const lines: string[] = [];
  const log = new AccessLog({
    logger: { level: 'info', enabled: () => true, log: (_l, _e, f) => lines.push(String(f?.line)) },
    now: () => Date.UTC(2000, 9, 10, 13, 55, 36),
  });
  log.record({
    method: 'GET',
    url: '/x',
    httpVersion: '1.1',
    remoteAddress: '10.0.0.1',
    connectionId: 1,
    requestNumber: 1,
    status: 200,
    requestBytes: 0,
    responseBytes: 10,
    durationMs: 6.5,
    upstreamMs: 5.25,
    retries: 0,
    target: '127.0.0.1:1',
    fault: {
      code: 101510,
      base: 101505,
      state: 5,
      stateName: 'RESPONSE_BODY',
      side: 'target',
      reason: 'closed',
      httpStatus: 502,
      message: '',
      description: '',
      reused: false,
      cause: undefined,
    },
    faultCode: 101510,
  });
  t.same(lines, ['10.0.0.1 - - [10/Oct/2000:13:55:36 +0000] "GET /x HTTP/1.1" 200 10 5.250 101510 101505+5 carbon.super']);
});

t.test(
  "file lines: every call's line in call order, written at 64 KiB or FLUSH_MS after the first waits, all of them by close()",
  async (t) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-access-'));
    t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
    const file = path.join(dir, 'access.log');
    const log = new AccessLog({ file, now: () => Date.UTC(2000, 9, 10, 13, 55, 36), flushMs: 2000 });
    const rec = (i: number): Parameters<AccessLog['record']>[0] => ({
      method: 'GET',
      url: `/x/${i}`,
      httpVersion: '1.1',
      remoteAddress: '10.0.0.1',
      connectionId: 1,
      requestNumber: i,
      status: 200,
      requestBytes: 0,
      responseBytes: 10,
      durationMs: 1,
      upstreamMs: 0.5,
      retries: 0,
      target: '127.0.0.1:1',
      fault: undefined,
      faultCode: undefined,
    });
    // 1,500 lines of 80 bytes: over the 64 KiB at which waiting lines are written before the turn ends.
    for (let i = 0; i < 1500; i++) log.record(rec(i));
    const inFile = (): number => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').length - 1 : 0);
    t.ok(await until(() => inFile() >= 800, 1500), '64 KiB of lines written at once');
    t.ok(inFile() < 1500, `the rest waits (${inFile()} of 1500 in the file)`);
    t.ok(await until(() => inFile() === 1500, 5000), 'the rest written after flushMs');
    t.equal(FLUSH_MS, 100, 'the default wait is 100 ms (docs/operations.md)');
    for (let i = 1500; i < 1503; i++) log.record(rec(i));
    await log.close();
    const lines = fs.readFileSync(file, 'utf8').split('\n');
    t.equal(lines.pop(), '', 'the file ends with a newline');
    t.equal(lines.length, 1503);
    t.equal(lines[0], '10.0.0.1 - - [10/Oct/2000:13:55:36 +0000] "GET /x/0 HTTP/1.1" 200 10 0.500 - - carbon.super');
    t.equal(lines[1502], '10.0.0.1 - - [10/Oct/2000:13:55:36 +0000] "GET /x/1502 HTTP/1.1" 200 10 0.500 - - carbon.super');
    t.ok(
      lines.every((l, i) => l.includes(`"GET /x/${i} HTTP/1.1"`)),
      'in call order',
    );
    log.record(rec(9999));
    await new Promise((resolve) => setImmediate(resolve));
    t.equal(fs.readFileSync(file, 'utf8').split('\n').length, 1504, 'nothing written after close()');
  },
);

t.test('a process that exits without close() still writes its waiting lines', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-access-exit-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'access.log');
  const mod = require.resolve('../../lib/observability/access-log');
  // The stream opens, one line waits (FLUSH_MS not reached), and the process exits at once.
  const script = `const { AccessLog } = require(${JSON.stringify(mod)});
const log = new AccessLog({ file: ${JSON.stringify(file)} });
setTimeout(() => {
  log.record({ method: 'GET', url: '/bye', httpVersion: '1.1', remoteAddress: '10.0.0.1', connectionId: 1, requestNumber: 1, status: 200, requestBytes: 0, responseBytes: 1, durationMs: 1, upstreamMs: 1, retries: 0, target: undefined, fault: undefined, faultCode: undefined });
  process.exit(0);
}, 50);`;
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
  t.equal(r.status, 0, r.stderr);
  t.match(fs.readFileSync(file, 'utf8'), /"GET \/bye HTTP\/1\.1" 200 1 1\.000 - - carbon\.super\n$/);
  // The same line recorded and the process gone in the same turn: the stream has not opened its file yet.
  const early = path.join(dir, 'early.log');
  const now = spawnSync(
    process.execPath,
    [
      '-e',
      script.split(JSON.stringify(file)).join(JSON.stringify(early)).replace('setTimeout(() => {', '(() => {').replace('}, 50);', '})();'),
    ],
    {
      encoding: 'utf8',
    },
  );
  t.equal(now.status, 0, now.stderr);
  t.match(fs.readFileSync(early, 'utf8'), /"GET \/bye HTTP\/1\.1" 200 1 1\.000 - - carbon\.super\n$/, 'written before the stream opened');
});

t.test('a line longer than the line buffer is written whole, in its place; a 40,000-character URL still fits it', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-access-long-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'access.log');
  const log = new AccessLog({ file, now: () => Date.UTC(2000, 9, 10, 13, 55, 36) });
  const long = `/long/${'x'.repeat(40_000)}`;
  // Longer than the 80 KiB line buffer: 90,000 ASCII characters (put() refuses the line) and 30,000
  // characters outside ASCII (up to 3 UTF-8 bytes each): each goes to the file on its own.
  const ascii = `/huge/${'y'.repeat(90_000)}`;
  const wide = `/wide/${'\u00e9'.repeat(30_000)}`;
  for (const url of ['/before', long, ascii, '/between', wide, '/after/é']) log.record(rec({ url }));
  await log.close();
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  t.same(
    lines.map((l) => /"GET (\S{1,12})/.exec(l)?.[1]),
    ['/before', '/long/xxxxxx', '/huge/yyyyyy', '/between', '/wide/éééééé', '/after/é', undefined],
    'in call order, the last line UTF-8',
  );
  const rest = '10.0.0.1 - - [10/Oct/2000:13:55:36 +0000] "GET  HTTP/1.1" 200 10 0.500 - - carbon.super'.length;
  t.equal(lines[1]?.length, 40_000 + 6 + rest, 'the long line whole');
  t.equal(lines[2]?.length, 90_000 + 6 + rest, 'the ASCII line longer than the buffer whole');
  t.equal(lines[4]?.length, 30_000 + 6 + rest, 'the non-ASCII line longer than the buffer whole');
});

t.test(
  "file lines are format()'s lines byte for byte: written straight into the buffer, or encoded from the string when a text is not ASCII",
  async (t) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-access-bytes-'));
    t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
    const file = path.join(dir, 'access.log');
    const now = (): number => Date.UTC(2000, 9, 10, 13, 55, 36);
    const log = new AccessLog({ file, now });
    const transportFault = {
      code: 101510,
      base: 101505,
      state: 5,
      stateName: 'RESPONSE_BODY',
      side: 'target',
      reason: 'closed',
      httpStatus: 502,
      message: '',
      description: '',
      reused: false,
      cause: undefined,
    } as const;
    const records: Rec[] = [
      rec(),
      rec({ remoteAddress: '', status: 0, responseBytes: 0, upstreamMs: -1 }),
      rec({
        method: 'POST',
        url: '/p?access_token=abc&x=1',
        httpVersion: '1.0',
        remoteAddress: '::1',
        responseBytes: 9_007_199_254_740_991,
        upstreamMs: 123456.78951,
      }),
      rec({ status: 502, fault: transportFault, faultCode: 101510 }),
      rec({ status: 401, fault: transportFault, faultCode: 900901 }),
      rec({ status: 404, faultCode: 103005, upstreamMs: 1e21 }),
      rec({ url: '/caf\u00e9?q=\u00ff' }),
      rec({ url: '/del\u007f' }),
      rec({ remoteAddress: '10.0.0.\u00e9' }),
      rec({ responseBytes: 2.5, status: 1e21 }),
    ];
    // Each record also as a tenant's call and as a call of no tenant (docs/operations.md, "Access log").
    const tenants = ['carbon.super', 'acme.test', '-'];
    const formatted = new AccessLog({ logger: memoryLogger('info'), now });
    for (const tenant of tenants) for (const r of records) log.record(r, undefined, tenant);
    await log.close();
    const expected = tenants.flatMap((tenant) => records.map((r) => formatted.format(r, undefined, tenant) + '\n')).join('');
    t.equal(fs.readFileSync(file, 'utf8'), expected);
    t.same(fs.readFileSync(file), Buffer.from(expected, 'utf8'), 'the same bytes');
    t.match(expected, /"GET \/caf\u00e9\?q=\u00ff HTTP\/1\.1"/, 'a non-ASCII line is there, as UTF-8');
    t.match(expected, /^- - - \[10\/Oct\/2000:13:55:36 \+0000\] "GET \/x HTTP\/1\.1" - - - - - carbon\.super$/m, 'empty fields as dashes');
    t.match(expected, / 200 9007199254740991 123456\.790 - - carbon\.super$/m);
    t.match(expected, /"GET \/x HTTP\/1\.1" 200 10 0\.500 - - acme\.test$/m, "a tenant's call");
    t.match(expected, /"GET \/x HTTP\/1\.1" 200 10 0\.500 - - -$/m, 'a call of no tenant');
    t.match(expected, / "POST \/p\?access_token=\*\*\*\*&x=1 HTTP\/1\.0" /, 'the token masked');
  },
);

t.test('upstream ms: three decimals, rounded to the microsecond', async (t) => {
  t.same([0, 0.5, 5.25, 0.0004, 0.0006, 1.9996, 999.9999, 123456.78951].map(millis), [
    '0.000',
    '0.500',
    '5.250',
    '0.000',
    '0.001',
    '2.000',
    '1000.000',
    '123456.790',
  ]);
  for (let i = 0; i < 2000; i++) {
    const ms = Math.random() * 10 ** (i % 7);
    const fixed = ms.toFixed(3);
    // toFixed follows the double's binary value at halves: the two may differ there only, by 0.001.
    if (Math.abs(((ms * 1000) % 1) - 0.5) > 1e-6 && millis(ms) !== fixed) t.fail(`${ms}: ${millis(ms)} vs ${fixed}`);
  }
  t.equal(millis(1e300), (1e300).toFixed(3), 'beyond 2^53 us: toFixed');
});

t.test('the date text: the wall clock is read once per second of the monotonic clock', async (t) => {
  const logger = memoryLogger('info');
  const second = Date.UTC(2000, 9, 10, 13, 55, 36);
  let wall = second + 200;
  let mono = 50_000;
  let reads = 0;
  const log = new AccessLog({ logger, now: () => (reads++, wall), mono: () => mono });
  log.record(rec());
  wall = second + 998;
  mono = 50_000 + 798;
  log.record(rec());
  t.equal(reads, 1, 'within the second: not read again');
  wall = second + 1000;
  mono = 50_000 + 799;
  log.record(rec());
  t.equal(reads, 2, 'read again once the second may have ended');
  wall = second + 5000;
  mono = 50_000 + 800;
  log.record(rec());
  t.equal(reads, 2, 'a wall clock set forward shows at the next read');
  mono = 50_000 + 799 + 1000;
  log.record(rec());
  t.same(
    accessLines(logger).map((l) => /:(\d\d) \+0000/.exec(l)?.[1]),
    ['36', '36', '37', '37', '41'],
  );
  // The default clocks: the line's second is the wall clock's.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-access-clock-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'access.log');
  const real = new AccessLog({ file });
  const before = Date.now();
  real.record(rec());
  real.record(rec());
  const after = Date.now();
  await real.close();
  const dates = fs
    .readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => /\[[^\]]+\]/.exec(l)?.[0]);
  t.equal(dates.length, 2);
  for (const d of dates) t.ok(d === clfDate(before) || d === clfDate(after), `${d} is now`);
});

t.test('a line that does not fit what is left of the line buffer starts a new one, after the lines waiting', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-access-room-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'access.log');
  const log = new AccessLog({ file, now: () => Date.UTC(2000, 9, 10, 13, 55, 36), flushMs: 60_000 });
  // 800 lines of about 80 bytes wait (under the 64 KiB written at once). A line of 20,000 ASCII characters
  // no longer fits the 80 KiB buffer (written byte by byte); then one of 25,000 with a character outside
  // ASCII, which (as UTF-8 may take 3 bytes each) fits what that leaves no more either.
  for (let i = 0; i < 800; i++) log.record(rec({ url: `/s/${i}` }));
  const long = (c: string, i: number, n: number): string => `/l/${i}/${c.repeat(n)}`;
  log.record(rec({ url: long('a', 0, 20_000) }));
  log.record(rec({ url: long('\u00e9', 1, 25_000) }));
  log.record(rec({ url: '/after' }));
  await log.close();
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  t.equal(lines.pop(), '', 'the file ends with a newline');
  t.equal(lines.length, 803);
  t.ok(
    lines.slice(0, 800).every((l, i) => l.includes(`"GET /s/${i} HTTP/1.1"`)),
    'the waiting lines first, in call order',
  );
  t.ok(
    lines[800] === `10.0.0.1 - - [10/Oct/2000:13:55:36 +0000] "GET ${long('a', 0, 20_000)} HTTP/1.1" 200 10 0.500 - - carbon.super`,
    'the ASCII line whole',
  );
  t.ok(
    lines[801] === `10.0.0.1 - - [10/Oct/2000:13:55:36 +0000] "GET ${long('\u00e9', 1, 25_000)} HTTP/1.1" 200 10 0.500 - - carbon.super`,
    'the non-ASCII line whole, UTF-8',
  );
  t.match(lines[802], /"GET \/after HTTP\/1\.1"/);
});
