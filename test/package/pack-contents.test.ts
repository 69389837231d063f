/**
 * What `npm pack` ships (package.json "files"; docs/embedding.md, "The package"): the compiled library
 * with its declarations, the TypeScript sources its source maps point to (every map's sources are in the
 * package), README, LICENSE and the conf/ starter `throughway init` copies; no tests, fixtures,
 * generators (scripts/), bench or .ci. The declarations use Node's types: @types/node is an optional peer
 * dependency whose range the repository's own @types/node satisfies.
 */
import t from 'tap';
import { execFile, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const root = path.join(__dirname, '..', '..', '..');
const npm = spawnSync('npm', ['--version'], { encoding: 'utf8' });
const skip = npm.status === 0 ? false : 'npm is not on PATH: the package contents cannot be listed';

interface Packed {
  readonly files: readonly { readonly path: string; readonly size: number }[];
  readonly size: number;
  readonly unpackedSize: number;
}

t.test('npm pack --dry-run ships the library, its sources, the docs and the starter, nothing else', { skip }, async (t) => {
  // --ignore-scripts: `prepare` would compile again; dist/ is built already (npm's pretest).
  const r = await run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root, maxBuffer: 64 << 20 });
  const packed = (JSON.parse(r.stdout) as Packed[])[0] as Packed;
  const files = new Set(packed.files.map((f) => f.path));
  t.comment(`${files.size} files, ${packed.size} bytes packed, ${packed.unpackedSize} unpacked`);
  for (const f of [
    'package.json',
    'README.md',
    'LICENSE',
    'dist/lib/index.js',
    'dist/lib/index.d.ts',
    'dist/lib/cli.js',
    'lib/index.ts',
    'conf/deployment.toml',
    'conf/policies.toml',
    'conf/apis/demo.toml',
    'conf/apis/pizzashack-secured.toml',
    'docs/embedding.md',
  ]) {
    t.ok(files.has(f), `${f} is shipped`);
  }
  const forbidden =
    /^(test|bench|scripts|\.ci|dist\/test|dist\/bench|dist\/scripts|node_modules)\/|(^|\/)fixtures\/|\.test\.[jt]s$|^tsconfig|^\.taprc$/;
  t.same(
    [...files].filter((f) => forbidden.test(f)),
    [],
    'no tests, fixtures, generators, bench or CI files',
  );
  const lib = [...files].filter((f) => f.startsWith('dist/lib/') && f.endsWith('.js'));
  t.ok(lib.length > 100, `the compiled library (${lib.length} modules)`);
  for (const js of lib) if (!files.has(js.replace(/\.js$/, '.d.ts'))) t.fail(`${js} has no declaration file`);

  // Each shipped map names sources the package contains: a debugger or --enable-source-maps finds them.
  const maps = [...files].filter((f) => f.endsWith('.map'));
  t.equal(maps.length, lib.length, 'one map per module');
  const missing: string[] = [];
  for (const m of maps) {
    const map = JSON.parse(fs.readFileSync(path.join(root, m), 'utf8')) as { sources: string[]; sourceRoot?: string };
    for (const s of map.sources) {
      const resolved = path.posix.normalize(path.posix.join(path.posix.dirname(m), map.sourceRoot ?? '', s));
      if (!files.has(resolved)) missing.push(`${m} -> ${resolved}`);
    }
  }
  t.same(missing, [], 'every source a map points to is shipped');
  const sources = [...files].filter((f) => f.startsWith('lib/'));
  t.same(
    sources.filter((f) => !f.endsWith('.ts')),
    [],
    'lib/ holds the TypeScript sources only',
  );
});

t.test('@types/node: an optional peer dependency the declarations need', async (t) => {
  const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as Record<string, Record<string, unknown> | undefined>;
  const dts = fs.readFileSync(path.join(root, 'dist', 'lib', 'embed', 'index.d.ts'), 'utf8');
  t.match(dts, /from 'node:(http|net|tls)'/, 'the shipped declarations import Node types');
  t.equal(pkg.dependencies?.['@types/node'], undefined, 'not a dependency: JavaScript users install no types');
  const range = pkg.peerDependencies?.['@types/node'];
  t.equal(range, '>=20', 'a peer dependency with the range of engines.node (>=20.19)');
  t.same(
    pkg.peerDependenciesMeta?.['@types/node'],
    { optional: true },
    'optional: npm installs it for nobody, checks the version of whoever has it',
  );
  const dev = String(pkg.devDependencies?.['@types/node']);
  t.ok(Number(dev.split('.')[0]) >= 20, `the repository's own @types/node ${dev} is in the range`);
  const lock = JSON.parse(fs.readFileSync(path.join(root, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, Record<string, unknown>>;
  };
  t.same(lock.packages['']?.peerDependencies, pkg.peerDependencies, 'package-lock.json says the same (npm ci checks it)');
});
