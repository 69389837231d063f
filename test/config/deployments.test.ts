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

const WRITTEN = path.join(FIXTURES, 'written');
const REAL = fs.readdirSync(FIXTURES).filter((f) => f.endsWith('.toml')).sort().map((f) => path.join(FIXTURES, f));
const OWN = fs.readdirSync(WRITTEN).filter((f) => f.endsWith('.toml')).sort().map((f) => path.join(WRITTEN, f));

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
    kt(['-genkeypair', '-alias', 'wso2carbon', '-keyalg', 'RSA', '-keysize', '2048', '-dname', 'CN=localhost', '-validity', '365', '-keystore', 'wso2carbon.jks', '-storetype', 'JKS', '-storepass', 'wso2carbon', '-keypass', 'wso2carbon']) &&
    kt(['-exportcert', '-alias', 'wso2carbon', '-keystore', 'wso2carbon.jks', '-storepass', 'wso2carbon', '-rfc', '-file', 'wso2carbon.pem']) &&
    kt(['-importcert', '-noprompt', '-alias', 'wso2carbon', '-file', 'wso2carbon.pem', '-keystore', 'client-truststore.jks', '-storetype', 'JKS', '-storepass', 'wso2carbon']);
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
    t.equal(check.status, 0, check.stderr.split('\n').filter((l) => l.includes(' error ')).join('\n'));
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
  t.match(r.stderr, /conf\/deployment\.toml:29:1: error CONFIG_FILE_MISSING keystore\.tls\.file_name: no such file: .*wso2carbon\.jks \(the default of transport\.passthru_https\.listener\.key_store\.file_name\)/);
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
    const [check, start] = await Promise.all([run(['config', 'check'], home), run(['start', '--check', '--config', 'repository/conf/deployment.toml'], home)]);
    t.equal(check.status, 0, check.stderr.split('\n').filter((l) => l.includes(' error ')).join('\n'));
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
  fs.writeFileSync(conf, text.replace(/(\[keystore\.tls\]\s*file_name\s*=\s*)"wso2carbon\.jks"/, '$1"repository/resources/security/wso2carbon.jks"'));
  t.match(fs.readFileSync(conf, 'utf8'), /\[keystore\.tls\]\s*file_name\s*=\s*"repository\/resources\/security\/wso2carbon\.jks"/, 'the file was rewritten');
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
  fs.writeFileSync(path.join(dir, 'conf', 'deployment.toml'), '[server]\nhostname = "localhost"\n\n[apim.cors]\nallow_origins = "*"\nallow_credentials = true\n');
  const [check, startCheck, start] = await Promise.all([run(['config', 'check'], dir), run(['start', '--check'], dir), run(['start'], dir)]);
  for (const [name, r] of [['config check', check], ['start --check', startCheck], ['start', start]] as const) {
    t.equal(r.status, 1, `${name} refuses it`);
    t.match(r.stderr, /conf\/deployment\.toml:6:\d+: error CONFIG_CONFLICT apim\.cors\.allow_credentials: allow_credentials = true needs explicit allow_origins/, `${name} names the key and line`);
  }
});
