/**
 * Bad input to `throughway import`: zips with `..` or absolute names, zip bombs (ratio, entries, declared
 * bytes), entries whose bytes do not match their headers, a project without its definition, malformed
 * YAML, a streaming type, a directory that is no project. Each is an IMPORT_* code naming the path, exit
 * status 1, and nothing written.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import t, { type Test } from 'tap';
import { writeZip, ZIP_LIMITS } from '../../lib/import/zip';
import { cli, confDir, fixture, snapshot, type Conf } from './helpers';

/** The fixture's files as zip entries under `top/`. */
function projectEntries(name: string, top = name): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  const walk = (dir: string, rel: string): void => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const r = `${rel}/${e.name}`;
      if (e.isDirectory()) walk(path.join(dir, e.name), r);
      else out.set(r.slice(1), fs.readFileSync(path.join(dir, e.name)));
    }
  };
  walk(fixture(name), '');
  return new Map([...out].map(([n, b]) => [`${top}/${n}`, b]));
}

async function refused(t: Test, conf: Conf, source: string, pattern: RegExp): Promise<void> {
  const r = await cli(conf, 'import', 'api', source);
  t.equal(r.code, 1, 'exit status 1');
  t.match(r.err, pattern);
  t.same(snapshot(conf.apis), {}, 'nothing written');
}

t.test('a zip of a real project imports (the reader works)', async (t) => {
  const conf = confDir();
  t.teardown(() => conf.close());
  const zip = path.join(conf.dir, 'p.zip');
  fs.writeFileSync(zip, writeZip(projectEntries('PizzaShackAPI-1.0.0')));
  const r = await cli(conf, 'import', 'api', zip);
  t.equal(r.code, 0, r.err);
  t.same(Object.keys(snapshot(conf.apis)).sort(), ['PizzaShackAPI-1.0.0.toml', 'PizzaShackAPI-1.0.0/openapi.yaml']);
});

t.test('zip entries named .. or absolute are refused', async (t) => {
  const conf = confDir();
  t.teardown(() => conf.close());
  for (const [label, bad] of [
    ['dot-dot', 'PizzaShackAPI-1.0.0/../../evil.yaml'],
    ['absolute', '/etc/throughway-evil'],
    ['drive letter', 'C:/evil'],
    ['backslash', 'PizzaShackAPI-1.0.0\\..\\evil'],
  ] as const) {
    const entries = projectEntries('PizzaShackAPI-1.0.0');
    entries.set(bad, Buffer.from('x'));
    const zip = path.join(conf.dir, `${label}.zip`);
    fs.writeFileSync(zip, writeZip(entries));
    await refused(
      t,
      conf,
      zip,
      new RegExp(`${label}\\.zip!${bad.replace(/[\\.*?^$()[\]|/]/g, '\\$&')}: IMPORT_ZIP_PATH: the entry name leaves the project`),
    );
  }
});

t.test('zip bombs: ratio, entries and declared bytes are bounded before inflating', async (t) => {
  const conf = confDir();
  t.teardown(() => conf.close());
  const ratio = projectEntries('PizzaShackAPI-1.0.0');
  ratio.set('PizzaShackAPI-1.0.0/Docs/zeros.txt', Buffer.alloc(4 * 1024 * 1024));
  fs.writeFileSync(path.join(conf.dir, 'ratio.zip'), writeZip(ratio));
  await refused(
    t,
    conf,
    path.join(conf.dir, 'ratio.zip'),
    /ratio\.zip!PizzaShackAPI-1\.0\.0\/Docs\/zeros\.txt: IMPORT_ZIP_RATIO: 4194304 bytes from \d+: more than 100 times its compressed size/,
  );

  const many = new Map<string, Buffer>();
  for (let i = 0; i <= ZIP_LIMITS.maxEntries; i++) many.set(`p/f${i}.txt`, Buffer.from(String(i)));
  fs.writeFileSync(path.join(conf.dir, 'many.zip'), writeZip(many));
  await refused(t, conf, path.join(conf.dir, 'many.zip'), /many\.zip: IMPORT_LIMIT: 2001 entries, more than 2000/);

  // One entry whose central header declares 100 MiB: refused on the declaration, nothing inflated.
  const big = writeZip(new Map([['p/api.yaml', Buffer.from('type: api\n')]]));
  const cd = big.readUInt32LE(big.length - 22 + 16);
  big.writeUInt32LE(100 * 1024 * 1024, cd + 24);
  fs.writeFileSync(path.join(conf.dir, 'declared.zip'), big);
  await refused(
    t,
    conf,
    path.join(conf.dir, 'declared.zip'),
    /declared\.zip!p\/api\.yaml: IMPORT_LIMIT: the entries declare more than 67108864 bytes in all/,
  );

  // An entry that holds more than it declares: the inflater stops at the declared size.
  const liar = writeZip(new Map([['p/api.yaml', Buffer.alloc(50_000, 0x61)]]));
  const cd2 = liar.readUInt32LE(liar.length - 22 + 16);
  liar.writeUInt32LE(10, cd2 + 24);
  fs.writeFileSync(path.join(conf.dir, 'liar.zip'), liar);
  await refused(
    t,
    conf,
    path.join(conf.dir, 'liar.zip'),
    /liar\.zip!p\/api\.yaml: IMPORT_ZIP_FORMAT: it does not inflate to its declared 10 bytes/,
  );

  fs.writeFileSync(path.join(conf.dir, 'not.zip'), 'not a zip at all');
  await refused(t, conf, path.join(conf.dir, 'not.zip'), /not\.zip: IMPORT_ZIP_FORMAT: no end of central directory record/);
});

t.test('a project without its definition, malformed YAML, a streaming type, no project', async (t) => {
  const conf = confDir();
  t.teardown(() => conf.close());
  await refused(
    t,
    conf,
    fixture('PizzaShackNoDefinition-1.0.0'),
    /PizzaShackNoDefinition-1\.0\.0\/Definitions\/swagger\.yaml: IMPORT_DEFINITION: a REST project needs its OpenAPI or Swagger document/,
  );
  await refused(t, conf, fixture('PizzaShackMalformed-1.0.0'), /PizzaShackMalformed-1\.0\.0\/api\.yaml:9: IMPORT_YAML: /);
  await refused(
    t,
    conf,
    fixture('Streetlights-1.0.0'),
    /Streetlights-1\.0\.0\/api\.yaml:data\.type: IMPORT_UNSUPPORTED_TYPE: type SSE: Server-Sent Events \(an AsyncAPI streaming API\) are not served by throughway/,
  );
  const empty = path.join(conf.dir, 'empty');
  fs.mkdirSync(path.join(empty, 'Docs'), { recursive: true });
  fs.writeFileSync(path.join(empty, 'Docs', 'docs.json'), '{}');
  await refused(t, conf, empty, /empty: IMPORT_NOT_PROJECT: no api\.yaml or api\.json/);
  await refused(t, conf, path.join(conf.dir, 'missing'), /missing: IMPORT_IO: ENOENT/);
});

t.test('import apis: one bad project refuses the whole directory, nothing written', async (t) => {
  const conf = confDir();
  t.teardown(() => conf.close());
  const dir = path.join(conf.dir, 'projects');
  fs.mkdirSync(dir);
  fs.cpSync(fixture('PizzaShackAPI-1.0.0'), path.join(dir, 'PizzaShackAPI-1.0.0'), { recursive: true });
  fs.cpSync(fixture('PizzaShackMalformed-1.0.0'), path.join(dir, 'PizzaShackMalformed-1.0.0'), { recursive: true });
  const r = await cli(conf, 'import', 'apis', dir);
  t.equal(r.code, 1);
  t.match(r.err, /PizzaShackMalformed-1\.0\.0\/api\.yaml:9: IMPORT_YAML/);
  t.same(snapshot(conf.apis), {}, 'the good project is not written either');
  fs.rmSync(path.join(dir, 'PizzaShackMalformed-1.0.0'), { recursive: true });
  fs.cpSync(fixture('PizzaShackAPI-2.0.0'), path.join(dir, 'PizzaShackAPI-2.0.0'), { recursive: true });
  const ok = await cli(conf, 'import', 'apis', dir);
  t.equal(ok.code, 0, ok.err);
  t.same(
    Object.keys(snapshot(conf.apis))
      .filter((f) => f.endsWith('.toml'))
      .sort(),
    ['PizzaShackAPI-1.0.0.toml', 'PizzaShackAPI-2.0.0.toml'],
    'versions of one API become API files of one name',
  );
});

t.test('usage errors exit 2', async (t) => {
  const conf = confDir();
  t.teardown(() => conf.close());
  const r = await cli(conf, 'import', 'api');
  t.equal(r.code, 2);
  t.match(r.err, /unknown command: import api/);
  t.equal((await cli(conf, 'import', 'api', 'x', '--nope')).code, 2);
});

t.test('an API file the gateway would refuse: IMPORT_INVALID_API with its diagnostics', async (t) => {
  const conf = confDir();
  t.teardown(() => conf.close());
  const dir = path.join(conf.dir, 'PizzaShackAPI-1.0.0');
  fs.cpSync(fixture('PizzaShackAPI-1.0.0'), dir, { recursive: true });
  const api = path.join(dir, 'api.yaml');
  fs.writeFileSync(api, fs.readFileSync(api, 'utf8').replace('  policies:\n', '  apiThrottlingPolicy: NoSuchPolicy\n  policies:\n'));
  await refused(
    t,
    conf,
    dir,
    /PizzaShackAPI-1\.0\.0: IMPORT_INVALID_API: the API file would not deploy: PizzaShackAPI-1\.0\.0\.toml:\d+(:\d+)?: error API_\w+ policy: .*NoSuchPolicy/,
  );
});
