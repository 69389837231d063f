/**
 * A transport-only throughway for benchmarks: every request goes to one upstream, nothing is logged per
 * request. The EXTRA_CMD of ../shared/peers/run.sh, and what `npm run bench` and bench/profile.ts start.
 *
 *   PORT=8280 UPSTREAM=http://127.0.0.1:8100 [EXTRA_PREFIX=/bench/v1] node dist/bench/start-throughway.js
 *
 * EXTRA_PREFIX, when set, is stripped before forwarding (requests outside it get the transport's "no
 * route" answer). THROUGHWAY_SETTINGS may hold a JSON object of transport settings to override, for
 * experiments. Listens on 127.0.0.1 only. SIGTERM/SIGINT close it (in-flight exchanges get 2 s) and it
 * prints one line of counters (requests, faults by key) to stderr on the way out.
 */
import { createTransport, targetFromUrl, type RouteFn, type TransportSettings } from '../lib/transport';

const port = Number(process.env.PORT ?? 8280);
const upstream = process.env.UPSTREAM ?? 'http://127.0.0.1:8100';
const prefix = (process.env.EXTRA_PREFIX ?? '').replace(/\/+$/, '');
let overrides: Partial<TransportSettings> = {};
if (process.env.THROUGHWAY_SETTINGS) overrides = JSON.parse(process.env.THROUGHWAY_SETTINGS) as Partial<TransportSettings>;

const target = targetFromUrl(upstream);
const forwardAll = Object.freeze({ target });

function makeRoute(): RouteFn {
  if (prefix === '' && target.basePath === '') return () => forwardAll;
  if (prefix === '') return (req) => ({ target, path: target.basePath + req.url });
  return (req) => {
    const url = req.url;
    if (!url.startsWith(prefix)) return undefined;
    const next = url.charCodeAt(prefix.length);
    // "/bench/v1", "/bench/v1/x" and "/bench/v1?q" are inside the prefix; "/bench/v10" is not.
    if (url.length > prefix.length && next !== 0x2f && next !== 0x3f) return undefined;
    let rest = url.slice(prefix.length);
    if (rest === '' || rest.charCodeAt(0) === 0x3f) rest = '/' + rest;
    return { target, path: target.basePath + rest };
  };
}

const transport = createTransport({ route: makeRoute(), settings: { shutdownTimeout: 2000, ...overrides } });

transport
  .listen({ port, host: '127.0.0.1', backlog: 4096 })
  .then((addr) => {
    process.stdout.write(
      `throughway (transport only) on 127.0.0.1:${addr.port} -> ${upstream}${prefix ? ` (strips ${prefix})` : ''} pid=${process.pid}\n`,
    );
  })
  .catch((err: unknown) => {
    process.stderr.write(`start-throughway: cannot listen on 127.0.0.1:${port}: ${String(err)}\n`);
    process.exit(1);
  });

let stopping = false;
function stop(sig: string): void {
  if (stopping) {
    process.exit(0);
  }
  stopping = true;
  // Bounded: exit even if close() waits on a stuck exchange.
  const hard = setTimeout(() => process.exit(0), 4000);
  hard.unref();
  transport.close().then(
    () => {
      const s = transport.stats;
      const faults = [...s.faultsByKey].map(([k, n]) => `${k}=${n}`).join(',') || 'none';
      process.stderr.write(
        `throughway stopped (${sig}): sources=${s.sourcesAccepted} requests=${s.requests} targetsCreated=${s.targetsCreated} ` +
          `reused=${s.targetsReused} retries=${s.retries} faults=${s.faults} [${faults}] illegalTransitions=${s.illegalTransitions}\n`,
      );
      process.exit(0);
    },
    () => process.exit(0),
  );
}
process.on('SIGTERM', () => stop('SIGTERM'));
process.on('SIGINT', () => stop('SIGINT'));
