/**
 * The embedding examples are real programs: each runs (as a user would, requiring the package by its
 * name), prints what its comments promise, and is quoted verbatim in docs/embedding.md.
 */
import t from 'tap';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const root = join(__dirname, '..', '..', '..');

function run(file: string, args: string[] = []): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [...args, file], { cwd: root, timeout: 20_000 }, (err, stdout, stderr) => {
      resolve({ code: err === null ? 0 : ((err as { code?: number }).code ?? 1), stdout, stderr });
    });
  });
}

const EXAMPLES: Record<string, string[]> = {
  'transport-listen.js': ['backend saw GET /hello?x=1'],
  'transport-handle-connection.js': ['backend: /users/7', 'pong', '404 103003'],
  'gateway-inject.js': ['200 pets backend: GET /api/pets/7', '405 103006 GET, HEAD', '103006 gateway', '200, 405'],
  'gateway-handler.js': ['app ok', 'orders backend: /list?page=2', '200', 'chat backend /room: hello'],
  'gateway-phases.js': ['200 pong', '401 990001 Unknown API key', '200 tenant=acme'],
};

const doc = readFileSync(join(root, 'docs', 'embedding.md'), 'utf8');

for (const [file, lines] of Object.entries(EXAMPLES)) {
  t.test(`docs/examples/${file} runs and prints what it promises`, async (t) => {
    const path = join(root, 'docs', 'examples', file);
    const r = await run(path);
    t.equal(r.code, 0, `exit 0 (stderr: ${r.stderr})`);
    t.same(r.stdout.trim().split('\n'), lines);
    t.ok(doc.includes(readFileSync(path, 'utf8')), 'docs/embedding.md quotes the file exactly');
  });
}

t.test('ESM consumers import the package by name', async (t) => {
  const code =
    "import { createTransport, targetFromUrl, createGateway, loadConfig } from 'throughway'; console.log([createTransport, targetFromUrl, createGateway, loadConfig].map((f) => typeof f).join(' '));";
  const r = await new Promise<{ stdout: string; code: number }>((resolve) => {
    execFile(process.execPath, ['--input-type=module', '-e', code], { cwd: root, timeout: 20_000 }, (err, stdout) =>
      resolve({ stdout, code: err === null ? 0 : 1 }),
    );
  });
  t.equal(r.code, 0);
  t.equal(r.stdout.trim(), 'function function function function');
});

t.test('the embedding API is exported, typed, for CommonJS and ESM alike', async (t) => {
  const names = ['createGateway', 'gatewayFault', 'customFault', 'localAnswer', 'PhaseOptionsError', 'PHASES'];
  const cjs = await run(`const m = require('throughway'); console.log(${JSON.stringify(names)}.map((n) => typeof m[n]).join(' '));`, [
    '-e',
  ]);
  t.equal(cjs.stdout.trim(), 'function function function function function object');
  const esm = await run(`import * as m from 'throughway'; console.log(${JSON.stringify(names)}.map((n) => typeof m[n]).join(' '));`, [
    '--input-type=module',
    '-e',
  ]);
  t.equal(esm.stdout.trim(), 'function function function function function object');
  const dts = readFileSync(join(root, 'dist', 'lib', 'embed', 'index.d.ts'), 'utf8');
  for (const m of [
    'handleUpgrade(',
    'inject(options: InjectOptions): Promise<InjectResponse>',
    'on<K extends GatewayEventName>(',
    'readonly handler:',
    'readonly phases?: readonly PhasePlacement[]',
  ])
    t.ok(dts.includes(m), `types: ${m}`);
});

t.test('importing the package starts nothing', async (t) => {
  const probe = (pre: string): Promise<string> =>
    new Promise((resolve) => {
      // stdout and stderr are opened first in both probes: newer Node lines count a stdio pipe as an active
      // resource from its first use (PipeWrap on Node 26), and the logger names stderr at import.
      const code = `process.stdout; process.stderr; ${pre} console.log(JSON.stringify(process.getActiveResourcesInfo().sort()));`;
      execFile(process.execPath, ['-e', code], { cwd: root, timeout: 20_000 }, (_err, stdout) => resolve(stdout.trim()));
    });
  const baseline = await probe('');
  const after = await probe("require('throughway');");
  t.equal(after, baseline, 'the same handles as a bare node process: no timers, sockets or servers');
});
