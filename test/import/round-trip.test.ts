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

const PROJECTS = [
  'PizzaShackAPI-1.0.0',
  'PizzaShackAPI-2.0.0',
  'PizzaShackAPI-endpoint-security',
  'SwaggerPetstore-1.0.5',
  'PizzaShackCors-1.0.0',
  'PizzaShackPolicies-1.0.0',
  'PizzaShackScopes-1.0.0',
  'PizzaShackCerts-1.0.0',
  'PizzaShackMtls-1.0.0',
  'ProductsGraphQL-1.0.0',
  'OrderEvents-1.0.0',
];

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
    const exported = parse(fs.readFileSync(path.join(project, 'api.yaml'), 'utf8')) as {
      type: string;
      data: { name: string; version: string };
    };
    t.same(
      [exported.type, exported.data.name, exported.data.version],
      ['api', apiName, version],
      "the reference's format: type api, data with name and version",
    );
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

t.test('endpoint advanced configuration and load balancing: mapped, listed, round-tripped', async (t) => {
  const first = confDir();
  const second = confDir();
  t.teardown(() => {
    first.close();
    second.close();
  });
  const dir = path.join(first.dir, 'PizzaShackAPI-1.0.0');
  fs.cpSync(fixture('PizzaShackAPI-1.0.0'), dir, { recursive: true });
  const api = path.join(dir, 'api.yaml');
  const text = fs.readFileSync(api, 'utf8');
  const ec =
    '  endpointConfig:\n    endpoint_type: load_balance\n    algoClassName: org.apache.synapse.endpoints.algorithms.RoundRobin\n    sandbox_endpoints:\n      url: https://localhost:9443/am/sample/pizzashack/v1/api/\n    production_endpoints:\n     -\n      url: http://10.0.0.1:8080/v1\n      config:\n        actionDuration: "5000"\n        suspendErrorCode: ["101503", "101504"]\n        suspendDuration: "30000"\n        suspendMaxDuration: "60000"\n        factor: "2"\n        retryErroCode: ["101503"]\n        retryTimeOut: "2"\n        retryDelay: "100"\n        actionSelect: fault\n     -\n      url: http://10.0.0.2:8080/v1\n';
  const start = text.indexOf('  endpointConfig:\n');
  const end = text.indexOf('  endpointImplementationType:');
  fs.writeFileSync(api, text.slice(0, start) + ec + text.slice(end));
  const a = await cli(first, 'import', 'api', dir);
  t.equal(a.code, 0, a.err);
  const file = fs.readFileSync(path.join(first.apis, 'PizzaShackAPI-1.0.0.toml'), 'utf8');
  t.match(
    file,
    /\[endpoints\.production\]\nurl = "http:\/\/10\.0\.0\.1:8080\/v1"\ntimeout = 5000\nsuspend_codes = \[101503, 101504\]\nsuspend_duration = 30000\nsuspend_max_duration = 60000\nsuspend_factor = 2\nretry_codes = \[101503\]\nretry_count = 2\n/,
  );
  t.match(
    a.out,
    /data\.endpointConfig\.production_endpoints\[1\]: load balancing over several endpoints: the API file has one endpoint per key type \(the first is kept\)/,
  );
  t.match(a.out, /data\.endpointConfig\.production_endpoints\.config\.retryDelay: the reference's retry delay and timeout action/);
  t.match(a.out, /data\.endpointConfig\.algoClassName: an endpoint setting the API file has no field for/);
  const out = path.join(first.dir, 'exported');
  t.equal((await cli(first, 'export', 'api', 'PizzaShackAPI', '1.0.0', '--out', out)).code, 0);
  t.equal((await cli(second, 'import', 'api', path.join(out, 'PizzaShackAPI-1.0.0'))).code, 0);
  t.same(snapshot(second.apis), snapshot(first.apis));
});
