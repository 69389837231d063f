/**
 * `export api` writes the reference's project format back, so a project round-trips: import, export,
 * import into an empty apis/ gives the same API file and the same files beside it, for every fixture
 * that imports; the export as a zip reads back the same way.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import t from 'tap';
import { parse } from 'yaml';
import { cli, confDir, fixture, snapshot } from './helpers';

const PROJECTS = ['PizzaShackAPI-1.0.0', 'PizzaShackAPI-2.0.0', 'PizzaShackAPI-endpoint-security', 'SwaggerPetstore-1.0.5', 'PizzaShackCors-1.0.0', 'PizzaShackPolicies-1.0.0', 'PizzaShackScopes-1.0.0', 'PizzaShackCerts-1.0.0', 'PizzaShackMtls-1.0.0', 'ProductsGraphQL-1.0.0', 'OrderEvents-1.0.0'];

for (const name of PROJECTS) {
  t.test(`${name}: import -> export -> import gives the same API file`, async (t) => {
    const first = confDir();
    const second = confDir();
    t.teardown(() => {
      first.close();
      second.close();
    });
    const a = await cli(first, 'import', 'api', fixture(name));
    t.equal(a.code, 0, a.err);
    const toml = fs.readdirSync(first.apis).find((f) => f.endsWith('.toml')) as string;
    const doc = fs.readFileSync(path.join(first.apis, toml), 'utf8');
    const apiName = /^name = "(.*)"$/m.exec(doc)?.[1] as string;
    const version = /^version = "(.*)"$/m.exec(doc)?.[1] as string;
    const out = path.join(first.dir, 'exported');
    const e = await cli(first, 'export', 'api', apiName, version, '--out', out);
    t.equal(e.code, 0, e.err);
    const project = path.join(out, toml.replace(/\.toml$/, ''));
    t.ok(fs.existsSync(path.join(project, 'api.yaml')), 'api.yaml written');
    const exported = parse(fs.readFileSync(path.join(project, 'api.yaml'), 'utf8')) as { type: string; data: { name: string; version: string } };
    t.same([exported.type, exported.data.name, exported.data.version], ['api', apiName, version], 'the reference\'s format: type api, data with name and version');
    const b = await cli(second, 'import', 'api', project);
    t.equal(b.code, 0, b.err);
    t.same(snapshot(second.apis), snapshot(first.apis), 'the same API file, definition and certificates');
    const again = await cli(first, 'export', 'api', apiName, version, '--out', out);
    t.match(again.out, /nothing to change\n$/, 'a second export writes nothing');
  });
}

t.test('export --zip: a zip of the project that imports to the same API file', async (t) => {
  const first = confDir();
  const second = confDir();
  t.teardown(() => {
    first.close();
    second.close();
  });
  t.equal((await cli(first, 'import', 'api', fixture('PizzaShackScopes-1.0.0'))).code, 0);
  const e = await cli(first, 'export', 'api', 'PizzaShackScopes', '1.0.0', '--zip', '--out', first.dir);
  t.equal(e.code, 0, e.err);
  const zip = path.join(first.dir, 'PizzaShackScopes-1.0.0.zip');
  t.ok(fs.existsSync(zip));
  const b = await cli(second, 'import', 'api', zip);
  t.equal(b.code, 0, b.err);
  t.same(snapshot(second.apis), snapshot(first.apis));
});

t.test('export of an API that is not there: IMPORT_NOT_FOUND', async (t) => {
  const conf = confDir();
  t.teardown(() => conf.close());
  const r = await cli(conf, 'export', 'api', 'Nope', '1.0.0');
  t.equal(r.code, 1);
  t.match(r.err, /apis: IMPORT_NOT_FOUND: no API file with name "Nope" and version "1\.0\.0"/);
});
