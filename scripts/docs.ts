/**
 * `npm run docs`: regenerates every generated file from the tables the code runs, in dependency order
 * (the typed configuration and the typed API and policies files first: the later generators read the
 * compiled schema). The staleness tests (test/config/generated.test.ts, test/config/file-types.test.ts,
 * test/unit/*-docs.test.ts, test/gateway/docs.test.ts) fail when a generated file differs from what these
 * write. Not shipped: `files` in package.json names dist/lib only.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

const GENERATORS = [
  'gen-config-types',
  'gen-file-types',
  'gen-config-docs',
  'gen-transport-docs',
  'gen-gateway-docs',
  'gen-migrating',
] as const;

for (const g of GENERATORS) {
  execFileSync(process.execPath, [join(__dirname, `${g}.js`), ...process.argv.slice(2)], { stdio: 'inherit' });
}
