/**
 * The test suite's port reservations (test/ports.ts): test files run in parallel processes, and a node's
 * fixed ports must not be picked by two of them. A live process's reservation keeps others off its ports;
 * a dead one's is taken over; a failed reservation leaves nothing behind.
 */
import t from 'tap';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { BASES, LOCK_DIR, reserveOffset } from '../ports';

/** The ports a node at `offset` opens. */
const portsAt = (offset: number): number[] => BASES.map((b) => b + offset);
const owner = (port: number): string | undefined => {
  try {
    return fs.readFileSync(path.join(LOCK_DIR, String(port)), 'utf8');
  } catch {
    return undefined;
  }
};

t.test('a live process keeps its ports; a dead one does not; a refusal claims nothing', async (t) => {
  // Below the suite's own offsets (10000 and up): its nodes' lowest port is 8099 + 10000, above every
  // port of this offset, so no test process running beside this one holds them.
  const offset = 1_000 + (process.pid % 200) * 5;
  const live = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
  t.teardown(() => live.kill());
  const dead = spawnSync(process.execPath, ['-e', 'process.exit(0)']).pid ?? 0;
  fs.mkdirSync(LOCK_DIR, { recursive: true });
  const ports = portsAt(offset);
  const last = ports[ports.length - 1] as number;
  for (const p of ports) fs.rmSync(path.join(LOCK_DIR, String(p)), { force: true });

  // The last base's port held by a live process: the whole offset is refused, and the ports claimed
  // before it was met are given back.
  fs.writeFileSync(path.join(LOCK_DIR, String(last)), String(live.pid));
  t.equal(reserveOffset(offset, 1), false, 'refused: another live process holds one of its ports');
  t.same(
    ports.slice(0, -1).map(owner),
    ports.slice(0, -1).map(() => undefined),
    'no port left claimed',
  );
  t.equal(owner(last), String(live.pid), "the holder's reservation stands");

  // The same port held by a process that has exited: taken over.
  fs.writeFileSync(path.join(LOCK_DIR, String(last)), String(dead));
  t.equal(reserveOffset(offset, 1), true, "a dead process's reservation is taken over");
  t.same(
    ports.map(owner),
    ports.map(() => String(process.pid)),
    "every port of the offset is this process's",
  );
  t.equal(reserveOffset(offset, 1), true, 'asking again for its own offset is answered yes');

  // Another process asking for it now is refused.
  const portsJs = JSON.stringify(path.join(__dirname, '..', 'ports.js'));
  const other = spawnSync(process.execPath, ['-e', `process.stdout.write(String(require(${portsJs}).reserveOffset(${offset}, 1)))`], {
    encoding: 'utf8',
  });
  t.equal(other.stdout, 'false', 'another test process is kept off these ports');
});
