/**
 * Real deployments load and run: the reference's own files (test/fixtures/deployment-toml) and files
 * written the way its integration tests write them (test/fixtures/deployment-toml/written: a touched
 * [transport.passthru_https] table, [keystore.tls]/[keystore.primary]/[truststore], h2 without
 * credentials, WSS on), each beside the reference's default store layout (wso2carbon.jks with the key
 * wso2carbon, client-truststore.jks, password wso2carbon, made by keytool), pass `config check` and
 * `start --check`; without its stores a file is refused where it names them. test/config/stores.test.ts
 * has the store defaults and the other checks `config check` shares with start.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { execFile, spawnSync } from 'node:child_process';
import t from 'tap';
import { CLI, FIXTURES } from './helpers';
import { loadConfig } from '../../lib/config/load';

// Each file is checked and started as a child process (22 CLI runs): 140 s seen beside other suites on two
// shared cores at load average 25, past tap's default.
t.setTimeout(900_000);

const WRITTEN = path.join(FIXTURES, 'written');
const REAL = fs
  .readdirSync(FIXTURES)
  .filter((f) => f.endsWith('.toml'))
  .sort()
  .map((f) => path.join(FIXTURES, f));
const OWN = fs
  .readdirSync(WRITTEN)
  .filter((f) => f.endsWith('.toml'))
  .sort()
  .map((f) => path.join(WRITTEN, f));

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'throughway-deployments-'));
t.teardown(() => fs.rmSync(tmp, { recursive: true, force: true }));

interface Run {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function run(args: string[], cwd: string): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { cwd, encoding: 'utf8' }, (err, stdout, stderr) => {
      resolve({ status: err === null ? 0 : typeof err.code === 'number' ? err.code : null, stdout, stderr });
    });
  });
}

/** The reference's default stores, made once by keytool; undefined when Java's keytool is not installed. */
function referenceStores(): string | undefined {
  const dir = path.join(tmp, 'security');
  fs.mkdirSync(dir);
  const kt = (args: string[]): boolean => spawnSync('keytool', args, { cwd: dir, stdio: 'ignore' }).status === 0;
  const made =
    kt([
      '-genkeypair',
      '-alias',
      'wso2carbon',
      '-keyalg',
      'RSA',
      '-keysize',
      '2048',
      '-dname',
      'CN=localhost',
      '-validity',
      '365',
      '-keystore',
      'wso2carbon.jks',
      '-storetype',
      'JKS',
      '-storepass',
      'wso2carbon',
      '-keypass',
      'wso2carbon',
    ]) &&
    kt([
      '-exportcert',
      '-alias',
      'wso2carbon',
      '-keystore',
      'wso2carbon.jks',
      '-storepass',
      'wso2carbon',
      '-rfc',
      '-file',
      'wso2carbon.pem',
    ]) &&
    kt([
      '-importcert',
      '-noprompt',
      '-alias',
      'wso2carbon',
      '-file',
      'wso2carbon.pem',
      '-keystore',
      'client-truststore.jks',
      '-storetype',
      'JKS',
      '-storepass',
      'wso2carbon',
    ]);
  return made ? dir : undefined;
}

const stores = referenceStores();
const noKeytool = stores === undefined ? 'keytool (Java) is not installed: the reference store layout cannot be made' : false;

/** A node directory: conf/deployment.toml and, with `withStores`, the reference's stores beside it. */
function deployment(file: string, withStores: boolean): string {
  const dir = fs.mkdtempSync(path.join(tmp, 'node-'));
  fs.mkdirSync(path.join(dir, 'conf'));
  fs.copyFileSync(file, path.join(dir, 'conf', 'deployment.toml'));
  if (withStores && stores !== undefined) {
    for (const f of ['wso2carbon.jks', 'client-truststore.jks']) fs.copyFileSync(path.join(stores, f), path.join(dir, 'conf', f));
  }
  return dir;
}

t.test('three files written the way the reference integration tests write them are present', async (t) => {
  t.equal(REAL.length, 4);
  t.equal(OWN.length, 3, OWN.join(', '));
});

for (const file of [...REAL, ...OWN]) {
  const name = path.basename(file);
  t.test(`${name}: config check and start --check pass beside the reference stores`, { skip: noKeytool }, async (t) => {
    const dir = deployment(file, true);
    const [check, start] = await Promise.all([run(['config', 'check'], dir), run(['start', '--check'], dir)]);
    t.equal(
      check.status,
      0,
      check.stderr
        .split('\n')
        .filter((l) => l.includes(' error '))
        .join('\n'),
    );
    t.match(check.stdout, 'conf/deployment.toml: valid');
    t.notMatch(check.stderr, / error /, 'no error printed');
    t.equal(start.status, 0, start.stderr);
    t.match(start.stdout, 'conf/deployment.toml: valid');
  });
}

t.test('without its stores, the all-in-one file is refused at the key that names the missing one', async (t) => {
  const dir = deployment(path.join(FIXTURES, '01-product-apim_all-in-one.deployment.toml'), false);
  const [r, start] = await Promise.all([run(['config', 'check'], dir), run(['start', '--check'], dir)]);
  t.equal(r.status, 1);
  t.match(
    r.stderr,
    /conf\/deployment\.toml:29:1: error CONFIG_FILE_MISSING keystore\.tls\.file_name: no such file: .*wso2carbon\.jks \(the default of transport\.passthru_https\.listener\.key_store\.file_name\)/,
  );
  t.equal(r.stderr.match(/CONFIG_FILE_MISSING/g)?.length, 1, 'one missing file, one error (the sender store copies the listener one)');
  t.equal(start.status, 1, 'start --check refuses it too');
});

/**
 * The reference's home layout, as a user moving from it keeps it: `<home>/repository/conf/deployment.toml`
 * with the stores in `<home>/repository/resources/security/` (spec 001: store files are "placed in the
 * security directory"; config/security-dir.ts).
 */
function referenceHome(file: string): string {
  const home = fs.mkdtempSync(path.join(tmp, 'home-'));
  const conf = path.join(home, 'repository', 'conf');
  const security = path.join(home, 'repository', 'resources', 'security');
  fs.mkdirSync(conf, { recursive: true });
  fs.mkdirSync(security, { recursive: true });
  fs.copyFileSync(file, path.join(conf, 'deployment.toml'));
  if (stores !== undefined) {
    for (const f of ['wso2carbon.jks', 'client-truststore.jks']) fs.copyFileSync(path.join(stores, f), path.join(security, f));
  }
  return home;
}

for (const file of [...REAL, ...OWN]) {
  const name = path.basename(file);
  t.test(`${name}: config check and start --check pass in the reference's home layout`, { skip: noKeytool }, async (t) => {
    const home = referenceHome(file);
    // Without --config the home's repository/conf/deployment.toml is the file (lib/cli.ts defaultConfig).
    const [check, start] = await Promise.all([
      run(['config', 'check'], home),
      run(['start', '--check', '--config', 'repository/conf/deployment.toml'], home),
    ]);
    t.equal(
      check.status,
      0,
      check.stderr
        .split('\n')
        .filter((l) => l.includes(' error '))
        .join('\n'),
    );
    t.match(check.stdout, 'repository/conf/deployment.toml: valid');
    t.notMatch(check.stderr, / error /, 'no error printed');
    t.equal(start.status, 0, start.stderr);
  });
}

t.test('a relative store path with directories resolves from the home of the layout', { skip: noKeytool }, async (t) => {
  const home = referenceHome(path.join(FIXTURES, '01-product-apim_all-in-one.deployment.toml'));
  const conf = path.join(home, 'repository', 'conf', 'deployment.toml');
  const text = fs.readFileSync(conf, 'utf8');
  // [keystore.tls] file_name = "wso2carbon.jks" in the real file: written as the reference's own samples do.
  fs.writeFileSync(
    conf,
    text.replace(/(\[keystore\.tls\]\s*file_name\s*=\s*)"wso2carbon\.jks"/, '$1"repository/resources/security/wso2carbon.jks"'),
  );
  t.match(
    fs.readFileSync(conf, 'utf8'),
    /\[keystore\.tls\]\s*file_name\s*=\s*"repository\/resources\/security\/wso2carbon\.jks"/,
    'the file was rewritten',
  );
  const r = await run(['config', 'check', '--config', 'repository/conf/deployment.toml'], home);
  t.equal(r.status, 0, r.stderr);
});

t.test("a store missing from the reference's layout names every place looked", async (t) => {
  const home = fs.mkdtempSync(path.join(tmp, 'home-empty-'));
  const conf = path.join(home, 'repository', 'conf');
  fs.mkdirSync(conf, { recursive: true });
  fs.copyFileSync(path.join(FIXTURES, '01-product-apim_all-in-one.deployment.toml'), path.join(conf, 'deployment.toml'));
  const r = await run(['config', 'check', '--config', 'repository/conf/deployment.toml'], home);
  t.equal(r.status, 1);
  const security = path.join(home, 'repository', 'resources', 'security', 'wso2carbon.jks');
  const beside = path.join(conf, 'wso2carbon.jks');
  const line = r.stderr.split('\n').find((l) => l.includes('CONFIG_FILE_MISSING')) ?? '';
  t.ok(line.includes(`no such file: ${security}`), `the security directory first: ${line}`);
  t.ok(line.includes(`looked in ${security}, ${beside}`), `both places named: ${line}`);
});

t.test('config check refuses what start refuses: allow_credentials with the origin *', async (t) => {
  const dir = fs.mkdtempSync(path.join(tmp, 'cors-'));
  fs.mkdirSync(path.join(dir, 'conf'));
  fs.writeFileSync(
    path.join(dir, 'conf', 'deployment.toml'),
    '[server]\nhostname = "localhost"\n\n[apim.cors]\nallow_origins = "*"\nallow_credentials = true\n',
  );
  const [check, startCheck, start] = await Promise.all([
    run(['config', 'check'], dir),
    run(['start', '--check'], dir),
    run(['start'], dir),
  ]);
  for (const [name, r] of [
    ['config check', check],
    ['start --check', startCheck],
    ['start', start],
  ] as const) {
    t.equal(r.status, 1, `${name} refuses it`);
    t.match(
      r.stderr,
      /conf\/deployment\.toml:6:\d+: error CONFIG_CONFLICT apim\.cors\.allow_credentials: allow_credentials = true needs explicit allow_origins/,
      `${name} names the key and line`,
    );
  }
});

/** A home in the reference's layout whose deployment.toml names no store (`text`), with the default stores. */
function homeNamingNoStore(text: string, withStores: boolean): string {
  const home = fs.mkdtempSync(path.join(tmp, 'home-default-'));
  const conf = path.join(home, 'repository', 'conf');
  const security = path.join(home, 'repository', 'resources', 'security');
  fs.mkdirSync(conf, { recursive: true });
  fs.mkdirSync(security, { recursive: true });
  fs.writeFileSync(path.join(conf, 'deployment.toml'), text);
  if (withStores && stores !== undefined) {
    for (const f of ['wso2carbon.jks', 'client-truststore.jks']) fs.copyFileSync(path.join(stores, f), path.join(security, f));
  }
  return home;
}

const NO_STORE = '[server]\nhostname = "localhost"\n';

t.test("a file naming no store takes the reference's default stores from the security directory", { skip: noKeytool }, async (t) => {
  const home = homeNamingNoStore(NO_STORE, true);
  const security = path.join(home, 'repository', 'resources', 'security');
  const r = loadConfig({ file: path.join(home, 'repository', 'conf', 'deployment.toml'), env: {} });
  t.equal(r.ok, true, JSON.stringify(r.diagnostics));
  const https = r.config.transport.passthru_https;
  t.equal(https.listener.key_store.file_name, path.join(security, 'wso2carbon.jks'), 'the listener serves the default key store');
  t.equal(https.sender.key_store.file_name, path.join(security, 'wso2carbon.jks'), 'the sender copies the listener');
  t.equal(https.listener.trust_store.file_name, path.join(security, 'client-truststore.jks'), 'the default trust store');
  t.equal(r.config.transport.wss.sender.trust_store?.location, path.join(security, 'client-truststore.jks'));
  t.ok(r.secrets.includes('keystore.primary.password'), 'the default password is a secret');
  // start --check opens the stores with the default password (lib/tls/settings.ts): a wrong one is refused.
  const [check, start, print] = await Promise.all([
    run(['config', 'check'], home),
    run(['start', '--check', '--config', 'repository/conf/deployment.toml'], home),
    run(['config', 'print', '--config', 'repository/conf/deployment.toml'], home),
  ]);
  t.equal(check.status, 0, check.stderr);
  t.equal(start.status, 0, start.stderr);
  t.notMatch(print.stdout + print.stderr, /password\s*=\s*"wso2carbon"/, 'config print does not show the default password');
});

t.test('the default store is opened with its default password: another password is refused at start', { skip: noKeytool }, async (t) => {
  const home = homeNamingNoStore(NO_STORE, false);
  const security = path.join(home, 'repository', 'resources', 'security');
  const made = spawnSync(
    'keytool',
    [
      '-genkeypair',
      '-alias',
      'other',
      '-keyalg',
      'RSA',
      '-keysize',
      '2048',
      '-dname',
      'CN=localhost',
      '-validity',
      '365',
      '-keystore',
      'wso2carbon.jks',
      '-storetype',
      'JKS',
      '-storepass',
      'not-the-default',
      '-keypass',
      'not-the-default',
    ],
    { cwd: security, stdio: 'ignore' },
  );
  t.equal(made.status, 0, 'keytool made a store with another password');
  const start = await run(['start', '--check', '--config', 'repository/conf/deployment.toml'], home);
  t.equal(start.status, 1, 'refused: the default password does not open it');
  t.match(start.stderr, /wso2carbon\.jks/, 'the store is named');
  // The password written in [keystore.primary] wins over the default.
  fs.appendFileSync(path.join(home, 'repository', 'conf', 'deployment.toml'), '\n[keystore.primary]\npassword = "not-the-default"\n');
  const again = await run(['start', '--check', '--config', 'repository/conf/deployment.toml'], home);
  t.equal(again.status, 0, again.stderr);
});

t.test('without the default stores in the security directory, nothing is filled (the generated sample pair serves)', async (t) => {
  const home = homeNamingNoStore(NO_STORE, false);
  const r = loadConfig({ file: path.join(home, 'repository', 'conf', 'deployment.toml'), env: {} });
  t.equal(r.ok, true, JSON.stringify(r.diagnostics));
  t.notOk(r.config.transport.passthru_https.listener.key_store.file_name, 'no key store file');
  t.notOk(r.config.transport.passthru_https.listener.trust_store.file_name, 'no trust store file');
});

t.test('outside the reference layout, default names beside the file are not taken', { skip: noKeytool }, async (t) => {
  const dir = deployment(path.join(WRITTEN, '06-h2-without-credentials.deployment.toml'), true);
  fs.writeFileSync(path.join(dir, 'conf', 'deployment.toml'), NO_STORE);
  const r = loadConfig({ file: path.join(dir, 'conf', 'deployment.toml'), env: {} });
  t.notOk(r.config.transport.passthru_https.listener.key_store.file_name, 'only the security directory holds defaults');
});

/** The `error CODE key` words of a run's output: what `config check` and `start --check` must agree on. */
const refusals = (r: Run): string[] => [...new Set((r.stderr.match(/ error [A-Z_]+ [\w.[\]]+/g) ?? []).map((s) => s.trim()))].sort();

/** The file with a trusted SAML identity provider whose certificate is idp.pem in the security directory. */
const withIdp = (s: string): string =>
  `${s}\n[[oauth.grant_type.saml_bearer.identity_provider]]\nissuer = "https://idp.example/saml"\ncertificate_file = "idp.pem"\n`;
/** The line of withIdp's certificate_file in the changed text. */
const idpLine = (text: string): number => text.split('\n').findIndex((l) => l.startsWith('certificate_file = "idp.pem"')) + 1;

/**
 * What config check refuses, start refuses, and the reverse: each refusal start has, made from the real
 * all-in-one file in the reference's home (stores made by keytool), gives the same errors at both.
 */
const REFUSALS: readonly {
  readonly name: string;
  readonly change: (text: string) => string;
  readonly security?: (dir: string) => void;
  readonly code: string;
  /** What both runs print for it beyond the code and key: the file, the line, what is wrong. */
  readonly says?: (text: string) => RegExp;
}[] = [
  {
    name: 'allow_credentials with the origin *',
    change: (s) => s.replace('allow_credentials = false', 'allow_credentials = true'),
    code: 'CONFIG_CONFLICT',
  },
  {
    name: 'a database type no store opens',
    change: (s) => s.replace('[database.apim_db]\ntype = "h2"', '[database.apim_db]\ntype = "oracle"'),
    code: 'CONFIG_',
  },
  {
    name: 'a shared_db type no store opens',
    change: (s) => s.replace('[database.shared_db]\ntype = "h2"', '[database.shared_db]\ntype = "oracle"'),
    code: 'CONFIG_UNSUPPORTED',
    says: (text) =>
      new RegExp(
        `repository/conf/deployment\\.toml:${text.split('\n').indexOf('type = "oracle"') + 1}:\\d+: error CONFIG_UNSUPPORTED database\\.shared_db\\.type: type "oracle" is not supported`,
      ),
  },
  { name: 'a port offset out of range', change: (s) => s.replace('#offset=0', 'offset = 70000'), code: 'CONFIG_' },
  {
    name: 'the key store missing from the security directory',
    change: (s) => s,
    security: (dir) => fs.rmSync(path.join(dir, 'wso2carbon.jks')),
    code: 'CONFIG_FILE_MISSING',
  },
  {
    name: "a SAML identity provider's certificate file missing",
    change: withIdp,
    code: 'CONFIG_FILE_MISSING',
    says: (text) =>
      new RegExp(
        `repository/conf/deployment\\.toml:${idpLine(text)}:\\d+: error CONFIG_FILE_MISSING oauth\\.grant_type\\.saml_bearer\\.identity_provider\\[0\\]\\.certificate_file: no such file: \\S*repository/resources/security/idp\\.pem`,
      ),
  },
  {
    name: "a SAML identity provider's certificate file that is not PEM",
    change: withIdp,
    security: (dir) => fs.writeFileSync(path.join(dir, 'idp.pem'), 'issuer = "https://idp.example/saml"\n'),
    code: 'CONFIG_FILE_INVALID',
    says: (text) =>
      new RegExp(
        `repository/conf/deployment\\.toml:${idpLine(text)}:\\d+: error CONFIG_FILE_INVALID oauth\\.grant_type\\.saml_bearer\\.identity_provider\\[0\\]\\.certificate_file: \\S*repository/resources/security/idp\\.pem holds no PEM certificate`,
      ),
  },
  {
    name: "a SAML identity provider's certificate that does not parse",
    change: withIdp,
    security: (dir) =>
      fs.writeFileSync(path.join(dir, 'idp.pem'), '-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n'),
    code: 'CONFIG_FILE_INVALID',
    says: (text) =>
      new RegExp(
        `repository/conf/deployment\\.toml:${idpLine(text)}:\\d+: error CONFIG_FILE_INVALID oauth\\.grant_type\\.saml_bearer\\.identity_provider\\[0\\]\\.certificate_file: \\S*idp\\.pem certificate 1 does not parse`,
      ),
  },
];

for (const c of REFUSALS) {
  t.test(`config check and start --check refuse alike: ${c.name}`, { skip: noKeytool }, async (t) => {
    const home = referenceHome(path.join(FIXTURES, '01-product-apim_all-in-one.deployment.toml'));
    const conf = path.join(home, 'repository', 'conf', 'deployment.toml');
    const before = fs.readFileSync(conf, 'utf8');
    fs.writeFileSync(conf, c.change(before));
    t.ok(c.security !== undefined || fs.readFileSync(conf, 'utf8') !== before, 'the file was changed');
    c.security?.(path.join(home, 'repository', 'resources', 'security'));
    const args = ['--config', 'repository/conf/deployment.toml'];
    const [check, start] = await Promise.all([run(['config', 'check', ...args], home), run(['start', '--check', ...args], home)]);
    t.equal(check.status, 1, 'config check refuses it');
    t.equal(start.status, 1, 'start --check refuses it');
    const a = refusals(check);
    t.ok(a.length > 0 && a.every((e) => e.includes(c.code)), `config check: ${a.join('; ')}`);
    t.same(refusals(start), a, 'start --check gives the same errors');
    if (c.says !== undefined) {
      const says = c.says(fs.readFileSync(conf, 'utf8'));
      t.match(check.stderr, says, 'config check names the key, the file and the line');
      t.match(start.stderr, says, 'start --check names them alike');
    }
  });
}
