/**
 * The pieces of backend security on their own: the Digest response of RFC 7616 §3.9.1's worked example,
 * challenge parsing, RFC 6749 §2.3.1 client encoding, and the API file's security table.
 */
import t from 'tap';
import { digestAuthorization, parseDigestChallenge } from '../../lib/security/digest';
import { BackendAuthorizer, BackendTokens, clientBasic, originOf, targetOrigin } from '../../lib/security/backend-credentials';
import { targetFromUrl } from '../../lib/transport/types';
import { faultDef } from '../../lib/faults';
import { parseApiText } from '../../lib/gateway/apis';

const RFC_CHALLENGE = (alg: string): string[] => [
  'WWW-Authenticate',
  `Digest realm="http-auth@example.org", qop="auth, auth-int", algorithm=${alg}, nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS"`,
];

t.test('RFC 7616 §3.9.1: the example responses for MD5 and SHA-256', async (t) => {
  const base = {
    username: 'Mufasa',
    password: 'Circle of Life',
    method: 'GET',
    uri: '/dir/index.html',
    nc: 1,
    cnonce: 'f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ',
  };
  const md5 = parseDigestChallenge(RFC_CHALLENGE('MD5'));
  t.ok(md5);
  t.match(digestAuthorization(md5!, base), /response="8ca523f5e9506fed4657c9700eebdbec"/);
  const sha = parseDigestChallenge(RFC_CHALLENGE('SHA-256'));
  const h = digestAuthorization(sha!, base);
  t.match(h, /response="753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1"/);
  t.match(h, /nc=00000001, cnonce="f2\/wE4q74E6zIJEtWaHKaf5wv\/H5QzzpXusqGemxURZJ", qop=auth/);
  t.match(h, /opaque="FQhe\/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS"/);
});

t.test('challenge parsing: the strongest offered, unusable ones skipped', async (t) => {
  // RFC 7616 §3.7: with both offered, SHA-256 is chosen, whatever the order.
  const both = parseDigestChallenge([...RFC_CHALLENGE('MD5'), ...RFC_CHALLENGE('SHA-256')]);
  t.equal(both?.algorithm, 'SHA-256');
  const inOne = parseDigestChallenge([
    'www-authenticate',
    'Basic realm="x", Digest realm="a", nonce="n1", qop="auth", algorithm=SHA-256, Digest realm="a", nonce="n2", qop="auth"',
  ]);
  t.equal(inOne?.nonce, 'n1');
  t.equal(
    parseDigestChallenge(['WWW-Authenticate', 'Digest realm="a", nonce="n", qop="auth-int"']),
    undefined,
    'auth-int only: not answered',
  );
  t.equal(
    parseDigestChallenge(['WWW-Authenticate', 'Digest realm="a", nonce="n", algorithm=SHA-512-256, qop="auth"']),
    undefined,
    'an algorithm it does not have',
  );
  t.equal(parseDigestChallenge(['WWW-Authenticate', 'Bearer realm="a"']), undefined);
  t.equal(
    parseDigestChallenge(['WWW-Authenticate', `Digest realm="a", nonce="${'n'.repeat(5000)}", qop="auth"`]),
    undefined,
    'an oversized challenge is refused',
  );
  t.equal(parseDigestChallenge(['WWW-Authenticate', 'Digest realm="a", nonce="n", qop="auth", stale=TRUE'])?.stale, true);
  t.equal(parseDigestChallenge(['WWW-Authenticate', 'Digest realm="a\\"b", nonce="n", qop="auth"'])?.realm, 'a"b', 'quoted-pair unescaped');
});

t.test('RFC 6749 §2.3.1: client id and secret form-urlencoded before Basic', async (t) => {
  t.equal(clientBasic('id', 'sec ret:+'), `Basic ${Buffer.from('id:sec+ret%3A%2B').toString('base64')}`);
});

const API = (security: string, extra = ''): string =>
  `name = "a"\ncontext = "/a"\nversion = "1"\n${extra}[endpoints.production]\nurl = "http://127.0.0.1:9/x"\n[endpoints.production.security]\n${security}\n[[resources]]\npath = "/*"\nmethods = ["GET"]\n`;

t.test('the security table of an API file: what each type needs', async (t) => {
  const ok = parseApiText(
    API('type = "oauth"\ntoken_url = "https://idp/token"\nclient_id = "c"\nclient_secret = "s"\nparameters = { audience = "x" }'),
    'a.toml',
  );
  t.same(
    ok.diagnostics.filter((d) => d.level === 'error'),
    [],
  );
  const sec = ok.api?.endpoints.production?.security;
  t.equal(sec?.type, 'oauth');
  t.equal(sec?.oauth?.grantType, 'client_credentials');
  t.equal(sec?.oauth?.clientAuth, 'basic');
  t.equal(sec?.oauth?.timeout, 10000);
  t.same(sec?.oauth?.parameters, { audience: 'x' });
  const cases: [string, string, RegExp, string?][] = [
    ['type = "basic"\nusername = "u"', 'API_REQUIRED', /password is required for type = "basic"/],
    ['type = "digest"', 'API_REQUIRED', /username is required/],
    ['type = "oauth"\nclient_id = "c"\nclient_secret = "s"', 'API_REQUIRED', /token_url is required/],
    [
      'type = "oauth"\ngrant_type = "password"\ntoken_url = "http://i/t"\nclient_id = "c"\nclient_secret = "s"',
      'API_REQUIRED',
      /username is required for type = "oauth" with grant_type = "password"/,
    ],
    ['type = "oauth"\ntoken_url = "ftp://i/t"\nclient_id = "c"\nclient_secret = "s"', 'API_VALUE', /not an http:\/\/ or https:\/\/ URL/],
    [
      'type = "oauth"\ntoken_url = "http://i/t"\nclient_id = "c"\nclient_secret = "s"\nparameters = { grant_type = "x" }',
      'API_VALUE',
      /grant_type is set by the gateway/,
    ],
    [
      'type = "oauth"\ntoken_url = "http://i/t"\nclient_id = "c"\nclient_secret = "$env{TW_SURELY_UNSET_VARIABLE}"',
      'API_VALUE',
      /environment variable TW_SURELY_UNSET_VARIABLE is not set/,
    ],
    ['type = "kerberos"', 'API_ALLOWED', /not allowed/],
    ['type = "digest"\nusername = "u"\npassword = "p"', 'API_VALUE', /digest is not available for WebSocket APIs/, 'type = "WS"\n'],
  ];
  for (const [security, code, message, extra] of cases) {
    const r = parseApiText(API(security, extra), 'a.toml');
    t.equal(r.api, undefined, `${security} refused`);
    const d = r.diagnostics.find((x) => x.level === 'error');
    t.equal(d?.code, code, security);
    t.match(d?.message, message, security);
    t.ok((d?.line ?? 0) > 0, 'with its line');
  }
});

t.test('credentials are bound to an origin: another target gets `unbound` and no credential', async (t) => {
  for (const url of [
    'http://Orders.Example:80/v1',
    'https://orders.example/v1',
    'ws://127.0.0.1:9000',
    'wss://[::1]/x',
    'http://[2001:db8::1]:8080',
  ]) {
    t.equal(targetOrigin(targetFromUrl(url)), originOf(url), `the transport's target and the URL agree on ${url}`);
  }
  t.equal(originOf('https://orders.example/v1'), 'https://orders.example:443', 'the default port written out');
  t.equal(originOf('wss://h/x'), 'https://h:443', 'wss: is https:');
  t.equal(originOf('ftp://h/'), undefined);
  const r = parseApiText(
    'name = "A"\ncontext = "/a"\nversion = "1"\nauth = "none"\n[endpoints.production]\nurl = "http://127.0.0.1:9000/v1"\n[endpoints.production.security]\ntype = "basic"\nusername = "u"\npassword = "p"\n[[resources]]\npath = "/*"\nmethods = ["GET"]\n',
    'a.toml',
  );
  const sec = r.api?.endpoints.production?.security;
  t.equal(sec?.origin, 'http://127.0.0.1:9000', "no origin written: the URL's");
  const auth = new BackendAuthorizer(sec!, new BackendTokens(), undefined);
  t.equal(auth.authorization('GET', '/v1/x', 'http://127.0.0.1:9000'), `Basic ${Buffer.from('u:p').toString('base64')}`);
  const other = auth.authorization('GET', '/v1/x', 'http://127.0.0.1:9001');
  t.match(other, { kind: 'unbound' });
  t.match(
    (other as { description: string }).description,
    /bound to http:\/\/127\.0\.0\.1:9000 and the call goes to http:\/\/127\.0\.0\.1:9001/,
  );
  t.notMatch(JSON.stringify(other), /Basic|dTpw/, 'no credential in the error');
  t.equal(faultDef(103202)?.httpStatus, 500, 'the fault the send phase answers with (103202)');
});
