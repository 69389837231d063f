/**
 * Errors that stop a start carry a stable `code` (docs/operations.md, "Start-up errors"): each class is
 * made to throw, or built, and its code checked. That every code of lib/ is on that page is
 * test/unit/error-codes.test.ts's (read with the TypeScript checker).
 */
import t from 'tap';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createGateway, customFault, GatewayOptionsError, Health, loadConfig, PhaseOptionsError, ThrottleConfigError } from '../../lib';
import { ConfigInvalidError } from '../../lib/config/diagnostics';
import { createLogger } from '../../lib/log';
import { createThrottle } from '../../lib/throttle';
import { throttleSettingsFrom } from '../../lib/throttle/settings';
import { CorsConfigError } from '../../lib/gateway/cors';
import { FormatConfigError } from '../../lib/mediation/formats';
import { TlsConfigError } from '../../lib/tls/settings';
import { readKeyStore, TlsStoreError } from '../../lib/tls/keystore';
import { KeyRingError } from '../../lib/keymanager/keys';
import { StoreError } from '../../lib/store/types';
import { LlhttpLoadError } from '../../lib/transport/llhttp-wasm';
import { RoleNotBuiltError, startNode } from '../../lib/node';
import { HealthError } from '../../lib/observability/health';
import { ControlPlaneError } from '../../lib/scale/control-plane';
import { PortalRemoteError } from '../../lib/portal/backend';

/** Runs fn and returns what it threw (or rejected with). */
async function thrown(fn: () => unknown): Promise<unknown> {
  try {
    await fn();
  } catch (err) {
    return err;
  }
  return undefined;
}

t.test('each start-up error thrown where it happens carries its code', async (t) => {
  const broken = loadConfig({ text: '[server]\noffset = "many"\n', env: {} });
  t.notOk(broken.ok, 'a configuration with an error');
  const e1 = await thrown(() => startNode(broken, { log: () => undefined }));
  t.ok(e1 instanceof ConfigInvalidError, 'startNode refuses it');
  t.equal((e1 as ConfigInvalidError).code, 'CONFIG_INVALID');

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-startup-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'deployment.toml');
  fs.writeFileSync(file, '[server]\noffset = "many"\n');
  const e2 = await thrown(() => createGateway({ configFile: file }));
  t.ok(e2 instanceof GatewayOptionsError, 'createGateway refuses an invalid deployment.toml');
  t.equal((e2 as GatewayOptionsError).code, 'GATEWAY_OPTIONS');

  const e3 = await thrown(() => customFault({ code: 990001, status: 200, message: 'not an error status' }));
  t.ok(e3 instanceof PhaseOptionsError);
  t.equal((e3 as PhaseOptionsError).code, 'GATEWAY_PHASES');

  const settings = throttleSettingsFrom(loadConfig({ text: '', env: {} }).config, dir);
  const e4 = await thrown(() =>
    createThrottle({ settings, logger: createLogger('silent'), policies: { text: '[[api]]\nname = "X"\n', source: 'test' } }),
  );
  t.ok(e4 instanceof ThrottleConfigError);
  t.equal((e4 as ThrottleConfigError).code, 'THROTTLE_POLICIES_INVALID');

  const health = new Health();
  const checker = { name: 'twice', order: 1, check: () => ({ up: true }) };
  health.register(checker as unknown as Parameters<Health['register']>[0]);
  const e5 = await thrown(() => health.register(checker as unknown as Parameters<Health['register']>[0]));
  t.ok(e5 instanceof HealthError);
  t.equal((e5 as HealthError).code, 'HEALTH_CHECKER_DUPLICATE');

  const pem = path.join(dir, 'empty.pem');
  fs.writeFileSync(pem, '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n');
  const e6 = await thrown(() => readKeyStore({ file: pem, type: 'PEM', source: 'test' }));
  t.ok(e6 instanceof TlsStoreError, 'a PEM key store without a key');
  t.equal((e6 as TlsStoreError).code, 'TLS_NO_KEY');
});

t.test('each start-up error class built directly carries its code', async (t) => {
  const cases: [Error & { code: string }, string][] = [
    [new CorsConfigError('x'), 'CORS_CREDENTIALS_WITH_ANY_ORIGIN'],
    [new FormatConfigError('message_builders.application_json', 'com.example.Builder'), 'MEDIATION_UNKNOWN_CLASS'],
    [new KeyRingError('x'), 'KEY_RING'],
    [new LlhttpLoadError('x'), 'ERR_LLHTTP_WASM_LOAD'],
    [new RoleNotBuiltError('x'), 'ROLE_NOT_BUILT'],
    [new ControlPlaneError('x'), 'CONTROL_PLANE_UNREACHABLE'],
    [new ConfigInvalidError('x'), 'CONFIG_INVALID'],
  ];
  for (const code of ['PORTAL_REMOTE_UNREACHABLE', 'PORTAL_REMOTE_REFUSED'] as const) cases.push([new PortalRemoteError(code, 'x'), code]);
  for (const code of ['TLS_PROTOCOL', 'TLS_PROFILE', 'TLS_NO_KEYSTORE', 'TLS_NO_TRUSTSTORE'] as const)
    cases.push([new TlsConfigError(code, 'x'), code]);
  for (const code of ['TLS_READ', 'TLS_FORMAT', 'TLS_NO_KEY', 'TLS_NO_CERT', 'TLS_PASSWORD', 'TLS_ALIAS'] as const)
    cases.push([new TlsStoreError(code, 'x'), code]);
  for (const code of [
    'STORE_UNSUPPORTED',
    'STORE_CONNECT',
    'STORE_CONNECTION_LOST',
    'STORE_CONFLICT',
    'STORE_NOT_FOUND',
    'STORE_POOL_TIMEOUT',
    'STORE_MIGRATION',
  ] as const)
    cases.push([new StoreError(code, 'x'), code]);
  for (const [err, code] of cases) {
    t.ok(err instanceof Error, `${err.constructor.name} is an Error`);
    t.equal(err.code, code, `${err.constructor.name}: ${code}`);
  }
});
