/**
 * The transports' key and trust stores default as spec 001 gives them ([transport.passthru_https]: the
 * server's primary key store and trust store; [keystore.tls]/[keystore.primary]/[truststore] name them),
 * `required` binds only keys without a default, values nothing acts on only warn, the checks a starting
 * node makes (startChecks), integer and nesting limits with their own codes, a loaded result with errors
 * that fails loudly (docs/embedding.md), and `apis list` validating policies as the node does.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import t from 'tap';
import { loadConfig, STORE_DATABASES } from '../../lib/config/load';
import { ConfigInvalidError } from '../../lib/config/diagnostics';
import { createGateway } from '../../lib/embed';
import { SUPPORTED_DATABASES } from '../../lib/store/open';
import { CLI, brief, errors, load, warnings } from './helpers';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'throughway-stores-'));
t.teardown(() => fs.rmSync(tmp, { recursive: true, force: true }));

function run(args: string[], cwd: string): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, ...args], { cwd, encoding: 'utf8' });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

// ------------------------------------------------------------------------------------------ store defaults

const TLS = '[keystore.tls]\nfile_name = "tls.p12"\ntype = "PKCS12"\npassword = "tp"\nalias = "a"\nkey_password = "tk"\n';
const PRIMARY = '[keystore.primary]\nfile_name = "primary.jks"\ntype = "JKS"\npassword = "pp"\nkey_password = "pk"\n';
const TRUST = '[truststore]\nfile_name = "trust.jks"\npassword = "sp"\n';

t.test('a touched [transport.passthru_https] table makes no store key required', async (t) => {
  for (const text of [
    '[transport.passthru_https]\nlistener.ssl_profile_interval = 6000\n',
    '[transport.passthru_https]\nlistener.parameters.port = 8243\n',
    '[transport.wss]\nsender.enable = true\n',
  ]) {
    const r = load(text);
    t.same(
      errors(r).map((d) => `${d.code} ${d.key}`),
      [],
      text,
    );
    t.equal(
      r.config.transport.passthru_https.listener.key_store.file_name,
      undefined,
      'no primary store written: the sample key pair serves',
    );
  }
});

t.test('the transports default to [keystore.tls], else [keystore.primary], and [truststore]', async (t) => {
  const r = load(
    `${PRIMARY}${TLS}${TRUST}[transport.passthru_https]\nlistener.ssl_profile_interval = 6000\n[transport.wss]\nsender.enable = true\n`,
    { file: '/srv/conf/deployment.toml' },
  );
  t.same(errors(r), []);
  const h = r.config.transport.passthru_https;
  for (const side of [h.listener, h.sender]) {
    t.match(side.key_store, { file_name: '/srv/conf/tls.p12', type: 'PKCS12', password: 'tp', key_password: 'tk' });
    t.match(side.trust_store, { file_name: '/srv/conf/trust.jks', type: 'JKS', password: 'sp' });
  }
  t.match(r.config.transport.wss.sender.trust_store, { location: '/srv/conf/trust.jks', password: 'sp' });
  t.ok(r.secrets.includes('transport.passthru_https.sender.key_store.password'), 'a copied password is a secret');
  const primaryOnly = load(`${PRIMARY}[transport.passthru_https]\nlistener.parameters.port = 8243\n`, {
    file: '/srv/conf/deployment.toml',
  });
  t.match(primaryOnly.config.transport.passthru_https.listener.key_store, {
    file_name: '/srv/conf/primary.jks',
    type: 'JKS',
    password: 'pp',
    key_password: 'pk',
  });
  t.equal(primaryOnly.config.transport.passthru_https.listener.trust_store.file_name, undefined, 'no [truststore]: no trust store');
});

t.test('keys the file writes win over the defaults, and a store is never mixed with another', async (t) => {
  const r = load(
    `${TLS}${TRUST}[transport.passthru_https]\nlistener.key_store.file_name = "own.pem"\nlistener.key_store.type = "PEM"\nsender.trust_store.file_name = "backends.pem"\nsender.trust_store.type = "PEM"\n`,
    { file: '/srv/conf/deployment.toml' },
  );
  t.same(errors(r), []);
  const h = r.config.transport.passthru_https;
  t.match(h.listener.key_store, { file_name: '/srv/conf/own.pem', type: 'PEM' });
  t.equal(h.listener.key_store.password, undefined, "the [keystore.tls] password does not go with the file's own store");
  t.match(h.sender.key_store, { file_name: '/srv/conf/own.pem', type: 'PEM' }, 'the sender takes the listener store');
  t.match(h.sender.trust_store, { file_name: '/srv/conf/backends.pem', type: 'PEM' });
  t.equal(h.sender.trust_store.password, undefined);
  t.match(h.listener.trust_store, { file_name: '/srv/conf/trust.jks', password: 'sp' });
});

t.test('h2 needs no credentials; a value outside a list where throughway does not act is a warning', async (t) => {
  const r = load(
    '[database.apim_db]\ntype = "h2"\nurl = "jdbc:h2:./repository/database/WSO2AM_DB;DB_CLOSE_ON_EXIT=FALSE"\n[server]\nmode = "cluster"\n[[apim.gateway.environment]]\nname = "Default"\nhttps_endpoint = "https://localhost:8243"\nservice_url = "https://localhost:9443/services/"\n',
  );
  t.same(
    errors(r).map((d) => `${d.code} ${d.key}`),
    [],
    brief(r).join('\n'),
  );
  t.match(
    warnings(r).find((d) => d.code === 'CONFIG_ALLOWED'),
    { key: 'server.mode', line: 5, message: /not an allowed value: "cluster" \(not acted on/ },
  );
  // The environment's endpoints act (the printed gateway URLs); its publishing keys are not acted on.
  t.notOk(r.inactiveKeys.includes('apim.gateway.environment[].https_endpoint'), 'https_endpoint acts');
  t.ok(r.inactiveKeys.includes('apim.gateway.environment[].service_url'), 'service_url is named as not acted on');
  t.match(
    r.notActedOn.find((k) => k.key === 'apim.gateway.environment[0].service_url'),
    { line: 9 },
  );
  const running = load('[server]\nserver_role = "gateway"\n');
  t.match(errors(running), [{ code: 'CONFIG_ALLOWED', key: 'server.server_role' }], 'where throughway acts on the value it stays an error');
});

// ------------------------------------------------------------------------------------ checks that match start

t.test('startChecks: database types start refuses and missing store files, with file and line', async (t) => {
  const oracle = '[database.apim_db]\ntype = "oracle"\nurl = "jdbc:oracle:thin:@localhost:1521/ORCL"\n';
  const r = load(oracle, { startChecks: true });
  t.match(errors(r), [{ code: 'CONFIG_UNSUPPORTED', key: 'database.apim_db.type', line: 2 }]);
  t.ok(load(oracle).ok, 'loadConfig alone accepts it (the schema allows it)');
  t.ok(load(`[server]\nserver_role = "gateway-worker"\n${oracle}`, { startChecks: true }).ok, 'a gateway-worker opens no store');
  t.same(STORE_DATABASES, SUPPORTED_DATABASES, 'the check knows the drivers the store opens');
  for (const type of ['mssql', 'db2']) t.notOk(load(`[database.apim_db]\ntype = "${type}"\n`, { startChecks: true }).ok, type);
  const dir = fs.mkdtempSync(path.join(tmp, 'files-'));
  fs.writeFileSync(path.join(dir, 'present.pem'), 'x');
  const files = load(
    '[transport.passthru_https]\nlistener.key_store.file_name = "present.pem"\nlistener.trust_store.file_name = "absent.pem"\n',
    { file: path.join(dir, 'deployment.toml'), startChecks: true },
  );
  t.match(errors(files), [{ code: 'CONFIG_FILE_MISSING', key: 'transport.passthru_https.listener.trust_store.file_name', line: 3 }]);
});

t.test('out-of-range integers and deep nesting have their own codes, not CONFIG_DUPLICATE', async (t) => {
  const cases: [string, string, RegExp][] = [
    ['[server]\noffset = 99999999999999999999999\n', 'CONFIG_INTEGER', /64-bit signed range/],
    ['[passthru_http]\n"http.socket.timeout" = 9223372036854775807\n', 'CONFIG_INTEGER', /too large/],
    [`[server]\nx = ${'['.repeat(5000)}\n`, 'CONFIG_NESTING', /nested too deep/],
  ];
  for (const [text, code, message] of cases) {
    const r = load(text);
    t.match(errors(r), [{ code, line: 2, message }], code);
    t.notOk(
      r.diagnostics.some((d) => d.code === 'CONFIG_DUPLICATE'),
      'no duplicate reported',
    );
  }
});

t.test('a result with errors fails loudly when used; a good one does not', async (t) => {
  const missing = loadConfig({ file: path.join(tmp, 'nope', 'deployment.toml') });
  t.equal(missing.ok, false);
  t.match(missing.diagnostics, [{ code: 'CONFIG_IO' }]);
  t.throws(() => missing.config, ConfigInvalidError);
  t.throws(() => missing.ports, { code: 'CONFIG_INVALID', message: /CONFIG_IO/ });
  t.throws(() => createGateway({ loaded: missing }), { code: 'CONFIG_INVALID' }, 'createGateway does not run on the defaults');
  const broken = path.join(tmp, 'broken.toml');
  fs.writeFileSync(broken, '[server\nhostname = "x"\n');
  t.throws(() => loadConfig({ file: broken }).config, { code: 'CONFIG_INVALID', message: /CONFIG_SYNTAX/ });
  t.doesNotThrow(() => ({ ...missing }), 'spreading the result (as the CLI does) is safe');
  t.equal(JSON.stringify(missing).includes('"diagnostics"'), true);
  t.equal(load('').config.server.hostname, 'localhost');
});

// --------------------------------------------------------------------------------------------- apis list

t.test('apis list validates policies as the node does: an unknown unauthenticated_policy is not deployed', async (t) => {
  const dir = fs.mkdtempSync(path.join(tmp, 'apis-'));
  fs.mkdirSync(path.join(dir, 'conf', 'apis'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'conf', 'deployment.toml'), '[server]\nhostname = "localhost"\n');
  const api = (policy: string): string =>
    `name = "Echo"\ncontext = "/echo"\nversion = "1"\nauth = "none"\nunauthenticated_policy = "${policy}"\n[endpoints]\nproduction = "http://127.0.0.1:9000"\n[[resources]]\npath = "/*"\nmethods = ["GET"]\n`;
  fs.writeFileSync(path.join(dir, 'conf', 'apis', 'echo.toml'), api('NoSuchTier'));
  const bad = run(['apis', 'list'], dir);
  t.equal(bad.status, 1, bad.stdout);
  t.match(bad.stdout, /0 deployed, 1 not deployed/);
  t.match(bad.stdout, /NoSuchTier/);
  fs.writeFileSync(path.join(dir, 'conf', 'apis', 'echo.toml'), api('Unlimited'));
  const good = run(['apis', 'list'], dir);
  t.equal(good.status, 0, good.stdout);
  t.match(good.stdout, /1 deployed, 0 not deployed/);
});
