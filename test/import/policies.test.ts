/**
 * `throughway import policies`: the reference's exported throttling policies (subscription, application,
 * advanced with a header condition, a custom rule) merged into the policies file, which the gateway then
 * enforces: the advanced policy's header condition group answers 900800 past its limit, counted by a
 * real gateway. A second import changes nothing; a differing policy of
 * the same name needs --force; the file's own comments stay.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import t from 'tap';
import { loadPolicies } from '../../lib/throttle/policies';
import { echoBackend, HOST, request, roomInWindow } from '../gateway/helpers';
import { cli, confDir, fixture, paramsFile, startNode } from './helpers';

t.test('policies imported into the policies file and enforced by the gateway', async (t) => {
  const conf = confDir('[apim.throttling]\nenable_header_based_throttling = true\n');
  const backend = await echoBackend();
  t.teardown(async () => {
    await backend.close();
    conf.close();
  });
  const file = path.join(conf.dir, 'policies.toml');
  fs.writeFileSync(
    file,
    `# our own tiers\n[[subscription]]\nname = "Bronze"\n# kept as written\nrequest_count = 1000\n\n[[api]]\nname = "Unlimited"\nunlimited = true\n\n[[application]]\nname = "Unlimited"\nunlimited = true\n\n[[subscription]]\nname = "Unlimited"\nunlimited = true\n\n[[subscription]]\nname = "Unauthenticated"\nrequest_count = 500\n`,
  );
  const r = await cli(conf, 'import', 'policies', fixture('policies'));
  t.equal(r.code, 0, r.err);
  t.match(r.out, /api policy Api2PerMinHeader from .*Api2PerMinHeader\.yaml:\n\s+new\s+policies\.toml/);
  t.match(
    r.out,
    /subscription policy Gold5PerMin[\s\S]*data\.billingPlan: billing, monetization and per-role permissions of tiers are not kept/,
  );
  const text = fs.readFileSync(file, 'utf8');
  t.match(
    text,
    /^# our own tiers\n\[\[subscription\]\]\nname = "Bronze"\n# kept as written\n/,
    'the file is edited in place: its comments stay',
  );
  const loaded = loadPolicies(file);
  const p = loaded.policies;
  t.ok(p !== undefined, JSON.stringify(loaded.diagnostics));
  t.match(p?.subscription.get('Gold5PerMin')?.quota, { kind: 'requests', limit: 5, windowMs: 60_000 });
  t.match(p?.subscription.get('Gold5PerMin')?.burst, { kind: 'requests', limit: 2, windowMs: 1000 });
  t.match(p?.application.get('App3PerMin')?.quota, { kind: 'requests', limit: 3, windowMs: 60_000 });
  t.same(
    p?.api.get('Api2PerMinHeader')?.groups.map((g) => [g.conditions.map((c) => [c.type, c.name, c.value]), g.quota.limit]),
    [[[['header', 'x-client', 'mobile']], 2]],
  );
  t.same(
    p?.custom.map((c) => [c.name, c.keyTemplate, c.quota.limit, c.quota.windowMs]),
    [['PerUserCustom', '$userId:$apiContext', 100, 60_000]],
  );

  const again = await cli(conf, 'import', 'policies', fixture('policies'));
  t.match(again.out, /nothing to change\n$/);
  t.equal(fs.readFileSync(file, 'utf8'), text, 'a second import leaves the file as it was');

  const changed = path.join(conf.dir, 'App3PerMin.yaml');
  fs.writeFileSync(changed, fs.readFileSync(fixture('policies/App3PerMin.yaml'), 'utf8').replace('requestCount: 3', 'requestCount: 4'));
  const refused = await cli(conf, 'import', 'policies', changed);
  t.equal(refused.code, 1);
  t.match(
    refused.err,
    /policies\.toml:application\.App3PerMin: IMPORT_EXISTS: the application policy "App3PerMin" exists with other values, not replaced without --force; nothing written/,
  );
  t.equal(fs.readFileSync(file, 'utf8'), text, 'nothing written');
  const forced = await cli(conf, 'import', 'policies', changed, '--force');
  t.match(forced.out, /replaced\s+policies\.toml/);
  t.equal(loadPolicies(file).policies?.application.get('App3PerMin')?.quota.limit, 4);

  // The imported tiers act: a subscription on Gold5PerMin, the API on Api2PerMinHeader.
  t.equal(
    (
      await cli(
        conf,
        'import',
        'api',
        fixture('PizzaShackAPI-1.0.0'),
        '--params',
        paramsFile(conf, 'p', `http://${HOST}:${backend.port}/v1`),
      )
    ).code,
    0,
  );
  const apiFile = path.join(conf.apis, 'PizzaShackAPI-1.0.0.toml');
  fs.writeFileSync(apiFile, fs.readFileSync(apiFile, 'utf8').replace('definition = ', 'policy = "Api2PerMinHeader"\ndefinition = '));
  const node = await startNode(conf);
  t.teardown(() => node.close());
  const created = await node.km.manager.createApplication({ name: 'tiers', owner: 'admin' });
  const keys = await node.km.manager.generateKeys(created.id);
  await node.km.manager.addSubscription({ application: created.id, apiContext: '/pizzashack', apiVersion: '1.0.0', tier: 'Gold5PerMin' });
  const tok = (
    await node.km.oauth.token(
      `Basic ${Buffer.from(`${keys.consumerKey}:${keys.consumerSecret}`).toString('base64')}`,
      new URLSearchParams({ grant_type: 'client_credentials' }),
    )
  ).access_token;
  // The counter's window is an epoch-aligned minute: the three calls stay inside one.
  await roomInWindow(10_000);
  const codes: number[] = [];
  for (let i = 0; i < 3; i++) {
    const res = await request(node.port, '/pizzashack/1.0.0/menu', { headers: { Authorization: `Bearer ${tok}`, 'X-Client': 'mobile' } });
    codes.push(res.status === 200 ? 200 : (JSON.parse(res.body) as { fault: { code: number } }).fault.code);
  }
  t.same(
    codes,
    [200, 200, 900800],
    "the advanced policy's header condition group at API level: 2 per minute for X-Client: mobile, then 900800",
  );
});
