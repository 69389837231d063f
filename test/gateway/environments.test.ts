/**
 * [[apim.gateway.environment]] as the source of the gateway URLs (spec 000, "Gateway environment";
 * docs/apis.md): the start summary's environment, API and curl lines and its token endpoint, `apis list`
 * (text and JSON), and the key manager's GET /admin/v1/environments, with the reference's runtime tokens
 * (`${http.nio.port}`) filled in with server.offset; with no environment, the listeners of the node.
 */
import t from 'tap';
import * as path from 'node:path';
import { loadConfig } from '../../lib/config/load';
import { formatApiListing, listApis } from '../../lib/gateway/list';
import { confDir } from './helpers';
import { NODE_TOML, startTestNode } from '../observability/node-helpers';
import { ADMIN, http, securedApi } from '../scale/helpers';

const ENVS = `[[apim.gateway.environment]]
name = "Production"
type = "production"
description = "The public gateway"
show_as_token_endpoint_url = true
service_url = "https://localhost:\${mgt.transport.https.port}/services/"
username = "admin"
password = "secret-publisher-pw"
http_endpoint = "http://gw.example.com:\${http.nio.port}"
https_endpoint = "https://gw.example.com:\${https.nio.port}/"
ws_endpoint = "ws://gw.example.com:9099"
[[apim.gateway.environment]]
name = "Internal"
type = "sandbox"
https_endpoint = "https://internal.example.com"
`;

/** A secured API with a plain GET resource, so the summary prints a curl line for it. */
const SHOP = securedApi('http://127.0.0.1:9').replace('path = "/*"', 'path = "/menu"');

const OFFSET = '[server]\nhostname = "localhost"\noffset = 3\n';
const withEnvs = `${NODE_TOML.replace('[server]\nhostname = "localhost"\n', OFFSET)}${ENVS}`;

t.test('start summary: environments, API URLs and the token endpoint from [[apim.gateway.environment]]', async (t) => {
  const n = await startTestNode(withEnvs, { 'shop.toml': SHOP });
  t.teardown(() => n.close());
  const out = n.out.join('\n');
  t.match(
    out,
    /Gateway environment Production \(production\): http:\/\/gw\.example\.com:8283, https:\/\/gw\.example\.com:8246, ws:\/\/gw\.example\.com:9099/,
    'runtime tokens filled in with the offset, the trailing slash dropped',
  );
  t.match(out, /Gateway environment Internal \(sandbox\): https:\/\/internal\.example\.com\n/);
  t.match(out, /Token endpoint on the gateway: https:\/\/gw\.example\.com:8246\/token/);
  t.match(out, /Shop 1\.0\.0 {2}http:\/\/gw\.example\.com:8283\/shop\/1\.0\.0 {2}\(PUBLISHED\)/, 'the API line uses the first environment');
  t.match(
    out,
    /curl -H 'Authorization: Bearer <access token>' http:\/\/gw\.example\.com:8283\/shop\/1\.0\.0\/menu/,
    'and so do the curl lines',
  );
  t.notMatch(out, /http:\/\/localhost:8283\/shop/, 'not the listener address');

  const envs = await http(`http://127.0.0.1:${n.mgmt}/admin/v1/environments`, { auth: ADMIN });
  t.equal(envs.status, 200, envs.text);
  t.same(envs.body.list, [
    {
      name: 'Production',
      type: 'production',
      description: 'The public gateway',
      httpEndpoint: 'http://gw.example.com:8283',
      httpsEndpoint: 'https://gw.example.com:8246',
      wsEndpoint: 'ws://gw.example.com:9099',
      wssEndpoint: null,
      tokenEndpoint: 'https://gw.example.com:8246/token',
      showAsTokenEndpointUrl: true,
      configured: true,
    },
    {
      name: 'Internal',
      type: 'sandbox',
      description: 'This is a hybrid gateway that handles both production and sandbox token traffic.',
      httpEndpoint: null,
      httpsEndpoint: 'https://internal.example.com',
      wsEndpoint: null,
      wssEndpoint: null,
      tokenEndpoint: 'https://internal.example.com/token',
      showAsTokenEndpointUrl: true,
      configured: true,
    },
  ]);
  t.notMatch(envs.text, /secret-publisher-pw/, 'publishing credentials are never reported');
  t.equal((await http(`http://127.0.0.1:${n.mgmt}/admin/v1/environments`)).status, 401, 'super admin only');
});

t.test("no environment: the node's own listeners, as before", async (t) => {
  const n = await startTestNode(NODE_TOML, { 'shop.toml': SHOP });
  t.teardown(() => n.close());
  const out = n.out.join('\n');
  t.notMatch(out, /Gateway environment/);
  t.match(out, /Shop 1\.0\.0 {2}http:\/\/localhost:8280\/shop\/1\.0\.0 {2}\(PUBLISHED\)/);
  t.match(out, /Token endpoint on the gateway: https:\/\/localhost:8243\/token/);
  const envs = await http(`http://127.0.0.1:${n.mgmt}/admin/v1/environments`, { auth: ADMIN });
  t.match(envs.body.list, [
    {
      name: 'Default',
      type: 'hybrid',
      httpEndpoint: 'http://localhost:8280',
      httpsEndpoint: 'https://localhost:8243',
      wsEndpoint: null,
      configured: false,
    },
  ]);
});

t.test("apis list: each deployed API's URLs per configured environment (text and JSON)", async (t) => {
  const dir = confDir(withEnvs, { 'shop.toml': SHOP });
  const loaded = loadConfig({ file: path.join(dir, 'deployment.toml') });
  t.ok(loaded.ok, JSON.stringify(loaded.diagnostics));
  const listing = listApis(loaded);
  const text = formatApiListing(listing, dir, false);
  t.match(text, /\n {4}Production: http:\/\/gw\.example\.com:8283\/shop\/1\.0\.0, https:\/\/gw\.example\.com:8246\/shop\/1\.0\.0\n/);
  t.match(text, /\n {4}Internal: https:\/\/internal\.example\.com\/shop\/1\.0\.0\n/);
  const json = JSON.parse(formatApiListing(listing, dir, true)) as { environments: unknown }[];
  t.same(json[0]?.environments, [
    { name: 'Production', urls: ['http://gw.example.com:8283/shop/1.0.0', 'https://gw.example.com:8246/shop/1.0.0'] },
    { name: 'Internal', urls: ['https://internal.example.com/shop/1.0.0'] },
  ]);

  const plainDir = confDir(NODE_TOML, { 'shop.toml': SHOP });
  const plain = listApis(loadConfig({ file: path.join(plainDir, 'deployment.toml') }));
  const plainText = formatApiListing(plain, plainDir, false);
  t.match(plainText, /Shop 1\.0\.0 {2}\/shop\/1\.0\.0/);
  t.notMatch(plainText, /localhost|example\.com|:8280/, 'no environment: paths only, as before');
  t.notOk('environments' in ((JSON.parse(formatApiListing(plain, plainDir, true)) as object[])[0] ?? {}));
});

t.test('an environment without ws_endpoint or https_endpoint loads (throughway needs neither)', async (t) => {
  const dir = confDir(`${NODE_TOML}[[apim.gateway.environment]]\nname = "Bare"\nhttp_endpoint = "http://bare.example.com"\n`);
  const loaded = loadConfig({ file: path.join(dir, 'deployment.toml') });
  t.ok(loaded.ok, JSON.stringify(loaded.diagnostics.filter((d) => d.level === 'error')));
});
