/**
 * bench/tenants.ts at a small size (20 tenants of 2 APIs, 300 requests): it starts both gateways, deploys
 * every API, routes a super tenant's and a tenant's call (each 200, or it fails) and prints its figures.
 * The 1,000-tenant run is `npm run bench -- --tenants` (docs/performance.md, "Tenants"), not a test.
 */
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import t from 'tap';

const SCRIPT = path.join(__dirname, '..', '..', 'bench', 'tenants.js');

t.test('the tenants bench at 20 tenants × 2 APIs', async (t) => {
  const out = await new Promise<string>((resolve, reject) =>
    execFile(
      process.execPath,
      [SCRIPT, '--tenant-count', '20', '--apis', '2', '--requests', '300'],
      { timeout: 120_000 },
      (err, stdout, stderr) => (err !== null ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout)),
    ),
  );
  t.match(out, /^ {2}0 tenants × 2 APIs \(\+1 super tenant API\): 1 APIs deployed; .*super tenant [\d.]+ µs\/request; idle/m, out);
  t.match(
    out,
    /^ {2}20 tenants × 2 APIs \(\+1 super tenant API\): 41 APIs deployed; start \d+ ms .* RSS [\d.]+ MiB, heap [\d.]+ MiB after GC; gateway CPU super tenant [\d.]+ µs\/request, tenant [\d.]+ µs\/request; idle [\d.]+ ms CPU\/s$/m,
  );
});
