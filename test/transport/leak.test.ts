/**
 * No socket or file-descriptor leak: 10,000 requests through one transport, over keep-alive and
 * one-request connections, with about 10% faults mixed in (a refused backend, a backend that answers
 * garbage, a route that does not exist). Afterwards every client socket is closed, the transport holds
 * no source and only idle targets, and the process's open TCP handles return to the baseline once the
 * transport is closed (and equal baseline + 2 per idle pooled connection before that).
 */
import t from 'tap';
import { existsSync, readdirSync } from 'node:fs';
import { closedPort, rawBackend } from '../helpers/backend';
import { RawClient, until } from '../helpers/client';
import { checkTransitions, startTransport } from '../helpers/transport';
import { targetFromUrl } from '../../lib/transport';

const TOTAL = 10_000;
const WORKERS = 25;
const PER_KEEPALIVE_CONNECTION = 20;

function tcpHandles(): number {
  return process.getActiveResourcesInfo().filter((r) => r === 'TCPSocketWrap').length;
}

function openFds(): number {
  return existsSync('/proc/self/fd') ? readdirSync('/proc/self/fd').length : -1;
}

t.test(`${TOTAL} requests with faults mixed in leave no socket behind`, async (t) => {
  const good = await rawBackend({ record: false, onRequest: (c, req) => c.respond(200, req.url) });
  const garbage = await rawBackend({ record: false, onRequest: (c) => c.write('garbage\r\n\r\n') });
  t.teardown(() => good.close());
  t.teardown(() => garbage.close());
  const refused = targetFromUrl(`http://127.0.0.1:${await closedPort()}`);
  const goodTarget = targetFromUrl(good.url);
  const garbageTarget = targetFromUrl(garbage.url);
  const h = await startTransport(t, (req) => {
    if (req.url.startsWith('/ok')) return { target: goodTarget };
    if (req.url.startsWith('/garbage')) return { target: garbageTarget };
    if (req.url.startsWith('/refused')) return { target: refused };
    return undefined; // /missing: 404
  });

  const baselineHandles = tcpHandles();
  const baselineFds = openFds();
  const statuses = new Map<number, number>();
  let next = 0;
  let mismatches = 0;

  const pathFor = (i: number): string => {
    if (i % 10 !== 0) return `/ok/${i}`;
    const kind = (i / 10) % 3;
    return kind === 0 ? `/refused/${i}` : kind === 1 ? `/garbage/${i}` : `/missing/${i}`;
  };
  const expectedStatus = (path: string): number => (path.startsWith('/ok') ? 200 : path.startsWith('/missing') ? 404 : 502);

  const worker = async (w: number): Promise<void> => {
    let round = 0;
    while (next < TOTAL) {
      const keepAlive = (w + round++) % 2 === 0;
      const c = await RawClient.connect(h.port, { record: false });
      const count = keepAlive ? PER_KEEPALIVE_CONNECTION : 1;
      for (let k = 0; k < count && next < TOTAL; k++) {
        const i = next++;
        const path = pathFor(i);
        await c.write(`GET ${path} HTTP/1.1\r\nHost: a\r\n${keepAlive ? '' : 'Connection: close\r\n'}\r\n`);
        const res = await c.finalResponse(10_000, c.responses.length);
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        if (res.status !== expectedStatus(path) || (res.status === 200 && res.body.toString() !== path)) mismatches++;
      }
      if (keepAlive) c.socket.end();
      if (!(await c.waitClose(5000))) c.destroy();
    }
  };
  const started = Date.now();
  await Promise.all(Array.from({ length: WORKERS }, (_, w) => worker(w)));
  t.comment(`${TOTAL} requests in ${Date.now() - started} ms`);

  const faults = TOTAL / 10;
  t.equal(mismatches, 0, 'every response had the expected status and body');
  t.equal(statuses.get(200), TOTAL - faults, '200s');
  t.equal((statuses.get(502) ?? 0) + (statuses.get(404) ?? 0), faults, 'faults: 502 (refused, garbage) and 404');
  t.equal(h.faults.length, faults, 'every fault reported once');
  t.equal(h.transport.stats.requests, TOTAL);

  t.ok(await until(() => h.transport.connections().sources === 0, 5000), 'all client connections closed');
  const conns = h.transport.connections();
  t.equal(conns.sources, 0, 'no source left');
  t.equal(conns.targets, conns.idleTargets, `only idle targets left (${conns.idleTargets})`);
  t.ok(conns.idleTargets <= WORKERS, 'no more idle targets than concurrent requests');
  t.equal(conns.inFlight, 0);
  t.equal(conns.queued, 0);
  t.equal(garbage.open(), 0, 'every garbage connection was closed');
  t.ok(
    await until(() => tcpHandles() === baselineHandles + 2 * conns.idleTargets, 3000),
    `TCP handles: baseline ${baselineHandles} + 2 per idle pooled connection (now ${tcpHandles()})`,
  );

  await h.close();
  t.ok(
    await until(() => tcpHandles() === baselineHandles && good.open() === 0, 3000),
    `after close: TCP socket handles back to the baseline (${tcpHandles()} vs ${baselineHandles})`,
  );
  // The baseline counted the transport's listening socket, closed now.
  if (baselineFds >= 0)
    t.ok(
      await until(() => openFds() <= baselineFds - 1, 3000),
      `file descriptors back to the baseline (${openFds()} vs ${baselineFds} with the listener)`,
    );
  t.equal(h.transport.stats.illegalTransitions, 0);
});

checkTransitions(t);
