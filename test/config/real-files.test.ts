/**
 * The reference's own deployment.toml files (test/fixtures/deployment-toml, copied verbatim from the
 * public product repository) load with zero errors: keys outside the schema are warnings (docs/configuration.md).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import t from 'tap';
import { loadConfig } from '../../lib/config/load';
import { FIXTURES, brief, errors, warnings } from './helpers';

const FILES = fs
  .readdirSync(FIXTURES)
  .filter((f) => f.endsWith('.toml'))
  .sort();

t.test('four real files are present', async (t) => {
  t.equal(FILES.length, 4, FILES.join(', '));
});

for (const name of FILES) {
  t.test(`${name} loads with zero errors`, async (t) => {
    const r = loadConfig({ file: path.join(FIXTURES, name), env: {} });
    t.same(
      errors(r).map((d) => `${d.code} ${d.key} @${d.line}: ${d.message}`),
      [],
      'no errors',
    );
    t.ok(r.ok);
    t.equal(r.config.server.hostname, 'localhost');
    t.equal(r.config.server.server_role, 'default');
    t.equal(r.config.super_admin.create_admin_account, true, 'a TOML boolean in a TRUE/FALSE string key');
    t.equal(r.ports.passthruHttp, 8280);
    for (const w of warnings(r)) {
      t.ok(w.line > 0, `${w.code} ${w.key} names its line`);
      t.match(w.code, /^CONFIG_UNKNOWN_(KEY|SECTION)$/, `${w.key}: only unknown keys and tables warn`);
    }
    t.ok(
      r.diagnostics.every((d) => !d.message.includes('wso2carbon')),
      'no sample credential in messages',
    );
  });

  t.test(`${name} under --strict: its unknown keys become errors`, async (t) => {
    const loose = loadConfig({ file: path.join(FIXTURES, name), env: {} });
    const strict = loadConfig({ file: path.join(FIXTURES, name), env: {}, strict: true });
    t.equal(errors(strict).length, warnings(loose).length, brief(strict).join('\n'));
    t.equal(strict.ok, warnings(loose).length === 0);
  });
}

t.test('the all-in-one file: values as the real file writes them', async (t) => {
  const r = loadConfig({ file: path.join(FIXTURES, '01-product-apim_all-in-one.deployment.toml'), env: {} });
  const env = r.config.apim.gateway.environment[0];
  t.equal(env?.name, 'Default');
  t.equal(env?.display_in_api_console, true);
  t.equal(env?.http_endpoint, 'http://localhost:${http.nio.port}', 'runtime tokens kept');
  t.same(r.config.apim.cors.allow_methods, ['GET', 'PUT', 'POST', 'DELETE', 'PATCH', 'OPTIONS'], 'a TOML array in a comma-list key');
  t.same(r.config.apim.sync_runtime_artifacts.gateway.gateway_labels, ['Default']);
  t.equal(r.config.apim.key_manager.username, 'admin', 'a $ref default resolved against [super_admin]');
  t.ok(r.inactive.includes('apim.ai'), 'a written section throughway does not run is listed as inactive');
  // wss_endpoint is not in the spec's table but the reference's own files write it: a known key, no warning.
  t.equal(
    r.diagnostics.find((d) => d.key === 'apim.gateway.environment[0].wss_endpoint'),
    undefined,
  );
  t.match(env?.wss_endpoint, /^wss:\/\//, 'wss_endpoint loaded from the entry');
  t.equal(
    r.diagnostics.find((d) => d.key.startsWith('keystore.tls')),
    undefined,
    '[keystore.tls] is known',
  );
  // The transports default to the server's TLS key store (spec 001, [transport.passthru_https]).
  const https = r.config.transport.passthru_https;
  t.equal(https.listener.key_store.file_name, path.join(FIXTURES, 'wso2carbon.jks'));
  t.equal(https.sender.key_store.file_name, path.join(FIXTURES, 'wso2carbon.jks'));
  t.equal(https.listener.key_store.type, 'JKS');
  t.match(
    r.diagnostics.find((d) => d.key === 'event_listener[0]'),
    { code: 'CONFIG_UNKNOWN_SECTION', line: 262, message: 'unknown section [[event_listener]]' },
  );
  t.notOk(
    r.diagnostics.some((d) => d.key.startsWith('event_listener[0].properties')),
    'a table inside a reported unknown table is not reported again',
  );
});

t.test('the gateway file: bare numbers in duration keys are in the key unit', async (t) => {
  const r = loadConfig({ file: path.join(FIXTURES, '02-product-apim_universal-gateway.deployment.toml'), env: {} });
  t.equal(r.config.apim.cache.gateway_token.expiry_time, 15 * 60_000, 'expiry_time = 15 (minutes)');
  t.equal(r.config.apim.cache.jwt_claim.expiry_time, 900 * 1000, 'expiry_time = 900 (seconds)');
});
