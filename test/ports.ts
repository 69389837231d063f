/**
 * Offsets for tests that start whole nodes with `server.offset` (fixed ports, as users run them).
 *
 * Why not any offset: a fixed port inside the kernel's ephemeral range (Linux default 32768-60999,
 * /proc/sys/net/ipv4/ip_local_port_range) can be held at any moment by some process's outgoing connection
 * (to Redis, a database, a test backend), and the node's listen then fails with EADDRINUSE: seen in full
 * runs of the suite. The ports a node opens (base ports 8099..9763 plus the offset) are kept below 32768,
 * and each is checked free (a service such as RabbitMQ's 25672 may listen there) before the offset is used.
 */
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';

/** The base ports a node may open (lib/config/ports.ts LISTENING_PORTS with an `openedBy` or none). */
export const BASES = [8280, 8243, 9099, 8099, 9443, 9763, 9000] as const;
/** Every base + offset stays below the ephemeral range (32768) and above the offsets of the unit tests. */
const LOW = 10_000;
const HIGH = 32_767 - Math.max(...BASES);

/**
 * Ports reserved by test processes: a file per port naming the pid that holds it. Test files run in
 * parallel processes (tap --jobs 2), and each picks its offset before its nodes listen, so "nothing
 * listens there now" does not keep two of them apart: in one CI run two files picked offset 14540
 * (offsets derived from pids 39 apart, with salts 30 and 9), and the second node's listen failed with
 * EADDRINUSE. A port whose file names a live process is not used; a dead process's file is taken over;
 * this process's files are removed when it exits.
 */
export const LOCK_DIR = path.join(os.tmpdir(), 'throughway-test-ports');
const held: string[] = [];
process.once('exit', () => {
  for (const f of held) fs.rmSync(f, { force: true });
});

function alive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Claims one port's file; false when another live process holds it. */
function claim(port: number, mine: string[]): boolean {
  const f = path.join(LOCK_DIR, String(port));
  try {
    fs.writeFileSync(f, String(process.pid), { flag: 'wx' });
  } catch {
    let owner = 0;
    try {
      owner = Number(fs.readFileSync(f, 'utf8'));
    } catch {
      return false;
    }
    if (owner === process.pid) return true;
    if (alive(owner)) return false;
    fs.writeFileSync(f, String(process.pid));
  }
  mine.push(f);
  return true;
}

/** Reserves every port the nodes at offset .. offset + span - 1 open, or none of them. */
export function reserveOffset(offset: number, span: number): boolean {
  fs.mkdirSync(LOCK_DIR, { recursive: true });
  const mine: string[] = [];
  for (let k = 0; k < span; k++) {
    for (const b of BASES) {
      if (!claim(b + offset + k, mine)) {
        for (const f of mine) fs.rmSync(f, { force: true });
        return false;
      }
    }
  }
  held.push(...mine);
  return true;
}

function free(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen({ port, host: '0.0.0.0', exclusive: true }, () => s.close(() => resolve(true)));
  });
}

/**
 * A random offset in [10000, 23004] whose opened ports (and the `span - 1` offsets after it, for tests
 * that start several nodes at offset, offset + 1, ...) are free now.
 */
export async function freeOffset(span = 1): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const offset = LOW + Math.floor(Math.random() * (HIGH - LOW - span));
    let ok = true;
    for (let i = 0; i < span && ok; i++) for (const b of BASES) if (!(await free(b + offset + i))) ok = false;
    if (ok && reserveOffset(offset, span)) return offset;
  }
  throw new Error('no free block of ports below 32768 for a test node');
}

/** Ports something listens on now (Linux /proc/net/tcp and tcp6, state 0A); empty elsewhere. */
export function listeningPorts(): ReadonlySet<number> {
  const out = new Set<number>();
  for (const f of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = fs.readFileSync(f, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols[3] === '0A') out.add(parseInt((cols[1] ?? '').split(':')[1] ?? '', 16));
    }
  }
  return out;
}

/**
 * An offset for `salt`, fixed for the test process (tests that start several nodes at offset, offset + 1,
 * ... up to `span`): below the ephemeral range like freeOffset(), skipping blocks where something listens
 * when it is first asked for.
 */
export function saltedOffset(salt: number, span = 5): number {
  // The same answer for the whole test process: callers compute it again once their nodes listen.
  const key = `${salt}/${span}`;
  const known = chosen.get(key);
  if (known !== undefined) return known;
  const offset = pickOffset(salt, span);
  chosen.set(key, offset);
  return offset;
}

const chosen = new Map<string, number>();

function pickOffset(salt: number, span: number): number {
  const busy = listeningPorts();
  const slots = Math.floor((HIGH - LOW) / span);
  for (let i = 0; i < 50; i++) {
    const offset = LOW + ((process.pid * 7 + salt * 13 + i * 101) % slots) * span;
    let clear = true;
    for (let k = 0; k < span && clear; k++) for (const b of BASES) if (busy.has(b + offset + k)) clear = false;
    if (clear && reserveOffset(offset, span)) return offset;
  }
  return LOW + ((process.pid * 7 + salt * 13) % slots) * span;
}
