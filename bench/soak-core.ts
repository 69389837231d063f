/**
 * The soak run, shared by `npm run soak` (bench/soak.ts, about a million requests) and the suite's smaller
 * version (test/transport/soak.test.ts): requests through the full gateway (bench/soak-gateway.ts in a
 * child process) to a raw `net` backend that injects a fault at every protocol state, with clients that
 * abort at random points and idle keep-alive clients held meanwhile.
 *
 * Backend behaviours (chosen by the request path, /soak/1/<kind>/<n>):
 *   ok            200, Content-Length body (keep-alive)
 *   chunked       200, chunked body in three chunks
 *   slow          200, body written in 4 pieces 20 ms apart
 *   close         200 with Connection: close, then the backend closes
 *   reset-read    the backend reads the request, then resets (RST) before answering
 *   reset-head    half a status line, then a reset
 *   reset-body    head (Content-Length: 1000) and 10 body bytes, then a reset
 *   end-body      head (Content-Length: 1000) and 10 body bytes, then a clean FIN
 *   chunk-cut     a chunked body cut inside a chunk, then FIN
 *   garbage       bytes that are not HTTP
 *   stall         never answers (the gateway's socket timeout ends it: 504)
 *   stall-body    head and half the body, then silence (the socket timeout ends it)
 * Client behaviours: a plain GET, a POST with a Content-Length body, and aborts: half a head then
 * destroy, a head and half the body then destroy, destroy after the first response bytes.
 *
 * Every client request has a deadline (DEADLINE_MS): one that passes is a hang and fails the run.
 * Outcomes are counted by class: a status code, `truncated` (a head was relayed, then the gateway closed:
 * the only honest answer once a backend fails mid-body), `aborted` (the client's own abort),
 * `closed` (the gateway closed with no byte of answer: never expected), `hang`.
 */
import * as net from 'node:net';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fork, type ChildProcess } from 'node:child_process';
import { ExecStatus, HEAD_CONTINUE, HttpParser, PAUSE } from '../lib/transport/parser';
import type { SoakStats } from './soak-gateway';

export const DEADLINE_MS = 20_000;

export const FAULT_KINDS = [
  'chunked',
  'slow',
  'close',
  'reset-read',
  'reset-head',
  'reset-body',
  'end-body',
  'chunk-cut',
  'garbage',
  'stall',
  'stall-body',
] as const;
type Kind = 'ok' | (typeof FAULT_KINDS)[number];

// ---- backend --------------------------------------------------------------------------------------------

export interface SoakBackend {
  readonly port: number;
  readonly sockets: Set<net.Socket>;
  close(): Promise<void>;
}

const OK_BODY = Buffer.from('{"ok":true,"soak":"0123456789abcdef"}');

export function startBackend(): Promise<SoakBackend> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => {});
    let buf: Buffer = Buffer.alloc(0);
    let busy = false;
    const next = (): void => {
      if (busy || s.destroyed) return;
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) {
        if (buf.length > 65536) s.destroy();
        return;
      }
      const head = buf.toString('latin1', 0, end);
      const cl = /\r\ncontent-length:\s*(\d+)/i.exec(head);
      const need = end + 4 + (cl !== null ? Number(cl[1]) : 0);
      if (buf.length < need) return;
      buf = buf.subarray(need);
      const target = head.slice(head.indexOf(' ') + 1, head.indexOf(' ', head.indexOf(' ') + 1));
      const kind = (/^\/([a-z-]+)/.exec(target)?.[1] ?? 'ok') as Kind;
      busy = true;
      answer(s, kind, () => {
        busy = false;
        next();
      });
    };
    s.on('data', (d: Buffer) => {
      buf = buf.length === 0 ? d : Buffer.concat([buf, d]);
      next();
    });
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      resolve({
        port: (server.address() as net.AddressInfo).port,
        sockets,
        close: () =>
          new Promise<void>((r) => {
            for (const s of sockets) s.destroy();
            server.close(() => r());
          }),
      });
    });
  });
}

function answer(s: net.Socket, kind: Kind, done: () => void): void {
  const head = (extra = '', length = OK_BODY.length): string =>
    `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n${extra}\r\n`;
  switch (kind) {
    case 'chunked': {
      const a = OK_BODY.subarray(0, 10);
      const b = OK_BODY.subarray(10, 20);
      const c = OK_BODY.subarray(20);
      s.write(
        `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n${a.length.toString(16)}\r\n${a}\r\n${b.length.toString(16)}\r\n${b}\r\n${c.length.toString(16)}\r\n${c}\r\n0\r\n\r\n`,
      );
      return done();
    }
    case 'slow': {
      s.write(head());
      let i = 0;
      const piece = Math.ceil(OK_BODY.length / 4);
      const tick = (): void => {
        if (s.destroyed) return;
        s.write(OK_BODY.subarray(i * piece, (i + 1) * piece));
        if (++i < 4) setTimeout(tick, 20);
        else done();
      };
      setTimeout(tick, 20);
      return;
    }
    case 'close':
      s.end(head('Connection: close\r\n') + OK_BODY.toString('latin1'));
      return;
    case 'reset-read':
      s.resetAndDestroy();
      return;
    case 'reset-head':
      s.write('HTTP/1.1 20');
      setImmediate(() => s.resetAndDestroy());
      return;
    case 'reset-body':
      s.write(head('', 1000) + '0123456789');
      setImmediate(() => s.resetAndDestroy());
      return;
    case 'end-body':
      s.end(head('', 1000) + '0123456789');
      return;
    case 'chunk-cut':
      s.end('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n20\r\n0123456789');
      return;
    case 'garbage':
      s.end('\x00\x01 not http at all \xff\r\n\r\n');
      return;
    case 'stall':
      return; // never answers, never reads on: the gateway's socket timeout closes it
    case 'stall-body':
      s.write(head('', 1000) + '0123456789');
      return;
    default:
      s.write(head() + OK_BODY.toString('latin1'));
      return done();
  }
}

// ---- gateway child -----------------------------------------------------------------------------------------

export interface SoakGateway {
  readonly pid: number;
  readonly port: number;
  readonly child: ChildProcess;
  stats(): Promise<SoakStats>;
  close(): Promise<void>;
}

export function startGateway(backendPort: number, socketTimeout = 1500): Promise<SoakGateway> {
  const script = path.join(__dirname, 'soak-gateway.js');
  const child = fork(script, [], {
    execArgv: ['--expose-gc'],
    env: { ...process.env, BACKEND: `http://127.0.0.1:${backendPort}`, SOCKET_TIMEOUT: String(socketTimeout) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    const fail = (code: number | null): void => reject(new Error(`soak gateway exited (${code}) before it listened`));
    child.once('exit', fail);
    child.once('message', (m: { type?: string; port?: number }) => {
      if (m?.type !== 'ready' || m.port === undefined) return reject(new Error(`unexpected first message ${JSON.stringify(m)}`));
      child.off('exit', fail);
      resolve({
        pid: child.pid!,
        port: m.port,
        child,
        stats: () =>
          new Promise((res, rej) => {
            const timer = setTimeout(() => rej(new Error('soak gateway did not answer stats in 10 s')), 10_000);
            const on = (s: SoakStats): void => {
              if (s?.type !== 'stats') return;
              clearTimeout(timer);
              child.off('message', on);
              res(s);
            };
            child.on('message', on);
            child.send({ type: 'stats' });
          }),
        close: () =>
          new Promise<void>((res) => {
            if (child.exitCode !== null) return res();
            const hard = setTimeout(() => child.kill('SIGKILL'), 5000);
            child.once('exit', () => {
              clearTimeout(hard);
              res();
            });
            child.send({ type: 'close' });
          }),
      });
    });
  });
}

/** Open descriptors of a process (Linux /proc); -1 elsewhere. */
export function fdCount(pid: number): number {
  try {
    return fs.readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return -1;
  }
}

// ---- clients ------------------------------------------------------------------------------------------------

export type Outcome = number | 'truncated' | 'aborted' | 'closed' | 'hang' | 'connect-error';

interface Pending {
  resolve(o: Outcome): void;
  parser: HttpParser;
  status: number;
  headSeen: boolean;
  complete: boolean;
  abortAfterFirstByte: boolean;
  timer: NodeJS.Timeout;
}

/** One client connection: sends requests one at a time, reads each response with the project's parser. */
class Client {
  private pending: Pending | undefined;
  closed = false;
  private constructor(readonly socket: net.Socket) {
    socket.on('data', (d: Buffer) => this.onData(d));
    socket.on('error', () => {});
    socket.on('close', () => {
      this.closed = true;
      const p = this.pending;
      if (p !== undefined) this.settle(p, p.headSeen ? 'truncated' : 'closed');
    });
  }

  static connect(port: number): Promise<Client | undefined> {
    return new Promise((resolve) => {
      const s = net.connect(port, '127.0.0.1');
      s.once('connect', () => resolve(new Client(s)));
      s.once('error', () => resolve(undefined));
    });
  }

  request(bytes: string, opts: { abortAfterFirstByte?: boolean; abortAfterWrite?: boolean } = {}): Promise<Outcome> {
    return new Promise((resolve) => {
      if (this.closed) return resolve('closed');
      const p: Pending = {
        resolve,
        status: 0,
        headSeen: false,
        complete: false,
        abortAfterFirstByte: opts.abortAfterFirstByte === true,
        timer: setTimeout(() => {
          this.settle(p, 'hang');
          this.socket.destroy();
        }, DEADLINE_MS),
        parser: new HttpParser(
          'response',
          {
            onHead: (parser) => {
              p.status = parser.statusCode;
              p.headSeen = true;
              return HEAD_CONTINUE;
            },
            onBody: () => {},
            onComplete: () => {
              p.complete = true; // settled after execute() returns (a parser is not destroyed from its own callback)
              return PAUSE;
            },
          },
          16384,
        ),
      };
      this.pending = p;
      this.socket.write(bytes);
      if (opts.abortAfterWrite === true) {
        setImmediate(() => {
          this.settle(p, 'aborted');
          this.socket.destroy();
        });
      }
    });
  }

  private onData(d: Buffer): void {
    const p = this.pending;
    if (p === undefined) return; // bytes with no request: the connection is about to close
    if (p.abortAfterFirstByte) {
      this.settle(p, 'aborted');
      this.socket.destroy();
      return;
    }
    const st = p.parser.execute(d);
    if (p.complete) this.settle(p, p.status);
    else if (st === ExecStatus.ERROR) {
      this.settle(p, p.headSeen ? 'truncated' : 'closed');
      this.socket.destroy();
    }
  }

  private settle(p: Pending, o: Outcome): void {
    if (this.pending !== p) return;
    this.pending = undefined;
    clearTimeout(p.timer);
    p.parser.destroy();
    p.resolve(o);
  }

  destroy(): void {
    this.socket.destroy();
  }
}

// ---- the run ------------------------------------------------------------------------------------------------

export interface Snapshot {
  readonly label: string;
  readonly requests: number;
  readonly fds: number;
  readonly rss: number;
  readonly heapUsed: number;
  readonly sources: number;
  readonly targets: number;
  readonly poolOpen: number;
  readonly poolIdle: number;
  readonly poolWaiting: number;
  /** The pools' configured maximum of open connections, summed: idle ones are kept for reuse up to it. */
  readonly poolMax: number;
  /** p99 latency (ms) of plain /ok GETs since the previous snapshot. */
  readonly p99: number;
}

export interface SoakOptions {
  readonly requests: number;
  readonly idle: number;
  /** Concurrent client loops. */
  readonly concurrency: number;
  /** Stop issuing requests after this many seconds (0: no limit). */
  readonly seconds: number;
  /** Share of requests that go to a faulting backend path (0..1). */
  readonly faultShare: number;
  /** Share of requests the client aborts (0..1). */
  readonly abortShare: number;
  readonly progress?: (line: string) => void;
}

export interface SoakResult {
  readonly snapshots: Snapshot[];
  readonly outcomes: Map<string, number>;
  readonly issued: number;
  readonly idleHeld: number;
  readonly elapsedMs: number;
  readonly gateway: SoakGateway;
  readonly backend: SoakBackend;
  /** Closes the idle clients, the gateway and the backend. */
  stop(): Promise<void>;
  closeIdle(): void;
}

function p99(samples: number[]): number {
  if (samples.length === 0) return 0;
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))]!;
}

/** A small deterministic generator, so a run can be repeated (SOAK_SEED). */
function rng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 0x1_0000_0000;
  };
}

export async function runSoak(o: SoakOptions): Promise<SoakResult> {
  const log = o.progress ?? (() => {});
  const random = rng(Number(process.env.SOAK_SEED ?? 22));
  const backend = await startBackend();
  const gateway = await startGateway(backend.port);
  const started = Date.now();
  const outcomes = new Map<string, number>();
  const count = (k: Outcome): void => {
    outcomes.set(String(k), (outcomes.get(String(k)) ?? 0) + 1);
  };

  // Idle keep-alive clients: each sends one request, then holds its connection; one the gateway closes
  // (keep-alive timeout) is opened again, so `idle` are held throughout.
  const idle = new Set<Client>();
  let holdIdle = true;
  const openIdle = async (): Promise<void> => {
    while (holdIdle) {
      const c = await Client.connect(gateway.port);
      if (c === undefined) {
        await new Promise((r) => setTimeout(r, 100));
        continue;
      }
      const out = await c.request('GET /soak/1/ok/idle HTTP/1.1\r\nHost: soak\r\n\r\n');
      if (out !== 200) {
        count(out);
        c.destroy();
        continue;
      }
      idle.add(c);
      c.socket.once('close', () => {
        idle.delete(c);
        if (holdIdle) void openIdle();
      });
      return;
    }
  };
  for (let i = 0; i < o.idle; i += 200) {
    await Promise.all(Array.from({ length: Math.min(200, o.idle - i) }, () => openIdle()));
  }
  log(`idle keep-alive clients held: ${idle.size}`);

  let latencies: number[] = [];
  const snapshots: Snapshot[] = [];
  let issued = 0;
  const snapshot = async (label: string): Promise<Snapshot> => {
    const s = await gateway.stats();
    const snap: Snapshot = {
      label,
      requests: issued,
      fds: fdCount(gateway.pid),
      rss: s.rss,
      heapUsed: s.heapUsed,
      sources: s.connections.sources,
      targets: s.connections.targets,
      poolOpen: s.pools.reduce((a, p) => a + p.open, 0),
      poolIdle: s.pools.reduce((a, p) => a + p.idle, 0),
      poolWaiting: s.pools.reduce((a, p) => a + p.waiting, 0),
      poolMax: s.pools.reduce((a, p) => a + p.max, 0),
      p99: p99(latencies),
    };
    latencies = [];
    snapshots.push(snap);
    log(formatSnapshot(snap));
    return snap;
  };

  // Warm-up: enough plain requests to fill the pool and the JIT before the start figures.
  const warm = await Client.connect(gateway.port);
  for (let i = 0; i < 200 && warm !== undefined; i++) {
    const t0 = performance.now();
    const out = await warm.request(`GET /soak/1/ok/warm${i} HTTP/1.1\r\nHost: soak\r\n\r\n`);
    latencies.push(performance.now() - t0);
    count(out);
  }
  warm?.destroy();
  await snapshot('start');

  const deadline = o.seconds > 0 ? started + o.seconds * 1000 : Infinity;
  let middleTaken = false;
  let lastProgress = Date.now();
  const pick = (): { kind: Kind; post: boolean; abort: 0 | 1 | 2 | 3 } => {
    const fault = random() < o.faultShare;
    const kind: Kind = fault ? FAULT_KINDS[Math.floor(random() * FAULT_KINDS.length)]! : 'ok';
    const abort = random() < o.abortShare ? ((1 + Math.floor(random() * 3)) as 1 | 2 | 3) : 0;
    return { kind, post: random() < 0.25, abort };
  };

  const loop = async (w: number): Promise<void> => {
    let c: Client | undefined;
    let left = 0;
    while (issued < o.requests && Date.now() < deadline) {
      if (c === undefined || c.closed || left <= 0) {
        c?.destroy();
        c = await Client.connect(gateway.port);
        if (c === undefined) {
          count('connect-error');
          issued++;
          continue;
        }
        // Half the loops use one connection per request, half keep it for up to 50.
        left = w % 2 === 0 ? 1 : 50;
      }
      const i = issued++;
      left--;
      const { kind, post, abort } = pick();
      const target = `/soak/1/${kind}/${i}`;
      const body = post ? `{"n":${i},"pad":"${'x'.repeat(i % 200)}"}` : '';
      const closeIt = left <= 0 ? 'Connection: close\r\n' : '';
      const headText = post
        ? `POST ${target} HTTP/1.1\r\nHost: soak\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n${closeIt}\r\n`
        : `GET ${target} HTTP/1.1\r\nHost: soak\r\n${closeIt}\r\n`;
      const t0 = performance.now();
      let out: Outcome;
      if (abort === 1) out = await c.request(headText.slice(0, Math.max(1, Math.floor(headText.length / 2))), { abortAfterWrite: true });
      else if (abort === 2 && post) out = await c.request(headText + body.slice(0, body.length >> 1), { abortAfterWrite: true });
      else out = await c.request(headText + body, { abortAfterFirstByte: abort !== 0 });
      if (kind === 'ok' && !post && abort === 0 && out === 200) latencies.push(performance.now() - t0);
      count(out);
      if (out === 'aborted') c = undefined;
      if (Date.now() - lastProgress >= 5000) {
        lastProgress = Date.now();
        log(
          `${issued} requests, ${Math.round((issued * 1000) / (Date.now() - started))}/s, ${idle.size} idle held, outcomes ${formatOutcomes(outcomes)}`,
        );
      }
      if (!middleTaken && (issued >= o.requests / 2 || (o.seconds > 0 && Date.now() - started >= (o.seconds * 1000) / 2))) {
        middleTaken = true;
        await snapshot('middle');
      }
    }
    c?.destroy();
  };
  await Promise.all(Array.from({ length: o.concurrency }, (_, w) => loop(w)));
  if (!middleTaken) await snapshot('middle');
  // Settle: stalled exchanges end at the socket timeout; pooled connections stay idle.
  await new Promise((r) => setTimeout(r, 2500));
  await snapshot('end');
  const elapsedMs = Date.now() - started;

  const closeIdle = (): void => {
    holdIdle = false;
    for (const c of idle) c.destroy();
  };
  return {
    snapshots,
    outcomes,
    issued,
    idleHeld: idle.size,
    elapsedMs,
    gateway,
    backend,
    closeIdle,
    stop: async () => {
      closeIdle();
      await gateway.close();
      await backend.close();
    },
  };
}

export function formatSnapshot(s: Snapshot): string {
  const mb = (n: number): string => `${(n / 1048576).toFixed(1)} MB`;
  return `[${s.label}] after ${s.requests} requests: fds ${s.fds}, rss ${mb(s.rss)}, heap ${mb(s.heapUsed)}, sources ${s.sources}, targets ${s.targets}, pool open ${s.poolOpen} idle ${s.poolIdle} waiting ${s.poolWaiting}, p99 ${s.p99.toFixed(1)} ms`;
}

export function formatOutcomes(m: Map<string, number>): string {
  return [...m.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k}:${v}`)
    .join(' ');
}

/** Simple GET through the gateway on a fresh connection: the status, or an outcome class. */
export async function plainGet(port: number, target = '/soak/1/ok/after'): Promise<Outcome> {
  const c = await Client.connect(port);
  if (c === undefined) return 'connect-error';
  const out = await c.request(`GET ${target} HTTP/1.1\r\nHost: soak\r\nConnection: close\r\n\r\n`);
  c.destroy();
  return out;
}
