/**
 * The CLI as a user runs it: `node dist/lib/cli.js ...` in a child process; exit codes and output
 * (docs/configuration.md, : 0 valid with warnings printed, 1 with every error listed, 2 usage).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import t from 'tap';
import { CLI, FIXTURES, REPO } from './helpers';

function run(args: string[], cwd = REPO): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, ...args], {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, THROUGHWAY_TEST_VALUE: 'from-env' },
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'throughway-cli-'));
t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
function file(name: string, text: string): string {
  const p = path.join(dir, name);
  fs.writeFileSync(p, text);
  return p;
}

t.test('the embedded default conf/deployment.toml is valid with one warning: the default admin password', async (t) => {
  const r = run(['config', 'check']);
  t.equal(r.status, 0, r.stderr);
  t.match(
    r.stderr,
    /warning CONFIG_DEFAULT_ADMIN_PASSWORD.*super_admin\.password.*built-in default password "admin".*listen on 127\.0\.0\.1 only/,
    'config check warns about admin/admin',
  );
  t.equal(r.stderr.trim().split('\n').length, 1, 'and about nothing else');
  t.match(r.stdout, 'conf/deployment.toml: valid (1 warning)');
  t.match(r.stdout, 'role: default');
  t.match(r.stdout, /gateway HTTP +8280/);
  t.match(r.stdout, /demo backend +9000 .*\(on\)/);
  t.match(r.stdout, /database\.apim_db: type h2 → embedded SQLite file .*apim_db\.sqlite/);
  t.match(r.stdout, 'accepted but inactive: (none)');
});

const keytoolMissing =
  spawnSync('keytool', ['-help'], { stdio: 'ignore' }).error !== undefined
    ? 'keytool (Java) is not installed: the reference key store cannot be made'
    : false;

t.test('a real file beside its stores: exit 0, warnings printed, inactive sections listed', { skip: keytoolMissing }, async (t) => {
  // [keystore.tls] names the store the transports default to, and config check opens it as start would:
  // the reference's wso2carbon.jks (alias and passwords wso2carbon), made by keytool.
  const conf = path.join(dir, 'real');
  fs.mkdirSync(conf);
  fs.copyFileSync(path.join(FIXTURES, '01-product-apim_all-in-one.deployment.toml'), path.join(conf, 'deployment.toml'));
  const made = spawnSync(
    'keytool',
    [
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
    ],
    { cwd: conf, stdio: 'ignore' },
  );
  t.equal(made.status, 0, 'keytool made wso2carbon.jks');
  const r = run(['config', 'check', '--config', path.join(conf, 'deployment.toml')]);
  t.equal(r.status, 0, r.stderr);
  t.match(r.stderr, /deployment\.toml:110:1: warning CONFIG_UNKNOWN_KEY apim\.analytics\.type: unknown key 'type' in \[apim\.analytics\]/);
  t.notMatch(r.stderr, 'user_store.type', '[user_store] type is known (docs/user-stores.md)');
  t.notMatch(r.stderr, 'keystore.tls', '[keystore.tls] is known');
  t.match(r.stdout, /valid \(\d+ warnings\)/);
  t.match(r.stdout, 'accepted but inactive: apim.ai');
  t.match(r.stdout, /database\.apim_db: type h2 → embedded SQLite file .*WSO2AM_DB\.sqlite/);
});

t.test('--strict makes the same file fail', async (t) => {
  const r = run(['config', 'check', '--strict', '--config', path.join(FIXTURES, '02-product-apim_universal-gateway.deployment.toml')]);
  t.equal(r.status, 1);
  t.match(r.stderr, 'error CONFIG_UNKNOWN_KEY apim.analytics.type');
  t.match(r.stdout, /invalid: \d+ errors/);
});

t.test('an LDAP user store start would refuse: exit 1 with USER_STORE_CONFIG, without contacting it', async (t) => {
  const f = file(
    'ldap.toml',
    '[user_store]\ntype = "active_directory"\n[user_store.properties]\nConnectionURL = "http://dc1.example:389"\nConnectionName = "CN=tw"\nConnectionPassword = "pw"\nUserSearchBase = "DC=example"\n',
  );
  const r = run(['config', 'check', '--config', f]);
  t.equal(r.status, 1);
  t.match(
    r.stderr,
    /error USER_STORE_CONFIG: \[user_store\] type = "active_directory": \[user_store\.properties\] ConnectionURL "http:\/\/dc1\.example:389" is not an ldap:\/\/ or ldaps:\/\/ URL/,
  );
  t.match(r.stdout, 'invalid: the user store start would refuse');
  const ok = run(['config', 'check', '--config', file('ldap-ok.toml', fs.readFileSync(f, 'utf8').replace('http://', 'ldaps://'))]);
  t.equal(ok.status, 0, ok.stderr);
});

t.test('a bad file: exit 1 with every error listed', async (t) => {
  const bad = file(
    'bad.toml',
    '[server]\noffset = "x"\nserver_role = "nope"\n[apim.cors]\nallow_origins = "$env{NOT_SET_FOR_THIS_TEST}"\n',
  );
  const r = run(['config', 'check', '--config', bad]);
  t.equal(r.status, 1);
  t.match(r.stderr, `${bad}:2:1: error CONFIG_TYPE server.offset`);
  t.match(r.stderr, `${bad}:3:1: error CONFIG_ALLOWED server.server_role`);
  t.match(r.stderr, `${bad}:5:1: error CONFIG_ENV_MISSING apim.cors.allow_origins`);
  t.match(r.stderr, '  2 | offset = "x"', 'the source line');
  t.match(r.stdout, 'invalid: 3 errors, 0 warnings');
});

t.test('effective ports follow server.offset', async (t) => {
  const f = file('offset.toml', '[server]\noffset = 2\n');
  const r = run(['config', 'check', '--config', f]);
  t.equal(r.status, 0);
  t.match(r.stdout, 'effective ports (server.offset 2)');
  t.match(r.stdout, /gateway HTTP +8282/);
  t.match(r.stdout, /management HTTPS +9445/);
});

t.test('--sys fills $sys{name}; $env comes from the environment', async (t) => {
  const f = file('sys.toml', '[server]\nhostname = "$sys{carbon.host}"\n[apim.jwt]\nheader = "$env{THROUGHWAY_TEST_VALUE}"\n');
  t.equal(run(['config', 'check', '--config', f]).status, 1, 'missing $sys');
  const ok = run(['config', 'print', '--json', '--config', f, '--sys', 'carbon.host=node7']);
  t.equal(ok.status, 0, ok.stderr);
  const json = JSON.parse(ok.stdout) as { server: { hostname: string }; apim: { jwt: { header: string } } };
  t.equal(json.server.hostname, 'node7');
  t.equal(json.apim.jwt.header, 'from-env');
  t.equal(run(['config', 'check', '--config', f, '--sys=carbon.host=node7']).status, 0, '--sys=name=value form');
});

t.test('config print: TOML-like text with defaults filled and secrets masked', async (t) => {
  const r = run(['config', 'print']);
  t.equal(r.status, 0, r.stderr);
  t.match(r.stdout, /^\[server\]\nhostname = "localhost"/m);
  t.match(r.stdout, 'password = "****"');
  t.notMatch(r.stdout, /password = "admin"/);
  t.match(r.stdout, /\[passthru_http\.http\.socket\]\ntimeout = 180000/, 'a duration printed in milliseconds');
  t.match(r.stdout, '[database.apim_db.pool_options]', 'defaults of tables not written');
});

t.test('start: a bad configuration does not start (exit 1, every error listed)', async (t) => {
  const bad = file('bad-start.toml', '[server]\noffset = 70000\n');
  const b = run(['start', '--config', bad]);
  t.equal(b.status, 1);
  t.match(b.stderr, 'CONFIG_RANGE server.offset');
  t.match(b.stderr, 'not starting');
});

t.test('start: boots the node on the effective ports, prints the role, and stops on SIGTERM', async (t) => {
  // Port 0 everywhere that listens, so the test never collides with a running node.
  const conf = file(
    'start.toml',
    '[transport.passthru_http]\nlistener.parameters.port = 0\n[transport.http.properties]\nport = 0\n[throughway.demo]\nenable = false\n',
  );
  const child = spawn(process.execPath, [CLI, 'start', '--config', conf], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr.on('data', (b: Buffer) => (out += b.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const started = await Promise.race([
    new Promise<boolean>((resolve) => {
      const poll = setInterval(() => {
        if (/gateway HTTP/.test(out) || child.exitCode !== null) {
          clearInterval(poll);
          resolve(child.exitCode === null);
        }
      }, 20);
    }),
    new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 15_000)),
  ]);
  t.ok(started, `started:\n${out}`);
  t.match(out, 'role default');
  child.kill('SIGTERM');
  t.equal(await exited, 0, 'graceful exit on SIGTERM');
});

t.test('missing file, usage errors and help', async (t) => {
  const missing = run(['config', 'check', '--config', path.join(dir, 'nope.toml')]);
  t.equal(missing.status, 1);
  t.match(missing.stderr, 'CONFIG_IO');
  t.match(missing.stderr, 'file not found');
  const empty = fs.mkdtempSync(path.join(dir, 'cwd-'));
  const noDefault = run(['config', 'check'], empty);
  t.equal(noDefault.status, 1, 'conf/deployment.toml is looked up under the working directory');
  t.match(noDefault.stderr, 'conf/deployment.toml: error CONFIG_IO');
  for (const args of [
    [],
    ['bogus'],
    ['config'],
    ['config', 'lint'],
    ['config', 'check', '--nope'],
    ['config', 'check', '--config'],
    ['start', '--sys', 'novalue'],
  ]) {
    const r = run(args);
    t.equal(r.status, 2, `${args.join(' ') || '(no arguments)'} → exit 2`);
    t.match(r.stderr, 'Usage: throughway');
  }
  const help = run(['--help']);
  t.equal(help.status, 0);
  t.match(help.stdout, 'config check');
  t.match(help.stdout, '--sys NAME=VALUE');
  t.match(run(['--version']).stdout, /^throughway \d+\.\d+\.\d+/);
});

t.test('the CLI file is an executable node script', async (t) => {
  t.match(fs.readFileSync(CLI, 'utf8'), /^#!\/usr\/bin\/env node\n/);
});
