/**
 * The idle-clients bench's table (bench/idle.ts): one row per proxy configuration, Node's defaults and
 * the bounded young generation, each with its own per-client figure and target verdict.
 */
import t from 'tap';
import { BOUNDED_YOUNG, renderIdle, renderIdleTable, withReadings, type IdleRun } from '../../bench/idle';

const run: IdleRun = {
  date: '2026-11-26T00:00:00.000Z',
  command: 'npm run bench -- --idle --write',
  machine: ['CPU: test'],
  clients: 10_000,
  readings: [
    { nodeFlags: [], idleRssMb: 60, heldRssMb: 137.5, held: 10_000 },
    { nodeFlags: [BOUNDED_YOUNG], idleRssMb: 64, heldRssMb: 123, held: 10_000 },
  ],
};

t.test('one row per reading, each judged against the 60 MB target', async (t) => {
  const rows = renderIdleTable(run).split('\n');
  t.equal(rows.length, 4);
  t.match(rows[2], /^\| Node's defaults \| 60\.0 MB \| 137\.5 MB \(10000 clients\) \| 77\.5 MB \| 7\.94 KiB \| 78 MB \| ≤ 60 MB: \*\*not met\*\* \|$/);
  t.match(rows[3], /^\| `--max-semi-space-size=2` \| 64\.0 MB \| 123\.0 MB \(10000 clients\) \| 59\.0 MB \| 6\.04 KiB \| 59 MB \| ≤ 60 MB: \*\*met\*\* \|$/);
});

t.test('the section names the flag and keeps its markers', async (t) => {
  const s = renderIdle(run);
  t.match(s, /^<!-- idle:begin -->/);
  t.match(s, /<!-- idle:end -->$/);
  t.match(s, /`--max-semi-space-size=2` \(`NODE_OPTIONS`/);
});

t.test('a raw run of the older shape (one reading in the run itself) renders as one row', async (t) => {
  const old = { date: run.date, command: run.command, machine: run.machine, clients: 10_000, idleRssMb: 60, heldRssMb: 133.4, held: 10_000 } as unknown as IdleRun;
  const rows = renderIdleTable(withReadings(old)).split('\n');
  t.equal(rows.length, 3);
  t.match(rows[2], /^\| Node's defaults \| 60\.0 MB \| 133\.4 MB \(10000 clients\) \| 73\.4 MB \|/);
  t.equal(withReadings(run), run, 'a run of the current shape is kept as it is');
});
