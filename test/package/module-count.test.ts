/**
 * What `require('throughway')` loads (docs/performance.md, "Import and start-up"): the transport, the
 * gateway, the configuration loader and the logger. The metrics (prom-client, @opentelemetry/api), YAML,
 * jose, the key manager, the store and the consoles load on first use (lib/index.ts, lib/config/packages.ts).
 * The CommonJS module count is pinned: a new import that pulls a package or a floor in at load time makes
 * this fail; raise the pin only with the reason and the load time measured again in docs/performance.md.
 */
import t from 'tap';
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';

/**
 * Modules in require.cache after the import, measured on this tree with Node 20.20.2: 164, then 172 when
 * the transport's source connection was split into five files (forward, source-ending, source-timeouts,
 * client-writer, listeners), the gateway's plugins and the configuration's process switches came in: the
 * same code in more files, no package added; 175 with lib/errors.ts (the base error class every floor's
 * errors extend), lib/tenants/packages.ts (the billing packages' limits) and lib/config/schema/reasons.ts
 * (the reasons of keys not acted on, shared by the schema's sections): no package added; 177 with
 * lib/gateway/grpc.ts (which call is a gRPC one, for the send phase) and lib/observability/tenant.ts (the
 * tenant of a call, for the access log, analytics and spans): no package added, gRPC's proto reader and
 * sessions and the OTLP encoders load on first use (docs/performance.md, "Load time"); 179 when the
 * throttling phase's view of a call moved to lib/gateway/throttle-call.ts and the user stores' shared types
 * and error to lib/store/identities.ts (the phase adapters thinned, a value circle of store/ split): the
 * same code in more files, no package added; 180 when the source connection's reading of the client's
 * bytes moved to lib/transport/client-reader.ts: the same code in one more file, no package added.
 */
const PINNED_MODULES = 180;
const index = path.join(__dirname, '..', '..', 'lib', 'index.js');

/**
 * The modules script adds to require.cache in a fresh node. Counted from before the script: tap's
 * spawn hook preloads its own modules into child processes.
 */
function loadedBy(script: string): string[] {
  const js = `const before = new Set(Object.keys(require.cache)); ${script}; process.stdout.write(JSON.stringify(Object.keys(require.cache).filter((f) => !before.has(f))))`;
  return JSON.parse(execFileSync(process.execPath, ['-e', js], { encoding: 'utf8' })) as string[];
}

t.test('the import loads at most the pinned number of modules', async (t) => {
  const loaded = loadedBy(`require(${JSON.stringify(index)})`);
  t.ok(
    loaded.some((f) => f.endsWith(`${path.sep}transport${path.sep}source.js`)),
    'the transport is loaded',
  );
  t.ok(
    loaded.some((f) => f.endsWith(`${path.sep}gateway${path.sep}assembly.js`)),
    'the gateway is loaded',
  );
  t.ok(loaded.length <= PINNED_MODULES, `${loaded.length} modules loaded, pinned at ${PINNED_MODULES}`);
  for (const floor of ['keymanager', 'portal', 'store/open.js', 'observability/metrics.js', 'import']) {
    t.strictSame(
      loaded.filter((f) => f.includes(`${path.sep}lib${path.sep}${floor}`)),
      [],
      `lib/${floor} is not loaded at import`,
    );
  }
});

t.test('an export loaded on first use is there when read', async (t) => {
  const loaded = loadedBy(
    `const tw = require(${JSON.stringify(index)}); if (typeof tw.Metrics !== 'function' || typeof tw.createKeyManager !== 'function' || typeof tw.openStore !== 'function') throw new Error('missing export'); new tw.Metrics()`,
  );
  t.ok(
    loaded.some((f) => f.includes(`${path.sep}node_modules${path.sep}prom-client${path.sep}`)),
    'reading Metrics loads prom-client',
  );
  t.ok(
    loaded.some((f) => f.includes(`${path.sep}lib${path.sep}keymanager${path.sep}`)),
    'reading createKeyManager loads the key manager',
  );
});
