/**
 * `throughway import app`: the exported application's subscriptions resolved to API files of apis/
 * (an API not imported yet is an error naming the subscription), --dry-run writing nothing to the store,
 * a differing application refused without --force and replaced with it, the secret kept as its digest.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import t from 'tap';
import { loadConfig } from '../../lib/config/load';
import { digest } from '../../lib/store/passwords';
import { openStore } from '../../lib/store/open';
import { cli, confDir, fixture } from './helpers';

const APIS = [
  'PizzaShackAPI-1.0.0',
  'PizzaShackAPI-2.0.0',
  'PizzaShackScopes-1.0.0',
  'SwaggerPetstore-1.0.5',
  'PizzaShackCors-1.0.0',
  'PizzaShackPolicies-1.0.0',
  'PizzaShackCerts-1.0.0',
  'ProductsGraphQL-1.0.0',
  'OrderEvents-1.0.0',
];

t.test('import app: subscriptions need their APIs, dry run, --force, secrets as digests', async (t) => {
  const conf = confDir();
  t.teardown(() => conf.close());
  const first = await cli(conf, 'import', 'app', fixture('admin_MigratedApp'));
  t.equal(first.code, 1);
  t.match(
    first.err,
    /MigratedApp\.yaml:data\.subscribedAPIs\[0\]\.apiId: IMPORT_FIELD: no API file PizzaShackAPI 1\.0\.0 in .*apis: import the API first/,
  );
  for (const a of APIS) t.equal((await cli(conf, 'import', 'api', fixture(a))).code, 0, a);

  const loaded = loadConfig({ file: conf.file });
  const inStore = async <T>(fn: (s: Awaited<ReturnType<typeof openStore>>) => Promise<T>): Promise<T> => {
    const s = await openStore(loaded.config, conf.dir);
    try {
      return await fn(s);
    } finally {
      await s.close();
    }
  };
  const dry = await cli(conf, 'import', 'app', fixture('admin_MigratedApp'), '--dry-run');
  t.equal(dry.code, 0, dry.err);
  t.match(dry.out, /would be new\s+application MigratedApp of admin[\s\S]*dry run: nothing written/);
  t.equal(await inStore((s) => s.findApplication('MigratedApp', 'admin')), undefined, 'the dry run wrote nothing');

  t.equal((await cli(conf, 'import', 'app', fixture('admin_MigratedApp'))).code, 0);
  const stored = await inStore(async (s) => {
    const app = await s.findApplication('MigratedApp', 'admin');
    return {
      app,
      clients: app === undefined ? [] : await s.listClients(app.id),
      subs: app === undefined ? [] : await s.listSubscriptions({ applicationId: app.id }),
    };
  });
  t.same([stored.app?.tier, stored.app?.description], ['50PerMin', 'An application moved from the reference']);
  t.same(
    stored.clients.map((c) => [c.keyType, c.consumerKey, c.grantTypes]),
    [['PRODUCTION', 'migratedAppProductionKey00001', ['client_credentials', 'password', 'refresh_token']]],
    'the sandbox keys came without a secret: not written',
  );
  t.equal(stored.clients[0]?.secretHash, digest('migratedAppProductionSecret-0123456789abcdef'), 'the secret is kept as its digest');
  t.same(stored.subs.map((s) => `${s.apiContext} ${s.apiVersion} ${s.tier}`).sort(), [
    '/orderevents 1.0.0 Unlimited',
    '/pizzashack 1.0.0 Unlimited',
    '/pizzashack 2.0.0 Gold',
    '/pizzashack-certs 1.0.0 Unlimited',
    '/pizzashack-cors 1.0.0 Unlimited',
    '/pizzashack-policies 1.0.0 Unlimited',
    '/pizzashack-scopes 1.0.0 Unlimited',
    '/products 1.0.0 Unlimited',
    '/v2 1.0.5 Unlimited',
  ]);

  const changedDir = path.join(conf.dir, 'changed');
  fs.cpSync(fixture('admin_MigratedApp'), changedDir, { recursive: true });
  const f = path.join(changedDir, 'MigratedApp.yaml');
  fs.writeFileSync(f, fs.readFileSync(f, 'utf8').replace('throttlingPolicy: 50PerMin', 'throttlingPolicy: 20PerMin'));
  const refused = await cli(conf, 'import', 'app', changedDir);
  t.equal(refused.code, 1);
  t.match(
    refused.err,
    /application MigratedApp: IMPORT_EXISTS: exists in the store with other values \(application MigratedApp \(tier or description\)\), not replaced without --force; nothing written/,
  );
  t.equal((await inStore((s) => s.findApplication('MigratedApp', 'admin')))?.tier, '50PerMin', 'unchanged');
  const forced = await cli(conf, 'import', 'app', changedDir, '--force');
  t.match(forced.out, /replaced\s+application MigratedApp of admin/);
  t.equal((await inStore((s) => s.findApplication('MigratedApp', 'admin')))?.tier, '20PerMin');
});

t.test('a consumer key of another application: IMPORT_STORE, nothing written', async (t) => {
  const conf = confDir();
  t.teardown(() => conf.close());
  for (const a of APIS) t.equal((await cli(conf, 'import', 'api', fixture(a))).code, 0, a);
  const s = await openStore(loadConfig({ file: conf.file }).config, conf.dir);
  const other = await s.createApplication({ name: 'other', owner: 'admin', tier: 'Unlimited', description: '' });
  await s.createClient({
    consumerKey: 'migratedAppProductionKey00001',
    secretHash: digest('x'),
    applicationId: other.id,
    keyType: 'PRODUCTION',
    grantTypes: ['client_credentials'],
    callbackUrl: '',
  });
  await s.close();
  const r = await cli(conf, 'import', 'app', fixture('admin_MigratedApp'));
  t.equal(r.code, 1);
  t.match(r.err, /client migratedAppProductionKey00001: IMPORT_STORE: the consumer key belongs to another application/);
  const s2 = await openStore(loadConfig({ file: conf.file }).config, conf.dir);
  t.equal(await s2.findApplication('MigratedApp', 'admin'), undefined, 'nothing written');
  await s2.close();
});
