/**
 * Start-up figures for docs/performance.md ("Import and start-up"): `require('throughway')` timed with
 * process.hrtime around the require in fresh `node -e` processes (median of --runs, with the CPU it used,
 * the modules and packages it loaded), and `npm start` to ready: a copy of conf/ in a temporary directory
 * (the newcomer's first start: store migrations, the sample key pair) with a free server.offset, from the
 * spawn of `npm start` until GET /health/ready answers 200 on the management port. The machine's load
 * average is recorded before and after: on a shared 2-core machine it moves every figure.
 *
 *   npm run -s build && node dist/bench/startup.js [--runs N] [--write]
 */
import { execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { log, median, ROOT, sleep } from './common';
import { writeSection } from './render';

/** Its own section of docs/performance.md; a main run's --write keeps it (bench/run.ts otherSections). */
const STARTUP_BEGIN = '<!-- startup:begin -->';
const STARTUP_END = '<!-- startup:end -->';

/** What one `node -e` prints: wall ms of the require, CPU ms (user + system), modules in require.cache. */
const IMPORT_PROBE =
  'const c=process.cpuUsage();const t=process.hrtime.bigint();require("./dist/lib/index.js");const w=Number(process.hrtime.bigint()-t)/1e6;' +
  'const u=process.cpuUsage(c);const m=Object.keys(require.cache);' +
  'const p=[...new Set(m.map((f)=>/node_modules\\/((?:@[^/]+\\/)?[^/]+)/.exec(f)?.[1]).filter(Boolean))].sort();' +
  'console.log(JSON.stringify({wall:w,cpu:(u.user+u.system)/1000,modules:m.length,packages:p}))';

interface ImportRun {
  readonly wall: number;
  readonly cpu: number;
  readonly modules: number;
  readonly packages: readonly string[];
}

function importRun(): ImportRun {
  return JSON.parse(execFileSync(process.execPath, ['-e', IMPORT_PROBE], { cwd: ROOT, encoding: 'utf8' })) as ImportRun;
}

/** ms from spawn to exit of `node -e ''`: what the machine's load does to any Node process right now. */
function emptyRun(): number {
  const t0 = process.hrtime.bigint();
  execFileSync(process.execPath, ['-e', ''], { cwd: ROOT });
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

function status(port: number, p: string): Promise<number> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: p }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', () => resolve(0));
    req.setTimeout(1000, () => req.destroy());
  });
}

/** Binds and releases `port` on every interface: false when something holds it. */
function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, () => srv.close(() => resolve(true)));
  });
}

/** An offset under which conf/'s ports (8280, 8243, 9763, 9443, 9000) are free, below the ephemeral range. */
async function freeOffset(): Promise<number> {
  for (;;) {
    const offset = 1000 + Math.floor(Math.random() * 20_000);
    const free = await Promise.all([8280, 8243, 9763, 9443, 9000].map((base) => bindable(base + offset)));
    if (free.every(Boolean)) return offset;
  }
}

/** ms from the spawn of `npm start` in a fresh copy of conf/ to the first 200 of GET /health/ready. */
async function startRun(): Promise<number> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-startup-'));
  try {
    fs.cpSync(path.join(ROOT, 'conf'), path.join(dir, 'conf'), { recursive: true });
    const offset = await freeOffset();
    const toml = path.join(dir, 'conf', 'deployment.toml');
    fs.writeFileSync(toml, fs.readFileSync(toml, 'utf8').replace(/^offset = 0\b/m, `offset = ${offset}`));
    // `npm start` of an application that depends on throughway runs its CLI the same way.
    fs.writeFileSync(
      path.join(dir, 'package.json'),
      JSON.stringify({
        name: 'startup',
        private: true,
        scripts: { start: `node ${JSON.stringify(path.join(ROOT, 'dist', 'lib', 'cli.js'))} start` },
      }),
    );
    const t0 = process.hrtime.bigint();
    const child = spawn('npm', ['start', '--silent'], { cwd: dir, stdio: 'ignore', detached: true });
    try {
      const port = 9763 + offset;
      for (;;) {
        if (child.exitCode !== null) throw new Error(`npm start exited with ${child.exitCode}`);
        if ((await status(port, '/health/ready')) === 200) return Number(process.hrtime.bigint() - t0) / 1e6;
        if (Number(process.hrtime.bigint() - t0) > 120e9) throw new Error('not ready within 120 s');
        await sleep(10);
      }
    } finally {
      // npm and the node it started: the whole process group.
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const load = (): string =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' / ');
const ms = (xs: readonly number[]): string =>
  `median ${median([...xs]).toFixed(0)} ms (${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)})`;

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const at = argv.indexOf('--runs');
  const runs = at >= 0 ? Math.max(1, Math.min(20, Number(argv[at + 1]) || 5)) : 5;
  const write = argv.includes('--write');
  const date = new Date().toISOString();
  const load0 = load();
  const imports: ImportRun[] = [];
  const empties: number[] = [];
  for (let i = 0; i < runs; i++) {
    empties.push(emptyRun());
    imports.push(importRun());
    log(`import ${i + 1}/${runs}: ${imports[i]?.wall.toFixed(1)} ms wall, ${imports[i]?.cpu.toFixed(1)} ms CPU`);
  }
  const starts: number[] = [];
  for (let i = 0; i < runs; i++) {
    starts.push(await startRun());
    log(`npm start ${i + 1}/${runs}: ready after ${starts[i]?.toFixed(0)} ms`);
  }
  const load1 = load();
  const last = imports[imports.length - 1] as ImportRun;
  const block = [
    STARTUP_BEGIN,
    '## Import and start-up',
    '',
    `Measured ${date} by \`node dist/bench/startup.js --runs ${runs}${write ? ' --write' : ''}\` (bench/startup.ts), Node ${process.version}, ` +
      `${os.cpus().length} cores shared with other tenants; load average (1/5/15 min) ${load0} at the start, ${load1} at the end.`,
    '',
    `- \`require('throughway')\` (${runs} fresh \`node -e\` processes, process.hrtime around the require): wall ${ms(imports.map((r) => r.wall))}, ` +
      `CPU (user + system) ${ms(imports.map((r) => r.cpu))}; ${last.modules} modules in \`require.cache\`, from the packages ${last.packages.join(', ')}.`,
    `- For scale, at the same load: an empty \`node -e ''\` takes ${ms(empties)} from spawn to exit.`,
    `- \`npm start\` to ready (${runs} first starts in a fresh copy of conf/: store migrations and the sample key pair included; ` +
      `from the spawn of \`npm start\` to the first 200 of \`GET /health/ready\`): ${ms(starts)}.`,
    '',
    'The import loads no database driver, no Redis client, no node-forge, no fast-xml-parser and no piscina: each is required when the ' +
      'feature that needs it starts (lib/config/packages.ts), and `test/package/lazy-packages.test.ts` fails when the import loads one. ' +
      'libsql (the embedded store\'s engine where Node has no `node:sqlite`), pg, mysql2 and ioredis are optionalDependencies; a missing one is `PACKAGE_MISSING` (docs/operations.md, "Start-up errors"). ' +
      'On a loaded machine these figures are upper bounds (the wall time waits for a core; the CPU figure is the steadier one): ' +
      'compare them with the empty `node -e` of the same run, and measure again on an idle machine before reading them against a target. ' +
      'The import alone, by hand:',
    '',
    '```sh',
    `node -e 'const t=process.hrtime.bigint();require("./dist/lib/index.js");console.log(Number(process.hrtime.bigint()-t)/1e6)'`,
    '```',
    STARTUP_END,
  ].join('\n');
  process.stdout.write(`${block}\n`);
  if (write) writeSection(STARTUP_BEGIN, STARTUP_END, block, 'import and start-up');
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
