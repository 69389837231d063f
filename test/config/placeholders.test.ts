/**
 * Value references (spec 000, part 1.5): $env{NAME}, $sys{name}, $ref{section.key}, $conf{section.key};
 * runtime ${name} tokens stay. Each failure mode is an error with its code, the key and the line.
 */
import t from 'tap';
import { at, brief, errors, load } from './helpers';

t.test('$env{NAME} comes from options.env', async (t) => {
  const r = load('[server]\nhostname = "$env{HOST_NAME}"\n[super_admin]\nusername = "u-$env{WHO}-x"\n', {
    env: { HOST_NAME: 'gw.example.com', WHO: 'ops' },
  });
  t.same(brief(r), []);
  t.equal(r.config.server.hostname, 'gw.example.com');
  t.equal(r.config.super_admin.username, 'u-ops-x', 'interpolated inside text');
});

t.test('$env of a numeric key is converted with the key type', async (t) => {
  const r = load('[server]\noffset = "$env{OFFSET}"\n', { env: { OFFSET: '3' } });
  t.same(brief(r), []);
  t.equal(r.config.server.offset, 3);
  t.equal(r.ports.passthruHttp, 8283);
});

t.test('a missing environment variable is CONFIG_ENV_MISSING on its line', async (t) => {
  const r = load('[server]\nhostname = "localhost"\n\n[super_admin]\npassword = "$env{NOT_SET_ANYWHERE}"\n');
  const e = errors(r);
  t.equal(e.length, 1, brief(r).join('\n'));
  t.match(e[0], { code: 'CONFIG_ENV_MISSING', key: 'super_admin.password', line: 5, column: 1 });
  t.match(e[0]?.message, /NOT_SET_ANYWHERE/);
  t.notOk(r.ok);
});

t.test('$sys{name} comes from options.sys (the CLI fills it from --sys name=value)', async (t) => {
  const r = load('[server]\nhostname = "$sys{carbon.host}"\n', { sys: { 'carbon.host': 'node1.local' } });
  t.same(brief(r), []);
  t.equal(r.config.server.hostname, 'node1.local');
});

t.test('a $sys without a value is CONFIG_SYS_MISSING naming --sys', async (t) => {
  const r = load('[server]\nhostname = "$sys{carbon.host}"\n');
  t.match(errors(r), [{ code: 'CONFIG_SYS_MISSING', key: 'server.hostname', line: 2 }]);
  t.match(errors(r)[0]?.message, /--sys carbon\.host=/);
});

t.test('$ref and $conf take the value of another key, after defaults', async (t) => {
  const r = load(
    [
      '[super_admin]',
      'username = "root"',
      '[apim.key_manager]',
      'username = "$ref{super_admin.username}"',
      '[apim.event_hub]',
      'username = "$conf{super_admin.username}"',
      '[apim.jwt]',
      'header = "$ref{database.apim_db.validationQuery}"',
      '',
    ].join('\n'),
  );
  t.same(brief(r), []);
  t.equal(r.config.apim.key_manager.username, 'root', '$ref');
  t.equal(r.config.apim.event_hub.username, 'root', '$conf is the same lookup');
  t.equal(r.config.apim.jwt.header, 'SELECT 1', 'a reference to a key filled by its default');
});

t.test("schema defaults that are references follow the referenced key (the spec's $conf defaults)", async (t) => {
  const r = load('[super_admin]\nusername = "chief"\n');
  t.same(brief(r), []);
  t.equal(r.config.apim.key_manager.username, 'chief');
});

t.test('a value that is exactly one reference keeps the referenced type', async (t) => {
  const r = load(
    [
      '[apim.cors]',
      'allow_methods = ["GET", "HEAD"]',
      'allow_origins = ["https://app.example"]',
      'allow_credentials = true',
      '[passthru_http]',
      '\'http.headers.preserve\' = "$ref{apim.cors.allow_methods}"',
      '[apim.jwt]',
      'use_sha256_hash = "$ref{apim.cors.allow_credentials}"',
      '',
    ].join('\n'),
  );
  t.same(brief(r), []);
  t.same(r.config.passthru_http.http.headers.preserve, ['GET', 'HEAD'], 'a list stays a list');
  t.equal(r.config.apim.jwt.use_sha256_hash, true, 'a boolean stays a boolean');
});

t.test('a reference inside text is interpolated', async (t) => {
  const r = load('[server]\nhostname = "localhost"\n[apim.devportal]\nurl = "https://$ref{server.hostname}:9443/devportal"\n');
  t.same(brief(r), []);
  t.equal(r.config.apim.devportal.url, 'https://localhost:9443/devportal');
});

t.test('runtime ${name} tokens are left for the parts that fill them, and skip URL checks', async (t) => {
  const r = load('[server]\nbase_path = "${carbon.protocol}://${carbon.host}:${carbon.management.port}"\n');
  t.same(brief(r), []);
  t.equal(r.config.server.base_path, '${carbon.protocol}://${carbon.host}:${carbon.management.port}');
});

t.test('a reference to a missing key is CONFIG_REF_MISSING on its line, naming the chain', async (t) => {
  const r = load(
    [
      '[apim.key_manager]',
      'username = "$ref{super_admin.nickname}"',
      '[apim.event_hub]',
      'username = "$ref{apim.key_manager.username}"',
      '',
    ].join('\n'),
  );
  const e = errors(r);
  t.equal(e.length, 1, brief(r).join('\n'));
  t.match(e[0], { code: 'CONFIG_REF_MISSING', key: 'apim.key_manager.username', line: 2 });
  t.match(e[0]?.message, /super_admin\.nickname/);
  const direct = load('[apim.event_hub]\nusername = "$ref{apim.key_manager.user}"\n');
  t.match(errors(direct), [{ code: 'CONFIG_REF_MISSING', line: 2 }]);
  const chained = load(
    [
      '[apim.event_hub]',
      'username = "$ref{apim.key_manager.username}"',
      '[apim.key_manager]',
      'username = "$ref{super_admin.nickname}"',
      '',
    ].join('\n'),
  );
  t.match(errors(chained), [{ code: 'CONFIG_REF_MISSING', line: 4 }]);
  t.match(errors(chained)[0]?.message, /apim\.event_hub\.username → apim\.key_manager\.username → super_admin\.nickname/, 'the chain');
});

t.test('a reference cycle is one CONFIG_REF_CYCLE naming the whole chain', async (t) => {
  const text = [
    '[apim.key_manager]',
    'username = "$ref{apim.event_hub.username}"',
    '[apim.event_hub]',
    'username = "$ref{apim.workflow.username}"',
    '[apim.workflow]',
    'username = "$ref{apim.key_manager.username}"',
    '',
  ].join('\n');
  const r = load(text);
  const e = errors(r);
  t.equal(e.length, 1, brief(r).join('\n'));
  t.match(e[0], { code: 'CONFIG_REF_CYCLE', key: 'apim.key_manager.username', line: 2 });
  t.match(e[0]?.message, 'apim.key_manager.username → apim.event_hub.username → apim.workflow.username → apim.key_manager.username');
  const self = load('[server]\nhostname = "$ref{server.hostname}"\n');
  t.match(errors(self), [{ code: 'CONFIG_REF_CYCLE', key: 'server.hostname', line: 2 }]);
});

t.test('a malformed reference is CONFIG_REF_SYNTAX', async (t) => {
  const r = load('[server]\nhostname = "$ref{ no spaces allowed }"\n');
  t.match(errors(r), [{ code: 'CONFIG_REF_SYNTAX', key: 'server.hostname', line: 2 }]);
});

t.test('references reach entries of repeatable tables and keys outside the schema', async (t) => {
  const r = load(
    [
      '[keystore.tls]',
      'file_name = "tls.jks"',
      '[[apim.gateway.environment]]',
      'name = "Default"',
      'ws_endpoint = "ws://localhost:9099"',
      'https_endpoint = "https://localhost:8243"',
      '[server]',
      'hostname = "$ref{apim.gateway.environment[0].name}"',
      '[apim.jwt]',
      'header = "$ref{keystore.tls.file_name}"',
      '',
    ].join('\n'),
  );
  t.same(errors(r), []);
  t.equal(r.config.server.hostname, 'Default');
  t.equal(r.config.apim.jwt.header, 'tls.jks');
  t.equal(at(r.config, 'apim.gateway.environment[0].username'), 'admin', 'entry defaults reference [super_admin]');
});
