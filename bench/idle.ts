/**
 * `npm run bench -- --idle`: the memory a transport-only throughway holds for idle keep-alive clients
 * (docs/performance.md, "Idle keep-alive clients"). The proxy (bench/start-throughway.ts) and the bench
 * backend run as children; a third child opens the clients (its descriptors are its own), each makes one
 * request and then stays open without sending anything. RSS is read from the proxy's
 * /proc/<pid>/status --settle seconds (40) after 200 warm-up requests (so code is compiled as in a
 * running node), 3 s after the clients are connected, and again every 2 s while they stay idle, for
 * --settle seconds: V8 releases the young generation that allocation grew only once allocation has been
 * quiet for a while (its memory reducer; measured: 10 to 30 s), so the settled readings, with and without
 * the clients, are what idle clients cost. Measurement only; `--write` replaces the section.
 *
 *   npm run bench -- --idle [--clients N] [--settle S] [--write] [--from FILE]
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import { fmt, freePort, HOST, log, machineLines, rawRun, sleep, startBackend, startThroughway, stopAll } from './common';
import { writeSection } from './render';

export const IDLE_BEGIN = '<!-- idle:begin -->';
export const IDLE_END = '<!-- idle:end -->';

/** The target of the performance issue: at most this much RSS above an idle node for 10,000 clients. */
const TARGET_MB = 60;

/**
 * The V8 flag of the second measurement: the young generation's semi-spaces at most 2 MiB. Opening
 * thousands of connections at once grows them to V8's maximum (16 MiB each on 64-bit Node 20), which
 * RSS then shows as if the clients held it; the flag bounds that at 2 MiB each (docs/performance.md).
 */
export const BOUNDED_YOUNG = '--max-semi-space-size=2';

/**
 * How long the clients stay idle before the last reading, unless --settle says otherwise: past V8's
 * release of the young generation (10 to 30 s measured), short of the transport's keepAliveTimeout
 * (60 s, lib/transport/settings.ts), after which it closes them.
 */
export const SETTLE_S = 40;

/** One proxy's readings. */
export interface IdleReading {
  /** Node flags of the proxy process ([] = Node's defaults). */
  readonly nodeFlags: readonly string[];
  readonly idleRssMb: number;
  /** 3 s after the last client got its answer: the young generation the burst grew is still held. */
  readonly heldRssMb: number;
  /**
   * After the clients stayed idle for `settleS` seconds (absent in runs made before this reading):
   * what holding them costs once V8 has released the young generation. The target is judged on it.
   */
  readonly settledRssMb?: number;
  readonly settleS?: number;
  /** Connections the proxy held at the second reading (clients that got their answer and stayed). */
  readonly held: number;
}

export interface IdleRun {
  readonly date: string;
  readonly command: string;
  readonly machine: readonly string[];
  readonly clients: number;
  /** Node's defaults first, then with BOUNDED_YOUNG. */
  readonly readings: readonly IdleReading[];
}

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m === null ? NaN : Number(m[1]) / 1024;
}

/** What CLIENT sends, one of these fields per message (error: it could not go on). */
export interface ClientMessage {
  readonly warm?: boolean;
  readonly held?: number;
  readonly open?: number;
  readonly error?: string;
}

/**
 * The client process (`node -e CLIENT host port n`): warm-up, then `n` clients that each make one request
 * and stay. Over IPC it sends {warm}, waits for 'go', sends {held}; then answers 'count' with {open} (the
 * clients not closed since) and ends on any other message.
 */
export const CLIENT = `
const net = require('node:net');
const [host, port, n] = [process.argv[1], Number(process.argv[2]), Number(process.argv[3])];
const one = () => new Promise((resolve, reject) => {
  const s = net.connect(port, host);
  let got = '';
  s.setTimeout(20000, () => reject(new Error('no answer')));
  s.on('error', reject);
  s.on('data', (d) => { got += d; if (got.includes('}')) { s.setTimeout(0); resolve(s); } });
  s.write('GET /small HTTP/1.1\\r\\nHost: ' + host + '\\r\\n\\r\\n');
});
(async () => {
  for (let i = 0; i < 200; i++) (await one()).destroy();
  process.send({ warm: true });
  await new Promise((r) => process.once('message', r));
  const kept = [];
  for (let i = 0; i < n; i += 100) kept.push(...(await Promise.all(Array.from({ length: Math.min(100, n - i) }, one))));
  let closed = 0;
  for (const s of kept) s.once('close', () => closed++);
  process.send({ held: kept.length });
  process.on('message', (m) => {
    if (m === 'count') { process.send({ open: kept.length - closed }); return; }
    for (const s of kept) s.destroy();
    process.exit(0);
  });
})().catch((e) => { process.send({ error: String(e) }); process.exit(1); });
`;

async function measure(clients: number, settleS: number, command: string): Promise<IdleRun> {
  const load0 = os.loadavg();
  const readings: IdleReading[] = [];
  for (const nodeFlags of [[], [BOUNDED_YOUNG]]) readings.push(await measureOne(clients, settleS, nodeFlags));
  return { date: new Date().toISOString(), command, machine: machineLines(load0, os.loadavg()), clients, readings };
}

async function measureOne(clients: number, settleS: number, nodeFlags: readonly string[]): Promise<IdleReading> {
  const backendPort = await freePort();
  const proxyPort = await freePort();
  await startBackend(backendPort);
  const proxy = await startThroughway(proxyPort, backendPort, nodeFlags);
  const child = spawn(process.execPath, ['-e', CLIENT, HOST, String(proxyPort), String(clients)], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const next = (): Promise<ClientMessage> => new Promise((resolve) => child.once('message', (m) => resolve(m as ClientMessage)));
  const flags = nodeFlags.length > 0 ? ` (node ${nodeFlags.join(' ')})` : '';
  try {
    const warm = await next();
    if (warm.error !== undefined) throw new Error(`client: ${warm.error}`);
    // The idle node settles too (measured: 65.7 MB 2 s after the warm-up, 60.5 MB from 10 s on): its
    // reading waits as long as the last one with the clients does, so both compare settled nodes.
    log(`warm${flags}: ${fmt(rssMb(proxy.pid), 1)} MB RSS; reading the idle node after ${Math.max(2, settleS)} s`);
    await sleep(Math.max(2, settleS) * 1000);
    const idleRssMb = rssMb(proxy.pid);
    log(`idle${flags}: ${fmt(idleRssMb, 1)} MB RSS; opening ${clients} keep-alive clients`);
    child.send('go');
    const r = await next();
    if (r.error !== undefined) throw new Error(`client: ${r.error}`);
    await sleep(3000);
    const heldRssMb = rssMb(proxy.pid);
    const held = r.held ?? 0;
    log(`${held} idle clients held: ${fmt(heldRssMb, 1)} MB RSS; reading it every 2 s for ${settleS} s while they stay idle`);
    let settledRssMb = heldRssMb;
    for (let waited = 0; waited < settleS; waited += 2) {
      await sleep(2000);
      settledRssMb = rssMb(proxy.pid);
      if ((waited + 2) % 10 === 0) log(`  idle for ${waited + 2} s: ${fmt(settledRssMb, 1)} MB RSS`);
    }
    child.send('count');
    const open = (await next()).open ?? 0;
    if (open !== held) throw new Error(`${held - open} of the idle clients were closed before the last reading (--settle ${settleS})`);
    child.send('bye');
    return { nodeFlags, idleRssMb, heldRssMb, settledRssMb, settleS, held };
  } finally {
    if (child.exitCode === null) child.kill();
    await stopAll();
  }
}

export function renderIdleTable(run: IdleRun): string {
  const rows = run.readings.map((r) => {
    const last = r.settledRssMb ?? r.heldRssMb;
    const above = last - r.idleRssMb;
    const per = (above * 1024) / Math.max(1, r.held);
    const scaled = (per * 10_000) / 1024;
    const node = r.nodeFlags.length === 0 ? "Node's defaults" : `\`${r.nodeFlags.join(' ')}\``;
    const settled = r.settledRssMb === undefined ? '—' : `${fmt(r.settledRssMb, 1)} MB (after ${r.settleS ?? SETTLE_S} s)`;
    return `| ${node} | ${fmt(r.idleRssMb, 1)} MB | ${fmt(r.heldRssMb, 1)} MB (${r.held} clients) | ${settled} | ${fmt(above, 1)} MB | ${fmt(per, 2)} KiB | ${fmt(scaled, 0)} MB | ≤ ${TARGET_MB} MB: ${scaled <= TARGET_MB ? '**met**' : '**not met**'} |`;
  });
  return [
    '| proxy node | idle node RSS | 3 s after the last answer | clients left idle | above idle (idle clients) | per client | for 10,000 clients | target |',
    '|---|---|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}

export function renderIdle(run: IdleRun): string {
  return [
    IDLE_BEGIN,
    '## Idle keep-alive clients: memory',
    '',
    `Run of ${run.date}, produced by \`${run.command}\` (bench/idle.ts): a transport-only throughway (bench/start-throughway.ts, default ` +
      'settings) in front of the bench backend; a separate client process makes 200 warm-up requests, then opens the clients, each of ' +
      "which makes one request and stays connected without sending more. RSS is read from the proxy's /proc/<pid>/status after the " +
      'warm-up (once the node has been idle as long as the clients are left idle below), 3 s after the last client got its answer, ' +
      'and then every 2 s while the clients stay idle; the "clients left idle" column is the last of those readings, and the target ' +
      'is judged on it (runs made before that reading: on the 3-s one, the idle node read 2 s after the warm-up).',
    '',
    ...run.machine,
    '',
    renderIdleTable(run),
    '',
    'Where it goes (`process.memoryUsage()` deltas and heap snapshots of a transport holding 10,000 idle clients, after GC): ' +
      '2.2 KiB of live JavaScript heap per connection (its net.Socket with its stream states, the source connection with its ' +
      'handlers, its parser state; the socket Node accepted is dropped as soon as its handle is re-wrapped, which took 1 KiB more ' +
      'while it was kept) and about 0.4 KiB of native TCP wrapper; idle connections ' +
      'hold no read buffer of their own (they share one, docs/transport.md). The difference between the 3-s reading and the last ' +
      "one is V8's young generation: accepting thousands of connections at once, every object of which survives, makes V8 grow its " +
      'semi-spaces to their maximum (16 MiB each on 64-bit Node 20); it gives them back only once allocation has been quiet for a ' +
      "while (its memory reducer: measured 10 to 30 s after the burst, later with Node's defaults than with the flag). The second " +
      `row bounds them from the start with the V8 flag \`${BOUNDED_YOUNG}\` ` +
      '(`NODE_OPTIONS` or the node command line), for nodes that must not peak while clients arrive. Smaller semi-spaces mean more ' +
      'frequent scavenges; for the transport they cost nothing measurable (interleaved A/B on the 2026-11-26 machine, 8 rounds of ' +
      "4 s of small GETs at 64 connections: CPU per request 1.00× Node's defaults, rounds 0.94-1.04). Throughway does not set the " +
      'flag itself.',
    IDLE_END,
  ].join('\n');
}

/** Raw runs written before the bounded-young reading held one reading in the run itself (`--from`). */
export function withReadings(run: IdleRun): IdleRun {
  if (Array.isArray(run.readings)) return run;
  const old = run as unknown as { idleRssMb: number; heldRssMb: number; held: number };
  return { ...run, readings: [{ nodeFlags: [], idleRssMb: old.idleRssMb, heldRssMb: old.heldRssMb, held: old.held }] };
}

export async function runIdleBench(argv: readonly string[], command: string): Promise<void> {
  let clients = 10_000;
  let settleS = SETTLE_S;
  let write = false;
  let from: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--clients') clients = Number(argv[++i]);
    else if (argv[i] === '--settle') settleS = Number(argv[++i]);
    else if (argv[i] === '--write') write = true;
    else if (argv[i] === '--from') from = argv[++i];
  }
  if (!Number.isInteger(clients) || clients <= 0) throw new Error('--clients needs a positive integer');
  if (!Number.isInteger(settleS) || settleS < 0 || settleS % 2 !== 0)
    throw new Error('--settle needs an even number of seconds, 0 or more');
  const run = withReadings(await rawRun<IdleRun>('idle', 'idle', from, () => measure(clients, settleS, command)));
  process.stdout.write(`\n# idle clients bench — ${run.date}\n\n${renderIdleTable(run)}\n`);
  if (write) writeSection(IDLE_BEGIN, IDLE_END, renderIdle(run), 'idle clients');
}
