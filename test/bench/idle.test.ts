/**
 * The idle-clients bench's table (bench/idle.ts): one row per proxy configuration, Node's defaults and
 * the bounded young generation, each with its own per-client figure and target verdict, judged on the
 * reading taken after the clients stayed idle (older raw runs without it: on the 3-s reading).
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import * as net from 'node:net';
import {
  BOUNDED_YOUNG,
  CLIENT,
  renderIdle,
  renderIdleTable,
  runIdleBench,
  withReadings,
  type ClientMessage,
  type IdleRun,
} from '../../bench/idle';

const defaults = { nodeFlags: [], idleRssMb: 60, heldRssMb: 137.5, settledRssMb: 119.5, settleS: 60, held: 10_000 };
const run: IdleRun = {
  date: '2026-11-26T00:00:00.000Z',
  command: 'npm run bench -- --idle --write',
  machine: ['- CPU: test'],
  clients: 10_000,
  readings: [defaults, { nodeFlags: [BOUNDED_YOUNG], idleRssMb: 64, heldRssMb: 123, settledRssMb: 91, settleS: 40, held: 10_000 }],
};

t.test('one row per reading, each judged on what the idle clients hold against the 60 MB target', async (t) => {
  const rows = renderIdleTable(run).split('\n');
  t.equal(rows.length, 4);
  t.match(
    rows[2],
    /^\| Node's defaults \| 60\.0 MB \| 137\.5 MB \(10000 clients\) \| 119\.5 MB \(after 60 s\) \| 59\.5 MB \| 6\.09 KiB \| 60 MB \| ≤ 60 MB: \*\*met\*\* \|$/,
  );
  t.match(
    rows[3],
    /^\| `--max-semi-space-size=2` \| 64\.0 MB \| 123\.0 MB \(10000 clients\) \| 91\.0 MB \(after 40 s\) \| 27\.0 MB \| 2\.76 KiB \| 27 MB \| ≤ 60 MB: \*\*met\*\* \|$/,
  );
  const over = renderIdleTable({ ...run, readings: [{ ...defaults, settledRssMb: 121 }] }).split('\n');
  t.match(over[2], /\| 61\.0 MB \| 6\.25 KiB \| 61 MB \| ≤ 60 MB: \*\*not met\*\* \|$/, 'over the target once settled');
});

t.test('the section names the flag and keeps its markers', async (t) => {
  const s = renderIdle(run);
  t.match(s, /^<!-- idle:begin -->/);
  t.match(s, /<!-- idle:end -->$/);
  t.match(s, /\n- CPU: test\n/, 'machine lines are list items as machineLines() writes them');
  t.notMatch(s, /^- - /m, 'not doubled');
  t.match(s, /`--max-semi-space-size=2` \(`NODE_OPTIONS`/);
});

t.test('a raw run of the older shape (one reading in the run itself) renders as one row', async (t) => {
  const old = {
    date: run.date,
    command: run.command,
    machine: run.machine,
    clients: 10_000,
    idleRssMb: 60,
    heldRssMb: 133.4,
    held: 10_000,
  } as unknown as IdleRun;
  const rows = renderIdleTable(withReadings(old)).split('\n');
  t.equal(rows.length, 3);
  t.match(
    rows[2],
    /^\| Node's defaults \| 60\.0 MB \| 133\.4 MB \(10000 clients\) \| — \| 73\.4 MB \| 7\.52 KiB \| 73 MB \| ≤ 60 MB: \*\*not met\*\* \|$/,
  );
  t.equal(withReadings(run), run, 'a run of the current shape is kept as it is');
});

t.test('--settle takes an even number of seconds, refused before anything is started', async (t) => {
  for (const bad of ['3', '-2', 'x'])
    await t.rejects(runIdleBench(['--settle', bad], 'test'), /--settle needs an even number of seconds/, `--settle ${bad}`);
});

t.test('the client process counts the clients the proxy closed, so a run can refuse a reading taken after it did', async (t) => {
  const served: net.Socket[] = [];
  const server = net.createServer((sock) => {
    served.push(sock);
    sock.on('data', () => sock.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}'));
    sock.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => server.close());
  const port = (server.address() as net.AddressInfo).port;
  const child = spawn(process.execPath, ['-e', CLIENT, '127.0.0.1', String(port), '5'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  t.teardown(() => {
    if (child.exitCode === null) child.kill();
  });
  const next = (): Promise<ClientMessage> => new Promise((resolve) => child.once('message', (m) => resolve(m as ClientMessage)));
  t.same(await next(), { warm: true }, 'warm-up done');
  const before = served.length;
  child.send('go');
  t.same(await next(), { held: 5 });
  child.send('count');
  t.same(await next(), { open: 5 }, 'all open');
  const kept = served.slice(before);
  t.equal(kept.length, 5, 'the proxy side holds the five clients');
  for (const s of kept.slice(0, 2)) s.destroy();
  let open = 5;
  for (let i = 0; i < 100 && open !== 3; i++) {
    await new Promise((r) => setTimeout(r, 20));
    child.send('count');
    open = (await next()).open ?? -1;
  }
  t.equal(open, 3, 'two closed by the proxy side are no longer counted');
  const exit = new Promise<number | null>((resolve) => child.once('exit', resolve));
  child.send('bye');
  t.equal(await exit, 0, 'any other message ends the client');
});
