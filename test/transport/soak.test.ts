/**
 * The suite's soak (the small version of `npm run soak`, bench/soak.ts; docs/performance.md "Reliability
 * (soak)"): about 50,000 requests through the full gateway in a child process, 10% to a backend that
 * faults at every protocol state, 3% aborted by the client, 300 idle keep-alive clients held meanwhile.
 * Asserts no hang (every request answered, faulted with a status, or cut after its head when the backend
 * failed mid-body), no connection closed without a byte of answer, descriptors, client connections and
 * descriptors back to their start level within the pool's growth (bounded by its maximum) and a stated margin, and a normal request still served.
 * No timing assertion. SOAK_TEST_REQUESTS and SOAK_TEST_IDLE change the size. The run also stops issuing
 * after SOAK_TEST_SECONDS (60 s): a quiet 2-core machine issues the 50,000 in about 55 s, a loaded one
 * about 300 a second, and the file must end within tap's per-file timeout (.taprc).
 */
import t from 'tap';
import { existsSync } from 'node:fs';
import { fdCount, formatOutcomes, formatSnapshot, plainGet, runSoak, type Snapshot } from '../../bench/soak-core';

const REQUESTS = Number(process.env.SOAK_TEST_REQUESTS ?? 50_000);
const IDLE = Number(process.env.SOAK_TEST_IDLE ?? 300);
const SECONDS = Number(process.env.SOAK_TEST_SECONDS ?? 60);
/** Fewer requests than this in SECONDS would not be a soak: the run fails rather than pass on too little. */
const AT_LEAST = Math.min(REQUESTS, 1_000);
/**
 * Descriptors the gateway may hold above its start level at the end, beyond the pooled backend connections
 * the pool grew by (it keeps idle ones for reuse, up to its configured maximum): sockets still closing.
 */
const FD_MARGIN = 32;

t.test(
  `soak: ${REQUESTS} requests with faults and aborts, ${IDLE} idle clients held`,
  { skip: existsSync('/proc/self/fd') ? false : 'needs /proc/<pid>/fd to count descriptors', timeout: 600_000 },
  async (t) => {
    const r = await runSoak({
      requests: REQUESTS,
      idle: IDLE,
      seconds: SECONDS,
      concurrency: 32,
      faultShare: 0.1,
      abortShare: 0.03,
      progress: (l) => t.comment(l),
    });
    t.teardown(() => r.stop());
    const [start, , end] = r.snapshots as [Snapshot, Snapshot, Snapshot];
    t.comment(formatOutcomes(r.outcomes));
    for (const s of r.snapshots) t.comment(formatSnapshot(s));

    t.ok(r.issued >= AT_LEAST, `${r.issued} requests issued (${REQUESTS} or what ${SECONDS} s allowed; at least ${AT_LEAST})`);
    t.equal(r.outcomes.get('hang') ?? 0, 0, 'no request passed its deadline');
    t.equal(r.outcomes.get('closed') ?? 0, 0, 'no connection closed without a byte of answer');
    t.equal(r.outcomes.get('connect-error') ?? 0, 0, 'every connection accepted');
    t.ok((r.outcomes.get('502') ?? 0) > 0 && (r.outcomes.get('504') ?? 0) > 0, 'the faults did happen (502 and 504 seen)');
    t.ok((r.outcomes.get('200') ?? 0) > r.issued * 0.8, 'most requests answered 200');

    t.equal(r.idleHeld, IDLE, 'the idle clients are still held');
    const grown = Math.max(0, end.poolOpen - start.poolOpen);
    t.ok(
      end.fds <= start.fds + grown + FD_MARGIN,
      `gateway descriptors ${start.fds} at the start, ${end.fds} at the end (pool grew by ${grown}, margin ${FD_MARGIN})`,
    );
    t.ok(end.sources <= r.idleHeld + 2, `client connections at the end: ${end.sources} for ${r.idleHeld} idle held`);
    t.ok(
      end.poolOpen <= end.poolMax,
      `pool open ${start.poolOpen} at the start, ${end.poolOpen} at the end, within its maximum ${end.poolMax}`,
    );
    t.equal(end.poolWaiting, 0, 'no exchange waiting for a pooled connection');

    // The idle clients leave: the gateway's client connections go to zero and its descriptors with them.
    r.closeIdle();
    let stats = await r.gateway.stats();
    for (let i = 0; i < 100 && stats.connections.sources > 0; i++) {
      await new Promise((res) => setTimeout(res, 100));
      stats = await r.gateway.stats();
    }
    t.equal(stats.connections.sources, 0, 'no client connection left once the clients closed');
    const fdsAfter = fdCount(r.gateway.pid);
    t.ok(
      fdsAfter <= start.fds - IDLE + grown + FD_MARGIN,
      `descriptors ${fdsAfter} after the idle clients left (start ${start.fds} with ${IDLE} idle, pool grew by ${grown}, margin ${FD_MARGIN})`,
    );
    t.equal(await plainGet(r.gateway.port), 200, 'the gateway still serves a normal request');
  },
);
