/**
 * The many-clients bench (bench/clients.ts): the nginx configuration it derives from the peers' tuned one,
 * the ratios and verdict of its table, and its options refused before anything is started.
 */
import t from 'tap';
import { pathWithOnlySh } from '../helpers/path-only-sh';
import * as fs from 'node:fs';
import { procSplit, procTicks } from '../../bench/common';
import {
  BASE_CLIENTS,
  CLIENTS_BEGIN,
  CLIENTS_END,
  nginxConf,
  PEERS_NGINX_CONF,
  tempPaths,
  renderClients,
  renderClientsTable,
  renderSplitTable,
  runClientsBench,
  summarize,
  type ClientsCell,
  type ClientsRun,
} from '../../bench/clients';

const TEMPLATE = [
  'upstream backend {',
  '    server 127.0.0.1:8100;',
  '    keepalive 64;',
  '    keepalive_requests 1000000;',
  '    keepalive_timeout 60s;',
  '}',
  'server {',
  '    listen 127.0.0.1:8207 backlog=4096;',
  '}',
].join('\n');

t.test('the derived nginx configuration changes the listen port, the upstream and its keepalive, nothing else', async (t) => {
  const out = nginxConf(TEMPLATE, 9001, 9002, 1024);
  t.equal(
    out,
    TEMPLATE.replace('127.0.0.1:8100;', '127.0.0.1:9002;')
      .replace('keepalive 64;', 'keepalive 1024;')
      .replace('127.0.0.1:8207 ', '127.0.0.1:9001 '),
  );
  t.match(out, /keepalive_requests 1000000;/, 'keepalive_requests and keepalive_timeout untouched');
  t.throws(
    () => nginxConf(TEMPLATE.replace('    keepalive 64;\n', ''), 1, 2, 3),
    /expected one line "keepalive <n>; \(the upstream\)", found 0/,
    'a missing line is named',
  );
  t.throws(
    () => nginxConf(`${TEMPLATE}\nserver {\n    listen 127.0.0.1:8208;\n}`, 1, 2, 3),
    /expected one line "listen 127\.0\.0\.1:<port>", found 2/,
    'so is a doubled one',
  );
});

t.test(
  "the peers' own nginx-tuned.conf has the three lines",
  { skip: fs.existsSync(PEERS_NGINX_CONF) ? false : `${PEERS_NGINX_CONF} is not beside this checkout` },
  async (t) => {
    const out = nginxConf(fs.readFileSync(PEERS_NGINX_CONF, 'utf8'), 9001, 9002, 1024);
    t.match(out, /^\s*listen\s+127\.0\.0\.1:9001\b/m);
    t.match(out, /^\s*server\s+127\.0\.0\.1:9002;/m);
    t.match(out, /^\s*keepalive\s+1024;/m);
    t.match(out, /worker_processes 1;/, 'still one worker');
    t.same(
      tempPaths(out),
      ['tmp/tuned/body', 'tmp/tuned/proxy', 'tmp/tuned/fastcgi', 'tmp/tuned/uwsgi', 'tmp/tuned/scgi'],
      'its five temporary directories, made before nginx starts',
    );
  },
);

t.test('the temporary directories are read from the configuration, client_body_temp_path included', async (t) => {
  const conf = 'http {\n    client_body_temp_path a/body;\n    proxy_temp_path   a/proxy 1 2;\n    # scgi_temp_path commented/out;\n}\n';
  t.same(tempPaths(conf), ['a/body', 'a/proxy']);
  t.same(tempPaths(TEMPLATE), [], 'none named: none made');
});

/** Kernel parts per cell, in the order of run()'s four series; none given: a run recorded before they were kept. */
type Kernel = [number[], number[], number[], number[]];

function run(tw64: number[], tw1000: number[], ng64: number[], ng1000: number[], kernel?: Kernel): ClientsRun {
  const cells: ClientsCell[] = [];
  let series = 0;
  const add = (proxy: 'throughway' | 'nginx', conns: number, xs: number[]): void => {
    const k = kernel?.[series++];
    // Stored out of round order, as alternate rounds measure the cells in reverse.
    xs.forEach((usPerReq, i) =>
      cells.unshift({
        round: i + 1,
        proxy,
        conns,
        usPerReq,
        ...(k === undefined ? {} : { kernelUsPerReq: k[i] as number }),
        reqPerS: 1000,
        errors: i === 0 && proxy === 'nginx' ? 2 : 0,
      }),
    );
  };
  add('throughway', BASE_CLIENTS, tw64);
  add('throughway', 1000, tw1000);
  add('nginx', BASE_CLIENTS, ng64);
  add('nginx', 1000, ng1000);
  return {
    date: '2026-11-29T00:00:00.000Z',
    command: 'npm run bench -- --many-clients --write',
    machine: ['- CPU: test'],
    clients: 1000,
    rounds: tw64.length,
    durationS: 4,
    nginx: 'nginx/1.22.1',
    cells,
  };
}

t.test('ratios are taken round by round: each proxy against itself, then throughway against nginx', async (t) => {
  const r = run([10, 20, 10], [15, 22, 11], [8, 8, 10], [12, 10, 16]);
  const s = summarize(r);
  t.same(s.growth.throughway, [1.5, 1.1, 1.1]);
  t.same(s.growth.nginx, [1.5, 1.25, 1.6]);
  t.same(s.versusBase, [1.25, 2.5, 1]);
  t.same(s.versusMany, [1.25, 2.2, 0.6875]);
  const rows = renderClientsTable(r).split('\n');
  t.equal(rows[2], '| throughway (transport only) | 10.0 (10.0–20.0) | 15.0 (11.0–22.0) | 1.10× | 1.50, 1.10, 1.10 |');
  t.equal(rows[3], '| nginx-1w-tuned, upstream keepalive 1024 | 8.0 (8.0–10.0) | 12.0 (10.0–16.0) | 1.50× | 1.50, 1.25, 1.60 |');
  t.match(rows[5], /^throughway ÷ nginx in the same round: 1\.25× at 64 connections \(1\.00–2\.50\), 1\.25× at 1,000 \(0\.69–2\.20\)\./);
  t.match(
    rows[5],
    /\(1,000 clients ≤ 1\.2× its 64-client figure\): \*\*met\*\* \(1\.10×\); nginx's own figure in the same rounds: 1\.50×\. wrk socket errors and non-2xx answers: 4\.$/,
    'errors summed over the cells',
  );
  const over = renderClientsTable(run([10, 10, 10], [13, 12.1, 15], [8, 8, 8], [9, 9, 9]));
  t.match(over, /\*\*not met\*\* \(1\.30×\)/, 'over 1.2× is not met');
});

t.test("the split: each proxy's user-space and kernel parts, and its ratio had only the kernel's part grown", async (t) => {
  // throughway: 10 → 15 in all, kernel 6 → 8 (so only the kernel grown: 12 ÷ 10); round 2: 20 → 22, kernel 12 → 16.
  const r = run(
    [10, 20],
    [15, 22],
    [8, 8],
    [12, 10],
    [
      [6, 12],
      [8, 16],
      [5, 5],
      [7, 9],
    ],
  );
  const s = summarize(r);
  t.same(s.kernelAlone.throughway, [1.2, 1.2]);
  t.same(s.kernelAlone.nginx, [1.25, 1.5]);
  const rows = renderSplitTable(r).split('\n');
  t.equal(
    rows[0],
    "| proxy | user space µs/req, 64 → 1,000 conns | kernel µs/req, 64 → 1,000 conns | 1,000 ÷ 64 had only the kernel's part grown | per round |",
  );
  // user space: throughway 4, 8 → 7, 6 (medians 6 → 6.5); kernel 6, 12 → 8, 16 (medians 9 → 12).
  t.equal(rows[2], '| throughway (transport only) | 6.0 → 6.5 (+0.5) | 9.0 → 12.0 (+3.0) | 1.20× | 1.20, 1.20 |');
  // nginx user space 3, 3 → 5, 1 (medians 3 → 3): no growth; a shrinking part shows a minus sign.
  t.equal(rows[3], '| nginx-1w-tuned | 3.0 → 3.0 (+0.0) | 5.0 → 8.0 (+3.0) | 1.38× | 1.25, 1.50 |');
  const shrink = renderSplitTable(run([10], [9], [8], [8], [[5], [4], [4], [4]])).split('\n');
  t.match(shrink[2], /\| 5\.0 → 5\.0 \(\+0\.0\) \| 5\.0 → 4\.0 \(−1\.0\) \| 0\.90× \|/);
  t.match(renderClients(r), /Where the growth goes: .*\n\n\| proxy \| user space µs\/req/, 'the section carries the split');
});

t.test('a run recorded before the kernel part was kept renders as before, without the split', async (t) => {
  const r = run([10], [12], [8], [9]);
  t.equal(renderSplitTable(r), '');
  t.same(summarize(r).kernelAlone, { throughway: [], nginx: [] });
  t.notMatch(renderClients(r), /Where the growth goes/);
});

t.test('procSplit reads user space and kernel ticks that add up to procTicks', async (t) => {
  const before = procSplit('self');
  if (before === undefined) throw new Error('no /proc/self/stat');
  // A busy loop runs in user space: its ticks land in the user part, not the kernel's. It runs until the
  // process has had 5 user-space ticks (at most 20 s of wall time): a fixed 150 ms of wall time got 3 ticks
  // beside other suites on the two shared cores.
  const end = Date.now() + 20_000;
  let x = 0;
  while (Date.now() < end) {
    for (let i = 0; i < 100_000; i++) x += i;
    const now = procSplit('self');
    if (now !== undefined && now.user - before.user >= 5) break;
  }
  void x;
  const a = procSplit('self');
  const all = procTicks('self');
  if (before === undefined || a === undefined || all === undefined) throw new Error('no /proc/self/stat');
  t.ok(a.user - before.user >= 5, `the loop's ticks are user space (${a.user - before.user})`);
  t.ok(a.user - before.user > a.kernel - before.kernel, 'more of them than the kernel took meanwhile');
  t.ok(Math.abs(a.user + a.kernel - all) <= 1, 'the two parts are the whole');
  t.equal(procSplit(2 ** 22 + 12345), undefined, 'a process that is gone has none');
});

t.test('the section keeps its markers and names nginx by its version', async (t) => {
  const s = renderClients(run([10], [12], [8], [9]));
  t.ok(s.startsWith(`${CLIENTS_BEGIN}\n`));
  t.ok(s.endsWith(CLIENTS_END));
  t.match(s, /and nginx 1\.22\.1 \(the peers' nginx-1w-tuned configuration/);
  t.match(s, /\n- CPU: test\n/);
});

t.test('bad options are refused before anything is started', async (t) => {
  await t.rejects(runClientsBench(['--clients', '64'], 'test'), /--clients needs a whole number above 64/);
  await t.rejects(runClientsBench(['--rounds', '0'], 'test'), /--rounds needs a positive whole number/);
  await t.rejects(runClientsBench(['--duration', 'x'], 'test'), /--duration needs a positive whole number of seconds/);
  await t.rejects(runClientsBench(['--connections', '5'], 'test'), /unknown option --connections/);
});

t.test('without wrk or nginx on the PATH it says which is missing and how to get it, before starting anything', async (t) => {
  pathWithOnlySh(t);
  await t.rejects(runClientsBench(['--rounds', '1'], 'test'), /--many-clients needs wrk, not found \(Debian: apt-get install wrk\)/);
});
