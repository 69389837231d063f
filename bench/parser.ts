/**
 * Micro-benchmark of the HTTP/1.1 parser adapter (lib/transport/parser.ts), with llhttp-wasm's own
 * JavaScript wrapper as shipped for reference (the figures in test/unit/parser.test.ts come from a prototype).
 *
 *   npx tsc -p . && node dist/bench/parser.js [seconds-per-run]
 *
 * Cases: (a) one 300-byte GET with 8 headers per execute() on a keep-alive parser; (b) 1000 pipelined
 * GETs in one buffer, one execute() (and, as the transport drives it, a PAUSE at every request end);
 * (c) a request with a 64 KiB chunked body (16 chunks of 4 KiB) per execute(). Median of 3 runs, in
 * units per second of process CPU time.
 */
import { createParser, TYPE } from 'llhttp-wasm';
import { ExecStatus, HEAD_CONTINUE, HttpParser, PAUSE, ParserEvents } from '../lib/transport/parser';

function makeGet(): Buffer {
  const head =
    'GET /api/v1/orders/12345/items HTTP/1.1\r\n' +
    'Host: api.example.com\r\n' +
    'User-Agent: Mozilla/5.0 bench/1.0\r\n' +
    'Accept: application/json\r\n' +
    'Accept-Encoding: gzip, deflate, br\r\n' +
    'Accept-Language: en-US,en;q=0.9\r\n' +
    'Authorization: Bearer abcdefghijklmnop\r\n' +
    'X-Request-Id: 0123456789abcdef\r\n' +
    'Connection: keep-alive\r\n';
  const pad = 300 - head.length - 2;
  // Lengthen the User-Agent so the request is exactly 300 bytes.
  const withPad = head.replace('bench/1.0', 'bench/1.0' + 'x'.repeat(pad));
  const buf = Buffer.from(withPad + '\r\n', 'latin1');
  if (buf.length !== 300) throw new Error(`GET is ${buf.length} bytes, wanted 300`);
  return buf;
}

function makeChunked(): { buf: Buffer; bodyBytes: number } {
  const piece = Buffer.alloc(4096, 0x61);
  const parts: Buffer[] = [Buffer.from('POST /upload HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n')];
  for (let i = 0; i < 16; i++) parts.push(Buffer.from('1000\r\n'), piece, Buffer.from('\r\n'));
  parts.push(Buffer.from('0\r\n\r\n'));
  return { buf: Buffer.concat(parts), bodyBytes: 16 * 4096 };
}

/** Counts messages and body bytes; optionally pauses at every message end like the transport does. */
class Counter implements ParserEvents {
  messages = 0;
  bodyBytes = 0;
  pauseAtEnd = false;
  onHead(): number {
    return HEAD_CONTINUE;
  }
  onBody(_chunk: Buffer, start: number, end: number): void {
    this.bodyBytes += end - start;
  }
  onComplete(): number {
    this.messages++;
    return this.pauseAtEnd ? PAUSE : HEAD_CONTINUE;
  }
}

interface Case {
  name: string;
  unit: string;
  /** Runs the parse once; returns the units it processed (requests or bytes). */
  once: () => number;
}

function adapterCases(get: Buffer, pipelined: Buffer, chunked: { buf: Buffer; bodyBytes: number }): Case[] {
  const counter = new Counter();
  const parser = new HttpParser('request', counter, 16384);
  const check = (st: ExecStatus): void => {
    if (st !== ExecStatus.OK) throw new Error(`adapter: ${parser.errorName} ${parser.errorReason}`);
  };
  return [
    {
      name: '(a) 300 B GET, 8 headers',
      unit: 'req/s',
      once: () => {
        check(parser.execute(get));
        return 1;
      },
    },
    {
      name: '(b) 1000 pipelined, one execute',
      unit: 'req/s',
      once: () => {
        check(parser.execute(pipelined));
        return 1000;
      },
    },
    {
      name: '(b2) 1000 pipelined, PAUSE at each end',
      unit: 'req/s',
      once: () => {
        counter.pauseAtEnd = true;
        let off = 0;
        while (parser.execute(pipelined, off) === ExecStatus.PAUSED) {
          off += parser.consumed;
          parser.resume();
        }
        counter.pauseAtEnd = false;
        if (off !== pipelined.length) throw new Error(`adapter: stopped at ${off}: ${parser.errorName}`);
        return 1000;
      },
    },
    {
      name: '(c) 64 KiB chunked body',
      unit: 'MB/s',
      once: () => {
        check(parser.execute(chunked.buf));
        return chunked.bodyBytes / 1e6;
      },
    },
  ];
}

function wrapperCases(get: Buffer, pipelined: Buffer, chunked: { buf: Buffer; bodyBytes: number }): Case[] {
  // As shipped: createParser(TYPE.REQUEST) actually makes a BOTH parser; that does not matter here.
  const parser = createParser(TYPE['REQUEST'] ?? 1);
  // The wrapper copies every body piece out of wasm memory before calling onBody; that cost is its own.
  parser.onHeadersComplete = () => 0;
  parser.onBody = () => 0;
  parser.onMessageComplete = () => 0;
  const check = (ret: number): void => {
    if (ret !== 0) throw new Error(`wrapper: ${parser.getErrorName(ret) ?? ret}`);
  };
  return [
    { name: '(a) 300 B GET, 8 headers', unit: 'req/s', once: () => (check(parser.execute(get)), 1) },
    { name: '(b) 1000 pipelined, one execute', unit: 'req/s', once: () => (check(parser.execute(pipelined)), 1000) },
    {
      name: '(c) 64 KiB chunked body',
      unit: 'MB/s',
      once: () => (check(parser.execute(chunked.buf)), chunked.bodyBytes / 1e6),
    },
  ];
}

/**
 * Units per second of this process's CPU time (user + system), median of 3 runs. CPU time rather than
 * wall time: the project machine is shared and noisy, and time spent preempted is not the parser's.
 */
function measure(c: Case, seconds: number): number {
  // Warm up so the JIT has compiled the path being timed.
  const warmUntil = process.hrtime.bigint() + 200_000_000n;
  while (process.hrtime.bigint() < warmUntil) for (let i = 0; i < 100; i++) c.once();
  const rates: number[] = [];
  for (let run = 0; run < 3; run++) {
    let units = 0;
    const cpu0 = process.cpuUsage();
    const until = process.hrtime.bigint() + BigInt(Math.round(seconds * 1e9));
    while (process.hrtime.bigint() < until) for (let i = 0; i < 100; i++) units += c.once();
    const cpu = process.cpuUsage(cpu0);
    rates.push(units / ((cpu.user + cpu.system) / 1e6));
  }
  rates.sort((x, y) => x - y);
  return rates[1]!;
}

function format(rate: number, unit: string): string {
  if (unit === 'MB/s') return rate >= 1000 ? `${(rate / 1000).toFixed(2)} GB/s` : `${rate.toFixed(0)} MB/s`;
  return `${Math.round(rate / 1000)}k ${unit}`;
}

function main(): void {
  const seconds = Number(process.argv[2] ?? '1');
  const get = makeGet();
  const pipelined = Buffer.concat(Array.from({ length: 1000 }, () => get));
  const chunked = makeChunked();
  console.log(`node ${process.version}, ${seconds} s per run, per CPU-second, median of 3`);
  for (const [who, cases] of [
    ['adapter (lib/transport/parser.ts)', adapterCases(get, pipelined, chunked)],
    ['llhttp-wasm wrapper as shipped', wrapperCases(get, pipelined, chunked)],
  ] as const) {
    console.log(who);
    for (const c of cases) console.log(`  ${c.name.padEnd(42)} ${format(measure(c, seconds), c.unit)}`);
  }
}

main();
