/**
 * `npm run bench -- --instructions [--requests N] [--rounds R] [--warm N] [--traced] [--plugin] [--node] [--node-bodies] [--h2c] [--keep]`: user-space instructions
 * per request of the bare transport and of the full gateway on the same request (the full scenario's route,
 * bearer token included; the gateway with its access log on, as in the CPU bench's full scenario), counted
 * by valgrind's callgrind (docs/performance.md, "Counting instructions"). `--traced` adds the traced
 * scenario's gateway (spans to the backend's Zipkin sink) and sends every cell the traced scenario's
 * requests: the 100 traceparents of common.ts traceparents(0.01), cycled, one in a hundred sampled.
 * `--h2c` adds the node cells and a second deployed node with `[throughway.http2] h2c = true`, sent the
 * same GET as HTTP/2 streams with prior knowledge (8 sessions, 10 streams open on each): what a stream
 * costs beside an HTTP/1.1 request on the node.
 * `--node-bodies` adds the node cells and counts both processes on the peers' other two requests as well:
 * GET /64k and POST /upload with 1 MiB (fewer of them per round: `--requests` ÷ 5 and ÷ 50).
 * `--node` adds the deployed node (bench/start-node.ts: `throughway start` with one open API file) and the
 * bare transport again, both sent the peers' plain GET of /small (no token): what a user runs against the
 * transport it is built on. `--keep` writes each counted dump, its JIT addresses named, to the bench's
 * work folder for callgrind_annotate (inclusive costs, `--tree=caller`).
 *
 * CPU time per request moves by 10 % and more from one 3-second cell to the next on a shared guest; an
 * instruction count does not depend on what else the machine runs, so it resolves changes of 1-2 % that an
 * A/B of CPU time cannot. It counts user space only (the kernel's half of a small request is not in it),
 * and it is taken under valgrind, where the code runs some 50 times slower: timers and GC run more often per
 * request than at full speed. GC and the JIT compiler are therefore counted apart from the program itself
 * (classify()), and the program's count is the figure to compare. Measured: one function's count repeats to
 * within a few instructions, but the program's total moves by 1-3 % between processes of one build (each
 * JIT inlines differently), so compare functions or medians of paired rounds (GC and the compiler: more).
 *
 * Each process runs as `valgrind --tool=callgrind --instr-atstart=no node --perf-basic-prof ...`: counting
 * is switched on only around the measured requests (callgrind_control), and JIT-compiled functions, which
 * callgrind sees only as addresses, are named from the perf map Node writes to /tmp/perf-<pid>.map.
 */
import * as fs from 'node:fs';
import * as http2 from 'node:http2';
import * as net from 'node:net';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import {
  DIST_BENCH,
  GATEWAY_OPEN_PATH,
  HOST,
  WORK_DIR,
  fmt,
  freePort,
  hasCommand,
  log,
  median,
  startBackend,
  startProc,
  stopAll,
  stopProc,
  traceparents,
  uploadBody,
  waitPort,
  type Proc,
} from './common';
import { ratiosText } from './render';

/** The full scenario's route on bench/start-gateway.ts: a warm token and three counters (and the access log, ACCESS_LOG=1). */
export const FULL_PATH = '/full/1/small';
const TRANSPORT_PATH = '/small';
/** The deployed node's API (bench/start-node.ts EXTRA_PREFIX): context /bench, version 1.0.0. */
export const NODE_PREFIX = '/bench/1.0.0';

/** Where an instruction was spent: the garbage collector, V8's compilers and parser, or the program (everything else). */
export type CostClass = 'gc' | 'compiler' | 'program';

const GC =
  /Marking|Sweep|Scaveng|MemoryChunk|ActiveSystemPages|IterateObjectCache|BodyDescriptor|SizeFromMap|ShouldVisit|Heap::|GCTracer|Evacuat|heap::base|cppgc|MarkCompact|Compactor|RememberedSet|SlotSet|FreeList|PagedSpace|NewSpace|SemiSpace|Safepoint|Worklist|MinorMC|__popcount/;
const COMPILER =
  /compiler::|Zone|Pipeline|RegisterAllocat|LiveRange|Maglev|Compilation|Compile|Bytecode|Parser|Scanner|Deoptimiz|Sparkplug|baseline::/;

/** The class of a function named as callgrind (C++) or the perf map (JavaScript) names it. */
export function classify(name: string): CostClass {
  if (GC.test(name)) return 'gc';
  if (COMPILER.test(name)) return 'compiler';
  return 'program';
}

/** Self costs per function of a callgrind output file, one number per event its `events:` line names. */
export interface CallgrindCosts {
  /** The events in column order (`Ir`, or with --cache-sim `Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw`). */
  readonly events: readonly string[];
  readonly self: ReadonlyMap<string, readonly number[]>;
}

/**
 * Self cost per function and event of a callgrind output file (format of callgrind 3.x: `fn=(id) name`
 * names a function the first time and `fn=(id)` after; a cost line is as many positions as the
 * `positions:` line names, `line` when there is none, then the costs in the order of `events:`, trailing
 * zeros left out; the line after `calls=` is the inclusive cost of that call, which belongs to the callee
 * and is skipped here).
 */
export function parseCallgrindEvents(text: string): CallgrindCosts {
  const names = new Map<string, string>();
  const self = new Map<string, number[]>();
  let events: string[] = ['Ir'];
  let positions = 1;
  let current: string | undefined;
  let callLine = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('fn=')) {
      current = nameOf(names, line.slice(3));
      callLine = false;
      continue;
    }
    if (line.startsWith('cfn=')) {
      nameOf(names, line.slice(4));
      continue;
    }
    if (line.startsWith('calls=')) {
      callLine = true;
      continue;
    }
    if (line.startsWith('events:')) {
      events = line.slice(7).trim().split(/\s+/);
      continue;
    }
    if (line.startsWith('positions:')) {
      positions = Math.max(1, line.slice(10).trim().split(/\s+/).length);
      continue;
    }
    const c = line.charCodeAt(0);
    // Cost lines start with a position: a number, +n / -n (relative), * (same) or 0x (an address).
    if (current === undefined || !((c >= 48 && c <= 57) || c === 43 || c === 45 || c === 42)) continue;
    if (callLine) {
      callLine = false;
      continue;
    }
    const parts = line.trim().split(/\s+/);
    if (parts.length <= positions) continue;
    let costs = self.get(current);
    if (costs === undefined) {
      costs = new Array<number>(events.length).fill(0);
      self.set(current, costs);
    }
    for (let i = positions; i < parts.length && i - positions < events.length; i++) {
      const v = Number(parts[i]);
      if (Number.isFinite(v)) costs[i - positions] = (costs[i - positions] as number) + v;
    }
  }
  return { events, self };
}

/** Self cost (instructions, the `Ir` event) per function of a callgrind output file (parseCallgrindEvents). */
export function parseCallgrind(text: string): Map<string, number> {
  const { events, self } = parseCallgrindEvents(text);
  const ir = Math.max(0, events.indexOf('Ir'));
  const out = new Map<string, number>();
  for (const [name, costs] of self) out.set(name, costs[ir] as number);
  return out;
}

/** `(id) name` defines id; `(id)` refers to it. */
function nameOf(names: Map<string, string>, ref: string): string {
  const m = /^\((\d+)\)(?: (.*))?$/.exec(ref);
  if (m === null) return ref;
  const id = m[1] as string;
  if (m[2] !== undefined) names.set(id, m[2]);
  return names.get(id) ?? `(${id})`;
}

/** A perf map (/tmp/perf-<pid>.map: `start size name`, hex), sorted by start address. */
export interface PerfMap {
  readonly starts: readonly number[];
  readonly ends: readonly number[];
  readonly names: readonly string[];
}

export function readPerfMap(text: string): PerfMap {
  const rows: [number, number, string][] = [];
  for (const line of text.split('\n')) {
    const m = /^([0-9a-fA-F]+) ([0-9a-fA-F]+) (.+)$/.exec(line);
    if (m !== null) rows.push([parseInt(m[1] as string, 16), parseInt(m[2] as string, 16), m[3] as string]);
  }
  rows.sort((a, b) => a[0] - b[0]);
  return { starts: rows.map((r) => r[0]), ends: rows.map((r) => r[0] + r[1]), names: rows.map((r) => r[2]) };
}

/**
 * The name of a callgrind function: an unnamed JIT address (`0x...`) takes the perf map's name of the
 * code it lies in, without V8's tier marks and the checkout's path; others keep theirs.
 */
export function symbolize(name: string, map: PerfMap): string {
  const m = /^0x([0-9a-fA-F]+)$/.exec(name);
  if (m === null) return name;
  const addr = parseInt(m[1] as string, 16);
  let lo = 0;
  let hi = map.starts.length - 1;
  let best = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if ((map.starts[mid] as number) <= addr) {
      best = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  if (best < 0 || addr >= (map.ends[best] as number)) return 'JIT or wasm code without a name';
  return (map.names[best] as string)
    .replace(/^(?:LazyCompile|JS|Function):[*~^+]?/, '')
    .replace(/ \S*\/dist\//, ' ')
    .replace(/:\d+:\d+$/, '');
}

/**
 * A callgrind dump with its JIT addresses named (symbolize()), for callgrind_annotate: every `fn=`/`cfn=`
 * name that is an address takes the perf map's name, so inclusive costs and call trees read by function.
 */
export function symbolizeDump(text: string, map: PerfMap): string {
  return text.replace(/^(c?fn=\(\d+\) )(0x[0-9a-fA-F]+)$/gm, (_m, head: string, addr: string) => head + symbolize(addr, map));
}

/** Instructions per request of one counted cell, by class and by function. */
export interface InstructionCount {
  readonly total: number;
  readonly gc: number;
  readonly compiler: number;
  readonly program: number;
  /** Program instructions per request by function (symbolized names). */
  readonly byFunction: Readonly<Record<string, number>>;
}

export function countOf(self: ReadonlyMap<string, number>, map: PerfMap, requests: number): InstructionCount {
  let gc = 0;
  let compiler = 0;
  let program = 0;
  const byFunction: Record<string, number> = {};
  for (const [raw, ir] of self) {
    const name = symbolize(raw, map);
    const cls = classify(name);
    if (cls === 'gc') gc += ir;
    else if (cls === 'compiler') compiler += ir;
    else {
      program += ir;
      byFunction[name] = (byFunction[name] ?? 0) + ir / requests;
    }
  }
  return {
    total: (gc + compiler + program) / requests,
    gc: gc / requests,
    compiler: compiler / requests,
    program: program / requests,
    byFunction,
  };
}

export interface InstructionRun {
  readonly date: string;
  readonly requests: number;
  readonly rounds: number;
  readonly transport: readonly InstructionCount[];
  readonly gateway: readonly InstructionCount[];
  /** The traced scenario's gateway (`--traced`); every cell was then sent the traced requests. */
  readonly traced?: readonly InstructionCount[];
  /** The full gateway with one no-op policy plugin (`--plugin`, docs/plugins.md). */
  readonly plugin?: readonly InstructionCount[];
  /** `--node`: the bare transport sent the plain GET of /small (no token), the deployed node's reference. */
  readonly transportPlain?: readonly InstructionCount[];
  /** `--node`: the deployed node (bench/start-node.ts) on the same plain GET of its API's /small. */
  readonly node?: readonly InstructionCount[];
  /** `--h2c`: a second deployed node with h2c on, sent the same GET as HTTP/2 streams (10 per session at once). */
  readonly h2c?: readonly InstructionCount[];
  /**
   * `--node-bodies`: the peers' two other requests to the transport and to the deployed node, GET /64k
   * (`requests` ÷ 5 per round) and POST /upload with 1 MiB (`requests` ÷ 50).
   */
  readonly bodies?: {
    readonly transport64k: readonly InstructionCount[];
    readonly node64k: readonly InstructionCount[];
    readonly transportUpload: readonly InstructionCount[];
    readonly nodeUpload: readonly InstructionCount[];
  };
}

/** The table of a run: medians per class, the program ratio per round, and the functions that differ most. */
export function renderInstructions(run: InstructionRun, top = 15): string {
  const med = (cs: readonly InstructionCount[], k: 'total' | 'gc' | 'compiler' | 'program'): number => median(cs.map((c) => c[k]));
  const L: string[] = [];
  L.push(`Instructions per request (user space, callgrind), ${run.rounds} round(s) of ${run.requests} requests each, medians:`);
  L.push('');
  L.push('| cell | total | GC | compiler | program |');
  L.push('|---|---:|---:|---:|---:|');
  // A --node-only run has no token cells.
  const tokenCells = run.transport.length > 0;
  const cells: [string, readonly InstructionCount[]][] = tokenCells
    ? [
        ['transport, same request', run.transport],
        ['full gateway', run.gateway],
      ]
    : [];
  if (run.traced !== undefined) cells.push(['traced gateway, 1 % sampled', run.traced]);
  if (run.plugin !== undefined) cells.push(['full gateway, one no-op plugin', run.plugin]);
  if (run.transportPlain !== undefined) cells.push(['transport, plain GET (no token)', run.transportPlain]);
  if (run.node !== undefined) cells.push(['deployed node, plain GET', run.node]);
  if (run.h2c !== undefined) cells.push(['deployed node, the same GET as an h2c stream', run.h2c]);
  const b = run.bodies;
  if (b !== undefined)
    cells.push(
      ['transport, GET /64k', b.transport64k],
      ['deployed node, GET /64k', b.node64k],
      ['transport, POST /upload 1 MiB', b.transportUpload],
      ['deployed node, POST /upload 1 MiB', b.nodeUpload],
    );
  for (const [label, cs] of cells) {
    L.push(`| ${label} | ${fmt(med(cs, 'total'))} | ${fmt(med(cs, 'gc'))} | ${fmt(med(cs, 'compiler'))} | ${fmt(med(cs, 'program'))} |`);
  }
  const ratioOf = (cs: readonly InstructionCount[], base = run.transport): number[] =>
    cs.map((g, i) => g.program / (base[i]?.program ?? NaN));
  L.push('');
  if (tokenCells) L.push(`Program instructions, gateway / transport: ${ratiosText(ratioOf(run.gateway))}`);
  if (run.traced !== undefined) L.push(`Program instructions, traced gateway / transport: ${ratiosText(ratioOf(run.traced))}`);
  if (run.node !== undefined && run.transportPlain !== undefined)
    L.push(`Program instructions, deployed node / transport (plain GET): ${ratiosText(ratioOf(run.node, run.transportPlain))}`);
  if (run.h2c !== undefined && run.node !== undefined)
    L.push(`Program instructions, h2c stream / HTTP/1.1 request on the deployed node: ${ratiosText(ratioOf(run.h2c, run.node))}`);
  if (b !== undefined) {
    L.push(`Program instructions, deployed node / transport (GET /64k): ${ratiosText(ratioOf(b.node64k, b.transport64k))}`);
    L.push(`Program instructions, deployed node / transport (POST /upload 1 MiB): ${ratiosText(ratioOf(b.nodeUpload, b.transportUpload))}`);
  }
  if (tokenCells) {
    L.push('');
    L.push(`Where the gateway's extra program instructions go (the ${top} functions that differ most, per request):`);
    L.push(...differences(run.transport, run.gateway, 'transport', 'gateway', top));
  }
  if (run.traced !== undefined) {
    L.push('');
    L.push(`What tracing adds to the full gateway (the ${top} functions that differ most, per request):`);
    L.push(...differences(run.gateway, run.traced, 'gateway', 'traced', top));
  }
  if (run.plugin !== undefined) {
    L.push('');
    L.push(`What one no-op plugin adds to the full gateway (the ${top} functions that differ most, per request):`);
    L.push(...differences(run.gateway, run.plugin, 'gateway', 'plugin', top));
  }
  if (run.node !== undefined && run.transportPlain !== undefined) {
    L.push('');
    L.push(`Where the deployed node's extra program instructions go (the ${top} functions that differ most, per request):`);
    L.push(...differences(run.transportPlain, run.node, 'transport', 'node', top));
  }
  if (run.h2c !== undefined && run.node !== undefined) {
    L.push('');
    L.push(`What an h2c stream costs beyond an HTTP/1.1 request on the node (the ${top} functions that differ most, per request):`);
    L.push(...differences(run.node, run.h2c, 'HTTP/1.1', 'h2c', top));
  }
  if (b !== undefined) {
    L.push('');
    L.push(`Where the deployed node's extra program instructions go on GET /64k (the ${top} functions that differ most, per request):`);
    L.push(...differences(b.transport64k, b.node64k, 'transport', 'node', top));
    L.push('');
    L.push(
      `Where the deployed node's extra program instructions go on POST /upload 1 MiB (the ${top} functions that differ most, per request):`,
    );
    L.push(...differences(b.transportUpload, b.nodeUpload, 'transport', 'node', top));
  }
  return L.join('\n') + '\n';
}

/** The table of the functions whose median count differs most between two cells, largest increase first. */
function differences(
  base: readonly InstructionCount[],
  more: readonly InstructionCount[],
  baseLabel: string,
  moreLabel: string,
  top: number,
): string[] {
  const names = new Set<string>();
  for (const c of [...base, ...more]) for (const n of Object.keys(c.byFunction)) names.add(n);
  const per = (cs: readonly InstructionCount[], n: string): number => median(cs.map((c) => c.byFunction[n] ?? 0));
  const rows = [...names].map((n) => ({ n, b: per(base, n), m: per(more, n) })).sort((a, b) => b.m - b.b - (a.m - a.b));
  const L = ['', `| function | ${baseLabel} | ${moreLabel} | difference |`, '|---|---:|---:|---:|'];
  for (const r of rows.slice(0, top))
    L.push(`| ${r.n.replace(/\|/g, '\\|')} | ${fmt(r.b)} | ${fmt(r.m)} | ${r.m - r.b >= 0 ? '+' : ''}${fmt(r.m - r.b)} |`);
  return L;
}

// ------------------------------------------------------------------ measuring

/** Keep-alive connections held open across sends (connectionSet). */
export interface ConnectionSet {
  /** Sends n requests in all, each connection asking again once answered; resolves with the answers that were not 200. */
  send(n: number): Promise<number>;
  close(): void;
}

/**
 * `conns` keep-alive connections to `port`, open until close(). Each send makes `request` or, given a list,
 * its requests in turn (the k-th request sent over the set's life is `request[k % length]`). A connection
 * that errs or closes fails the send under way, or the next one, instead of leaving it waiting for an
 * answer that never comes.
 */
export async function connectionSet(port: number, conns: number, request: Buffer | readonly Buffer[]): Promise<ConnectionSet> {
  const list: readonly Buffer[] = Buffer.isBuffer(request) ? [request] : request;
  if (list.length === 0) throw new Error('no request to send');
  interface Conn {
    readonly socket: net.Socket;
    buf: Buffer;
    answered: (ok: boolean) => void;
    /** The send under way fails with a socket's error; between sends the error waits for the next one. */
    failed: (err: Error) => void;
  }
  let lastError: Error | undefined;
  let sent = 0;
  const keep = (err: Error): void => {
    lastError ??= err;
  };
  const all: Conn[] = [];
  for (let i = 0; i < conns; i++) {
    const socket = net.connect(port, HOST);
    const c: Conn = { socket, buf: Buffer.alloc(0), answered: () => undefined, failed: keep };
    socket.on('error', (err) => c.failed(err));
    socket.on('close', () => c.failed(new Error(`connection ${i + 1} of ${conns} closed`)));
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      c.failed = reject;
    });
    c.failed = keep;
    socket.on('data', (d: Buffer) => {
      c.buf = c.buf.length === 0 ? d : Buffer.concat([c.buf, d]);
      for (;;) {
        const h = c.buf.indexOf('\r\n\r\n');
        if (h < 0) return;
        const head = c.buf.subarray(0, h).toString('latin1');
        const len = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
        if (c.buf.length < h + 4 + len) return;
        c.buf = c.buf.subarray(h + 4 + len);
        c.answered(head.startsWith('HTTP/1.1 200'));
      }
    });
    all.push(c);
  }
  return {
    send(n) {
      return new Promise((resolve, reject) => {
        if (lastError !== undefined) {
          reject(lastError);
          return;
        }
        let left = n;
        let pending = 0;
        let bad = 0;
        const done = (): void => {
          for (const c of all) c.failed = keep;
          resolve(bad);
        };
        const ask = (c: Conn): void => {
          left--;
          pending++;
          c.socket.write(list[sent++ % list.length] as Buffer);
        };
        for (const c of all) {
          c.failed = reject;
          c.answered = (ok) => {
            pending--;
            if (!ok) bad++;
            if (left > 0) ask(c);
            else if (pending === 0) done();
          };
        }
        for (const c of all) if (left > 0) ask(c);
        if (n <= 0) done();
      });
    },
    close() {
      for (const c of all) {
        c.failed = () => undefined;
        c.socket.destroy();
      }
    },
  };
}

/**
 * Sends exactly `n` requests over `conns` keep-alive connections opened for them (connectionSet), `request`
 * each time or, given a list, its requests in turn; resolves with the answers that were not 200.
 */
export async function sendFixed(port: number, request: Buffer | readonly Buffer[], n: number, conns: number): Promise<number> {
  const set = await connectionSet(port, conns, request);
  try {
    return await set.send(n);
  } finally {
    set.close();
  }
}

/**
 * Sends exactly `n` GETs of `p` as HTTP/2 streams with prior knowledge (h2c) over `sessions` sessions, at
 * most `inFlight` streams open on each; resolves with the answers that were not 200.
 */
export async function sendH2c(port: number, p: string, n: number, sessions: number, inFlight: number): Promise<number> {
  const all = Array.from({ length: sessions }, () => http2.connect(`http://${HOST}:${port}`));
  let left = n;
  let bad = 0;
  try {
    await Promise.all(
      all.flatMap((session) =>
        Array.from({ length: inFlight }, async () => {
          while (left > 0) {
            left--;
            const status = await new Promise<number>((resolve) => {
              const req = session.request({ ':path': p });
              let st = 0;
              req.on('response', (h) => (st = Number(h[':status'])));
              req.on('close', () => resolve(st));
              req.on('error', () => undefined);
              req.resume();
            });
            if (status !== 200) bad++;
          }
        }),
      ),
    );
  } finally {
    for (const s of all) s.close();
  }
  return bad;
}

/** callgrind_control on a counted process (`-z` zero, `-i on|off` count, `-d` dump). */
export function control(pid: number, ...args: string[]): void {
  const r = spawnSync('callgrind_control', [...args, String(pid)], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`callgrind_control ${args.join(' ')} ${pid}: ${r.stderr || r.stdout}`);
}

/** A process under callgrind: its bench process, port, and the stem of its output files. */
export interface Counted {
  readonly proc: Proc;
  readonly port: number;
  readonly out: string;
}

/** `script` (in dist/bench) under callgrind, counting nothing until control(-i on); `valgrindArgs` go before the program. */
export function startCounted(
  name: string,
  script: string,
  env: Record<string, string>,
  port: number,
  valgrindArgs: readonly string[] = [],
): Counted {
  const out = path.join(WORK_DIR, `callgrind.${name}`);
  const proc = startProc(
    name,
    [
      'valgrind',
      '--tool=callgrind',
      '--instr-atstart=no',
      ...valgrindArgs,
      `--callgrind-out-file=${out}.%p`,
      process.execPath,
      '--perf-basic-prof',
      path.join(DIST_BENCH, script),
    ],
    { ...env, PORT: String(port) },
  );
  return { proc, port, out };
}

/**
 * Counts a process's work around `send` alone (zero, count on, send, dump, count off) and reads that dump,
 * with the perf map that names its JIT code; the dump is removed once read, so the next one is the next
 * count's. Throws when `send` resolves with answers other than 200.
 */
export async function countAround(c: Counted, send: () => Promise<number>): Promise<{ text: string; map: PerfMap }> {
  control(c.proc.pid, '-z');
  control(c.proc.pid, '-i', 'on');
  const bad = await send();
  control(c.proc.pid, '-d');
  control(c.proc.pid, '-i', 'off');
  if (bad > 0) throw new Error(`${c.proc.name}: ${bad} answers other than 200 (log: ${c.proc.logFile})`);
  const [file] = dumps(c);
  if (file === undefined) throw new Error(`${c.proc.name}: callgrind wrote no dump`);
  const map = readPerfMap(fs.readFileSync(`/tmp/perf-${c.proc.pid}.map`, 'utf8'));
  const text = fs.readFileSync(file, 'utf8');
  fs.rmSync(file, { force: true });
  return { text, map };
}

/** `keep`: where to write the dump, its JIT addresses named (symbolizeDump), for callgrind_annotate. */
async function countCell(
  c: Counted,
  request: Buffer | readonly Buffer[],
  warm: number,
  requests: number,
  keep?: string,
): Promise<InstructionCount> {
  if ((await sendFixed(c.port, request, warm, 8)) > 0)
    throw new Error(`${c.proc.name}: answers other than 200 while warming up (log: ${c.proc.logFile})`);
  const { text, map } = await countAround(c, () => sendFixed(c.port, request, requests, 8));
  if (keep !== undefined) fs.writeFileSync(keep, symbolizeDump(text, map));
  return countOf(parseCallgrind(text), map, requests);
}

/** The numbered dumps of a counted process (`<out>.<pid>.<n>`). */
export function dumps(c: Counted): string[] {
  const dir = path.dirname(c.out);
  const stem = `${path.basename(c.out)}.${c.proc.pid}.`;
  return fs
    .readdirSync(dir)
    .filter((f) => f.startsWith(stem))
    .map((f) => path.join(dir, f));
}

export function numberArg(argv: readonly string[], flag: string, dflt: number): number {
  const i = argv.indexOf(flag);
  if (i < 0) return dflt;
  const v = Number(argv[i + 1]);
  if (!Number.isInteger(v) || v <= 0) throw new Error(`${flag} needs a positive whole number, got ${String(argv[i + 1])}`);
  return v;
}

export async function runInstructionsBench(argv: readonly string[]): Promise<void> {
  const requests = numberArg(argv, '--requests', 20_000);
  const rounds = numberArg(argv, '--rounds', 3);
  const warm = numberArg(argv, '--warm', 40_000);
  const withTraced = argv.includes('--traced');
  const withPlugin = argv.includes('--plugin');
  // --node-only: the two cells of --node alone (the transport and the deployed node, plain GET), for a
  // count that has to be quick on a busy machine.
  const nodeOnly = argv.includes('--node-only');
  // --h2c: the node cells, and a second node with h2c on sent the same GET as HTTP/2 streams.
  const withH2c = argv.includes('--h2c');
  // --node-bodies: the node cells, and both processes counted on GET /64k and POST /upload (1 MiB) too.
  const withBodies = argv.includes('--node-bodies');
  const withNode = nodeOnly || withH2c || withBodies || argv.includes('--node');
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const keep = (cell: string, r: number): string | undefined =>
    argv.includes('--keep') ? path.join(WORK_DIR, `callgrind-${stamp}-${cell}-r${r + 1}.out`) : undefined;
  // Thrown, like profile.ts's missing perf: run.ts reports "bench failed: ..." and exits 1.
  for (const cmd of ['valgrind', 'callgrind_control'])
    if (!hasCommand(cmd)) throw new Error(`--instructions needs ${cmd}, not found (Debian: apt-get install valgrind)`);
  fs.mkdirSync(WORK_DIR, { recursive: true });
  const backendPort = await freePort();
  const tokenFile = path.join(WORK_DIR, 'instructions-token');
  const transport: InstructionCount[] = [];
  const gateway: InstructionCount[] = [];
  const traced: InstructionCount[] = [];
  const plugin: InstructionCount[] = [];
  const transportPlain: InstructionCount[] = [];
  const node: InstructionCount[] = [];
  const h2c: InstructionCount[] = [];
  const bodies = {
    transport64k: [] as InstructionCount[],
    node64k: [] as InstructionCount[],
    transportUpload: [] as InstructionCount[],
    nodeUpload: [] as InstructionCount[],
  };
  const counted: Counted[] = [];
  try {
    await startBackend(backendPort);
    const upstream = `http://${HOST}:${backendPort}`;
    log('starting the transport and the gateway under callgrind (a minute or two)');
    const tp = startCounted('transport-callgrind', 'start-throughway.js', { UPSTREAM: upstream }, await freePort());
    // The full scenario as the CPU bench runs it (run.ts): the access log on.
    const gw = nodeOnly
      ? undefined
      : startCounted(
          'gateway-callgrind',
          'start-gateway.js',
          { UPSTREAM: upstream, TOKEN_FILE: tokenFile, ACCESS_LOG: '1' },
          await freePort(),
        );
    counted.push(tp);
    if (gw !== undefined) counted.push(gw);
    // The traced scenario's gateway (run.ts): the access log on and spans to the backend's Zipkin sink.
    const tr = withTraced
      ? startCounted(
          'traced-callgrind',
          'start-gateway.js',
          { UPSTREAM: upstream, TOKEN_FILE: `${tokenFile}-traced`, ACCESS_LOG: '1', TRACER_PORT: String(backendPort) },
          await freePort(),
        )
      : undefined;
    if (tr !== undefined) counted.push(tr);
    // The full gateway again, with one no-op policy plugin (start-gateway.ts NOOP_PLUGIN).
    const pl = withPlugin
      ? startCounted(
          'plugin-callgrind',
          'start-gateway.js',
          { UPSTREAM: upstream, TOKEN_FILE: `${tokenFile}-plugin`, ACCESS_LOG: '1', NOOP_PLUGIN: '1' },
          await freePort(),
        )
      : undefined;
    if (pl !== undefined) counted.push(pl);
    // The deployed node: `throughway start` with one open API file whose endpoint is the backend.
    const nd = withNode
      ? startCounted('node-callgrind', 'start-node.js', { UPSTREAM: upstream, EXTRA_PREFIX: NODE_PREFIX }, await freePort())
      : undefined;
    if (nd !== undefined) counted.push(nd);
    // Its own process: with h2c on, the plain listener reads a connection's first bytes before it takes
    // HTTP/1.1 (docs/http2.md), so the HTTP/1.1 cell stays on a node without it.
    const h2 = withH2c
      ? startCounted('h2c-callgrind', 'start-node.js', { UPSTREAM: upstream, EXTRA_PREFIX: NODE_PREFIX, H2C: '1' }, await freePort())
      : undefined;
    if (h2 !== undefined) counted.push(h2);
    for (const c of counted) await waitPort(c.port, 300_000, c.proc);
    const token = gw === undefined ? '' : fs.readFileSync(tokenFile, 'utf8').trim();
    // The traced gateway issued its own token, as long as the other one.
    const tracedToken = tr !== undefined ? fs.readFileSync(`${tokenFile}-traced`, 'utf8').trim() : token;
    const pluginToken = pl !== undefined ? fs.readFileSync(`${tokenFile}-plugin`, 'utf8').trim() : token;
    const one = (port: number, p: string, tok: string, extra: string): Buffer =>
      Buffer.from(`GET ${p} HTTP/1.1\r\nHost: ${HOST}:${port}\r\nAuthorization: Bearer ${tok}\r\n${extra}\r\n`, 'latin1');
    // Every cell gets the same request, with --traced the traced scenario's 100 traceparents in turn (the
    // traced gateway with its own token).
    const req = (port: number, p: string, tok = token): Buffer | Buffer[] =>
      withTraced ? traceparents(0.01).map((tp) => one(port, p, tok, `traceparent: ${tp}\r\n`)) : one(port, p, tok, '');
    // The peers' request (wrk's GET with a Host field only), to the transport and to the deployed node.
    const plain = (port: number, p: string): Buffer => Buffer.from(`GET ${p} HTTP/1.1\r\nHost: ${HOST}:${port}\r\n\r\n`, 'latin1');
    // The peers' POST: 1 MiB (common.ts uploadBody) with its length, as wrk's script sends it.
    const upload = withBodies ? uploadBody() : Buffer.alloc(0);
    const post = (port: number, p: string): Buffer =>
      Buffer.concat([
        Buffer.from(
          `POST ${p} HTTP/1.1\r\nHost: ${HOST}:${port}\r\nContent-Type: application/octet-stream\r\nContent-Length: ${upload.length}\r\n\r\n`,
          'latin1',
        ),
        upload,
      ]);
    // The open route answers too: the gateway serves the bench's routes (a check, not counted).
    if (gw !== undefined && (await sendFixed(gw.port, req(gw.port, GATEWAY_OPEN_PATH), 10, 1)) > 0)
      throw new Error(`the gateway does not answer ${GATEWAY_OPEN_PATH} (log: ${gw.proc.logFile})`);
    for (let r = 0; r < rounds; r++) {
      const w = r === 0 ? warm : Math.min(warm, 10_000);
      log(`round ${r + 1}/${rounds}: ${w} warm-up and ${requests} counted requests per cell`);
      if (gw !== undefined) {
        transport.push(await countCell(tp, req(tp.port, TRANSPORT_PATH), w, requests, keep('transport', r)));
        gateway.push(await countCell(gw, req(gw.port, FULL_PATH), w, requests, keep('gateway', r)));
      }
      if (tr !== undefined) traced.push(await countCell(tr, req(tr.port, FULL_PATH, tracedToken), w, requests, keep('traced', r)));
      if (pl !== undefined) plugin.push(await countCell(pl, req(pl.port, FULL_PATH, pluginToken), w, requests, keep('plugin', r)));
      if (nd !== undefined) {
        transportPlain.push(await countCell(tp, plain(tp.port, TRANSPORT_PATH), w, requests, keep('transport-plain', r)));
        node.push(await countCell(nd, plain(nd.port, `${NODE_PREFIX}${TRANSPORT_PATH}`), w, requests, keep('node', r)));
      }
      if (nd !== undefined && withBodies) {
        // Fewer of the larger requests: each costs some 5x (64 KiB) and 50x (1 MiB) a small GET under valgrind.
        const n64 = Math.max(1, Math.round(requests / 5));
        const w64 = Math.max(1, Math.round(w / 5));
        const nUp = Math.max(1, Math.round(requests / 50));
        const wUp = Math.max(1, Math.round(w / 50));
        bodies.transport64k.push(await countCell(tp, plain(tp.port, '/64k'), w64, n64, keep('transport-64k', r)));
        bodies.node64k.push(await countCell(nd, plain(nd.port, `${NODE_PREFIX}/64k`), w64, n64, keep('node-64k', r)));
        bodies.transportUpload.push(await countCell(tp, post(tp.port, '/upload'), wUp, nUp, keep('transport-upload', r)));
        bodies.nodeUpload.push(await countCell(nd, post(nd.port, `${NODE_PREFIX}/upload`), wUp, nUp, keep('node-upload', r)));
        log(
          `  GET /64k: transport ${fmt(bodies.transport64k[r]?.program)}, node ${fmt(bodies.node64k[r]?.program)}; POST /upload 1 MiB: transport ${fmt(bodies.transportUpload[r]?.program)}, node ${fmt(bodies.nodeUpload[r]?.program)}`,
        );
      }
      if (h2 !== undefined) {
        const at = `${NODE_PREFIX}${TRANSPORT_PATH}`;
        if ((await sendH2c(h2.port, at, w, 8, 10)) > 0)
          throw new Error(`${h2.proc.name}: answers other than 200 while warming up (log: ${h2.proc.logFile})`);
        const { text, map } = await countAround(h2, () => sendH2c(h2.port, at, requests, 8, 10));
        const file = keep('h2c', r);
        if (file !== undefined) fs.writeFileSync(file, symbolizeDump(text, map));
        h2c.push(countOf(parseCallgrind(text), map, requests));
      }
      log(
        `  program instructions per request: transport ${fmt(transport[r]?.program)}, gateway ${fmt(gateway[r]?.program)}${tr !== undefined ? `, traced ${fmt(traced[r]?.program)}` : ''}${pl !== undefined ? `, plugin ${fmt(plugin[r]?.program)}` : ''}${nd !== undefined ? `, transport plain ${fmt(transportPlain[r]?.program)}, node ${fmt(node[r]?.program)}` : ''}${h2 !== undefined ? `, h2c stream ${fmt(h2c[r]?.program)}` : ''}`,
      );
    }
    if (tr !== undefined) await stopProc(tr.proc, 20_000);
    if (pl !== undefined) await stopProc(pl.proc, 20_000);
    if (nd !== undefined) await stopProc(nd.proc, 20_000);
    if (h2 !== undefined) await stopProc(h2.proc, 20_000);
    if (gw !== undefined) await stopProc(gw.proc, 20_000);
    await stopProc(tp.proc, 20_000);
  } finally {
    await stopAll();
    fs.rmSync(tokenFile, { force: true });
    fs.rmSync(`${tokenFile}-traced`, { force: true });
    fs.rmSync(`${tokenFile}-plugin`, { force: true });
    // Whether the run ended or failed: Node's perf maps and callgrind's files (the one each process writes
    // as it exits, and any dump not yet read) go with it.
    for (const c of counted) {
      fs.rmSync(`/tmp/perf-${c.proc.pid}.map`, { force: true });
      for (const f of [`${c.out}.${c.proc.pid}`, ...dumps(c)]) fs.rmSync(f, { force: true });
    }
  }
  const run: InstructionRun = {
    date: new Date().toISOString(),
    requests,
    rounds,
    transport,
    gateway,
    ...(withTraced ? { traced } : {}),
    ...(withPlugin ? { plugin } : {}),
    ...(withNode ? { transportPlain, node } : {}),
    ...(withH2c ? { h2c } : {}),
    ...(withBodies ? { bodies } : {}),
  };
  fs.writeFileSync(path.join(WORK_DIR, `instructions-${run.date.replace(/[:.]/g, '-')}.json`), JSON.stringify(run, null, 2));
  process.stdout.write(`# throughway instruction count — ${run.date}\n\n${renderInstructions(run)}`);
}
