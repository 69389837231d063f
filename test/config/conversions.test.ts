/**
 * How written values become typed values (docs/configuration.md): quoted dotted keys equal the nested form, 'TRUE' and
 * 'FALSE' are booleans, durations become milliseconds, comma lists accept arrays, string keys accept
 * booleans and numbers; and what is rejected, with which code.
 */
import t from 'tap';
import { brief, errors, load } from './helpers';

t.test('a quoted dotted key and the nested form are the same key (spec 000, part 1)', async (t) => {
  const quoted = load("[passthru_http]\n'http.socket.timeout' = 5000\n'http.headers.preserve' = \"Content-Type, Date\"\n");
  const nested = load('[passthru_http]\nhttp.socket.timeout = 5000\nhttp.headers.preserve = "Content-Type, Date"\n');
  const table = load('[passthru_http.http.socket]\ntimeout = 5000\n[passthru_http.http.headers]\npreserve = "Content-Type, Date"\n');
  t.same(brief(quoted), []);
  t.same(brief(nested), []);
  t.same(brief(table), []);
  t.equal(quoted.config.passthru_http.http.socket.timeout, 5000);
  t.same(quoted.config.passthru_http, nested.config.passthru_http, 'quoted = dotted');
  t.same(quoted.config.passthru_http, table.config.passthru_http, 'quoted = sub-table');
  const mixed = load("[transport.blocking_http]\nsender.parameters.'http.proxyPort' = 3128\n");
  t.same(brief(mixed), [], 'a quoted dotted key inside a dotted key');
});

t.test('writing a key in both forms is a duplicate on the second line', async (t) => {
  const r = load("[passthru_http]\n'http.socket.timeout' = 5000\nhttp.socket.timeout = 6000\n");
  t.match(errors(r), [{ code: 'CONFIG_DUPLICATE', key: 'passthru_http.http.socket.timeout', line: 3 }]);
  t.match(errors(r)[0]?.message, /line 2/);
  // A result with errors cannot be used by mistake (docs/embedding.md): its config throws CONFIG_INVALID.
  t.throws(() => r.config, { code: 'CONFIG_INVALID' }, 'the result with the duplicate cannot be used');
});

t.test("'TRUE' and 'FALSE' in any case are booleans in boolean-string keys", async (t) => {
  const r = load(
    '[apim.jwt]\nenable = "TRUE"\nenable_user_claims = "False"\n[super_admin]\ncreate_admin_account = "true"\n[apim.analytics]\nenable = false\n',
  );
  t.same(brief(r), []);
  t.equal(r.config.apim.jwt.enable, true);
  t.equal(r.config.apim.jwt.enable_user_claims, false);
  t.equal(r.config.super_admin.create_admin_account, true);
  t.equal(r.config.apim.analytics.enable, false, 'a TOML boolean too');
  const bad = load('[apim.jwt]\nenable = "yes"\n');
  t.match(errors(bad), [{ code: 'CONFIG_TYPE', key: 'apim.jwt.enable', line: 2, expected: 'true or false' }]);
});

t.test('boolean keys accept "true"/"false" text as the spec writes them', async (t) => {
  const r = load('[transport.https.properties]\nbindOnInit = "false"\nSSLEnabled = "TRUE"\n');
  t.same(brief(r), []);
  t.equal(r.config.transport.https.properties.bindOnInit, false);
  t.equal(r.config.transport.https.properties.SSLEnabled, true);
});

t.test('durations become milliseconds; a bare number is in the unit of the key', async (t) => {
  const cases: [string, number][] = [
    ['"900s"', 900_000],
    ['"15 m"', 900_000],
    ['"15m"', 900_000],
    ['"2m"', 120_000],
    ['"200s"', 200_000],
    ['"1000ms"', 1000],
    ['"1h"', 3_600_000],
    ['15', 900_000],
    ['"15"', 900_000],
    ['"1.5 h"', 5_400_000],
  ];
  for (const [written, ms] of cases) {
    // apim.cache.gateway_token.expiry_time is written in minutes (spec 000, Caches: "15 m", sample 900s).
    const r = load(`[apim.cache.gateway_token]\nexpiry_time = ${written}\n`);
    t.same(brief(r), [], written);
    t.equal(r.config.apim.cache.gateway_token.expiry_time, ms, `${written} → ${ms} ms`);
  }
  const ms = load('[passthru_http]\nhttp.socket.timeout = 180000\n');
  t.equal(ms.config.passthru_http.http.socket.timeout, 180000, 'a key in milliseconds keeps a bare number');
  const secs = load('[passthru_http]\nhttp.socket.timeout = "3m"\n');
  t.equal(secs.config.passthru_http.http.socket.timeout, 180000, 'and converts a unit');
  const bad = load('[apim.cache.gateway_token]\nexpiry_time = "soon"\n');
  t.match(errors(bad), [{ code: 'CONFIG_DURATION', key: 'apim.cache.gateway_token.expiry_time', line: 2 }]);
  t.match(errors(bad)[0]?.expected, /minutes/, 'the expected form names the unit');
});

t.test('comma-list keys accept a comma string or an array', async (t) => {
  const text = load('[apim.cors]\nallow_methods = "GET, POST ,PUT"\n');
  const array = load('[apim.cors]\nallow_methods = ["GET", "POST", "PUT"]\n');
  t.same(text.config.apim.cors.allow_methods, ['GET', 'POST', 'PUT']);
  t.same(array.config.apim.cors.allow_methods, ['GET', 'POST', 'PUT']);
  const bad = load('[apim.cors]\nallow_methods = [["GET"]]\n');
  t.match(errors(bad), [{ code: 'CONFIG_TYPE', key: 'apim.cors.allow_methods', line: 2 }]);
});

t.test('string keys accept booleans and numbers, as real files write them', async (t) => {
  const r = load('[apim.open_tracer]\nremote_tracer.properties.hostname = 1234\n[apim.jwt]\nheader = true\n');
  t.same(brief(r), []);
  t.equal(r.config.apim.open_tracer.remote_tracer.properties.hostname, '1234');
  t.equal(r.config.apim.jwt.header, 'true');
});

t.test('integers accept numeric text and reject fractions and words', async (t) => {
  const ok = load('[server]\noffset = "2"\n');
  t.equal(ok.config.server.offset, 2);
  const frac = load('[server]\noffset = 1.5\n');
  t.match(errors(frac), [{ code: 'CONFIG_TYPE', key: 'server.offset', line: 2, expected: 'an integer' }]);
  const word = load('[server]\noffset = "one"\n');
  t.match(errors(word), [{ code: 'CONFIG_TYPE', key: 'server.offset', line: 2 }]);
});

t.test('allowed values, ranges, ports and URLs are checked', async (t) => {
  const role = load('[server]\nserver_role = "gateway"\n');
  t.match(errors(role), [{ code: 'CONFIG_ALLOWED', key: 'server.server_role', line: 2 }]);
  t.match(errors(role)[0]?.expected, /gateway-worker/);
  const range = load('[passthru_http]\nworker_pool_size_core = 0\n');
  t.match(errors(range), [{ code: 'CONFIG_RANGE', key: 'passthru_http.worker_pool_size_core', line: 2 }]);
  const port = load('[transport.passthru_http]\nlistener.parameters.port = 70000\n');
  t.match(errors(port), [
    { code: 'CONFIG_RANGE', key: 'transport.passthru_http.listener.parameters.port', line: 2, expected: 'a port number 0..65535' },
  ]);
  const url = load('[apim.key_manager]\nservice_url = "not a url"\n');
  t.match(errors(url), [{ code: 'CONFIG_URL', key: 'apim.key_manager.service_url', line: 2 }]);
  const token = load('[apim.key_manager]\nservice_url = "https://localhost:${mgt.transport.https.port}/services/"\n');
  t.same(brief(token), [], 'URLs holding runtime tokens are not checked');
});

t.test('a table where a value is expected, and a value where a table is expected', async (t) => {
  const r = load('[server]\nhostname = { a = 1 }\n[apim]\ncors = "on"\n');
  t.match(errors(r), [
    { code: 'CONFIG_TYPE', key: 'server.hostname', line: 2 },
    { code: 'CONFIG_TYPE', key: 'apim.cors', line: 4 },
  ]);
});

t.test('paths are resolved from the directory of the configuration file', async (t) => {
  const r = load('[throughway]\napis_dir = "my-apis"\n', { file: '/srv/gw/conf/deployment.toml' });
  t.same(brief(r), []);
  t.equal(r.config.throughway.apis_dir, '/srv/gw/conf/my-apis');
  t.equal(r.dir, '/srv/gw/conf');
});

t.test('a repeatable table written once as a plain table is one entry', async (t) => {
  const r = load(
    '[apim.gateway.environment]\nname = "Edge"\nws_endpoint = "ws://localhost:9099"\nhttps_endpoint = "https://localhost:8243"\n',
  );
  t.same(brief(r), []);
  t.equal(r.config.apim.gateway.environment.length, 1);
  t.equal(r.config.apim.gateway.environment[0]?.name, 'Edge');
});
