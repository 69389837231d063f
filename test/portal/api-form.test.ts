/**
 * The publisher form's field groups without a server: endpoint advanced configuration, the CORS
 * override and resource line options, each prefilled from a file, written to it, and checked by the
 * gateway's validator with the error beside its field; a commented file edited through the form keeps
 * every comment and reads back as the expected object.
 */
import t from 'tap';
import * as toml from 'toml';
import { API_FIELDS, parseApiText } from '../../lib/gateway/apis';
import { apiObject, checkForm, CORS_KEYS, emptyForm, ENDPOINT_KEYS, fieldOf, formFromText } from '../../lib/portal/api-form';

const base = { ...emptyForm(), name: 'Shop', context: '/shop', production: 'http://127.0.0.1:9/v1', resources: 'GET /items' };

t.test('the form edits every endpoint key of the format but url, security and allow_management_port', async (t) => {
  const endpoints = API_FIELDS.find((f) => f.key === 'endpoints');
  const endpoint = endpoints?.fields?.find((f) => f.key === 'production');
  // allow_management_port opens the node's own admin API to the API's clients: only a file writer sets it.
  const keys = (endpoint?.fields ?? []).map((f) => f.key).filter((k) => k !== 'url' && k !== 'security' && k !== 'allow_management_port');
  t.same(Object.keys(ENDPOINT_KEYS).sort(), keys.sort(), 'ENDPOINT_KEYS follows lib/gateway/apis.ts');
  const cors = API_FIELDS.find((f) => f.key === 'cors')?.fields?.map((f) => f.key) ?? [];
  t.same(CORS_KEYS.map(([, k]) => k).sort(), [...cors].sort(), 'CORS_KEYS follows lib/gateway/apis.ts');
});

t.test('endpoint advanced configuration: written, prefilled, checked beside its field', async (t) => {
  const f = {
    ...base,
    production_timeout: '5s',
    production_retry_codes: '101503, 101504',
    production_retry_count: '2',
    production_suspend_codes: '101503',
    production_suspend_duration: '10000',
    production_suspend_factor: '1.5',
    production_max_tps: '100',
    sandbox: 'http://127.0.0.1:9/sb',
    sandbox_timeout: '3s',
  };
  const r = checkForm(f, '', {});
  t.same(r.errors, {});
  const api = parseApiText(r.text, '').api;
  t.equal(api?.endpoints.production?.timeout, 5000);
  t.same(api?.endpoints.production?.retryCodes, [101503, 101504]);
  t.equal(api?.endpoints.production?.retryCount, 2);
  t.same(api?.endpoints.production?.suspendCodes, [101503]);
  t.equal(api?.endpoints.production?.suspendDuration, 10000);
  t.equal(api?.endpoints.production?.suspendFactor, 1.5);
  t.equal(api?.endpoints.production?.maxTps, 100);
  t.equal(api?.endpoints.sandbox?.timeout, 3000);
  const back = formFromText(r.text)?.form;
  t.equal(back?.production_timeout, '5s', 'prefilled as written');
  t.equal(back?.production_retry_codes, '101503, 101504');
  t.equal(back?.production_suspend_duration, '10000');
  t.equal(back?.sandbox_timeout, '3s');
  t.equal(back?.sandbox_retry_count, '', 'a key not written is empty');
  const plain = checkForm(base, '', {});
  t.match(plain.text, /^production = "http:\/\/127\.0\.0\.1:9\/v1"$/m, 'a URL alone stays a string');

  const bad = checkForm(
    {
      ...base,
      production_timeout: 'soon',
      production_retry_count: 'many',
      production_suspend_codes: '101503, 900901',
      sandbox_max_tps: '5',
    },
    '',
    {},
  );
  t.match(
    bad.errors.production_timeout,
    /^Production endpoint response timeout: /,
    'a bad duration beside the timeout, the field named in words',
  );
  t.notMatch(bad.errors.production_timeout, /endpoints\./, 'not by its internal path');
  t.match(bad.errors.production_retry_count, /^Production endpoint retries at most: /, 'a word for a number beside the retry count');
  t.match(
    bad.errors.production_suspend_codes,
    /900901 is not a backend-side transport code/,
    'a code of another side beside the suspend codes',
  );
  t.match(bad.errors.sandbox, /advanced configuration needs its URL/, 'settings without a URL');
  t.equal(fieldOf('endpoints.sandbox.retry_codes[1]'), 'sandbox_retry_codes');
  t.equal(fieldOf('endpoints.production.security.type'), 'production', 'security is not on the form: beside the URL');
});

t.test('CORS: every key of the override', async (t) => {
  const f = {
    ...base,
    cors_enable: 'true',
    cors_origins: 'https://a.example https://b.example',
    cors_methods: 'GET, POST',
    cors_headers: 'Authorization, Content-Type',
    cors_credentials: 'true',
  };
  const r = checkForm(f, '', {});
  t.same(r.errors, {});
  t.same(parseApiText(r.text, '').api?.cors, {
    enable: true,
    allowOrigins: ['https://a.example', 'https://b.example'],
    allowMethods: ['GET', 'POST'],
    allowHeaders: ['Authorization', 'Content-Type'],
    allowCredentials: true,
  });
  t.match(formFromText(r.text)?.form, { cors_enable: 'true', cors_methods: 'GET, POST', cors_credentials: 'true' }, 'prefilled');
  const off = checkForm({ ...base, cors_enable: 'false' }, '', {});
  t.same(parseApiText(off.text, '').api?.cors, { enable: false });
  t.equal(parseApiText(checkForm(base, '', {}).text, '').api?.cors, undefined, 'nothing set: no override');
  const bad = checkForm({ ...base, cors_credentials: 'maybe' }, '', {});
  t.match(bad.errors.cors_credentials, /^CORS allow credentials: /, 'a value that is not yes or no beside its select');
});

t.test('resource lines: scopes, then key=value options; errors name the line', async (t) => {
  const f = {
    ...base,
    resources: 'GET /items read\n\nPOST,PUT /items/{id} write policy=10KPerMin auth=none token_type=user unauthenticated_policy=Unlimited',
    policy: '',
  };
  const r = checkForm(f, '', {});
  t.same(r.errors, {});
  const api = parseApiText(r.text, '').api;
  t.match(api?.resources[1], {
    path: '/items/{id}',
    methods: ['POST', 'PUT'],
    scopes: ['write'],
    policy: '10KPerMin',
    auth: 'none',
    tokenType: 'user',
    unauthenticatedPolicy: 'Unlimited',
  });
  t.equal(
    formFromText(r.text)?.form.resources,
    'GET /items read\nPOST,PUT /items/{id} write policy=10KPerMin auth=none token_type=user unauthenticated_policy=Unlimited',
    'prefilled in the same syntax',
  );
  t.match(
    checkForm({ ...f, resources: 'GET /a\nGET /b colour=red' }, '', {}).errors.resources,
    /^line 2: colour= is not a resource option/,
  );
  t.match(
    checkForm({ ...f, resources: 'GET /a\n\nGET /b token_type=robot' }, '', {}).errors.resources,
    /^line 3, token type: "robot" is not allowed/,
    "the validator's error names the text line, blank lines counted",
  );
  const policies = { api: new Set(['10KPerMin']), subscription: new Set(['Unlimited']) };
  t.match(
    checkForm({ ...f, resources: 'GET /a policy=Nope' }, '', {}, undefined, undefined, policies).errors.resources,
    /^line 1, throttling policy: /,
    'a policy the policies file lacks',
  );
  t.match(
    checkForm({ ...f, policy: 'Nope' }, '', {}, undefined, undefined, policies).errors.policy,
    /^Throttling policy: /,
    'the API-level policy too',
  );
});

const COMMENTED = `# Orders API: maintained by hand and by the publisher.
name = "Orders"     # shown in the catalogue
context = "/orders"
version = "1.0.0"
auth = "oauth2"
labels = ["Default"]
mutual_ssl = "off" # not on the form

# Backends: the sandbox is a stub.
[endpoints]
# Live.
production = "http://127.0.0.1:9/live"

[endpoints.sandbox]
url = "http://127.0.0.1:9/stub"
timeout = "2s" # the stub is quick

# CORS for the web shop.
[cors]
allow_origins = ["https://shop.example"]

# Listing.
[[resources]]
path = "/orders"
methods = ["GET"]
scopes = ["read"]

# Creating: throttled.
[[resources]]
path = "/orders"
methods = ["POST"]
policy = "10KPerMin" # busy hours

[[scopes]]
name = "read"
description = "Read orders" # kept: not on the form
roles = ["subscriber"]

[mediation]
request_format = "json" # not on the form
`;

t.test('a commented file edited through the form keeps every comment line and reads back as expected', async (t) => {
  const p = formFromText(COMMENTED);
  if (p === undefined) throw new Error('unreadable');
  t.equal(p.form.resources, 'GET /orders read\nPOST /orders policy=10KPerMin');
  t.equal(p.form.sandbox_timeout, '2s');
  const f = {
    ...p.form,
    description: 'All orders',
    production_timeout: '5s',
    sandbox_timeout: '3s',
    cors_methods: 'GET, POST',
    resources: 'GET /orders read policy=20KPerMin\nPOST /orders policy=10KPerMin\nDELETE /orders/{id} write',
    scopes: 'read: subscriber, admin',
  };
  const r = checkForm(f, '', {}, { text: COMMENTED, raw: p.raw }, 'PUBLISHED');
  t.same(r.errors, {});
  t.equal(r.written, 'edited');
  const comments = (s: string): string[] => s.split('\n').flatMap((l) => /#.*$/.exec(l)?.[0] ?? []);
  t.same(comments(r.text), comments(COMMENTED), 'every comment, in order');
  const expected = apiObject(f, p.raw, 'PUBLISHED');
  t.same(toml.parse(r.text), expected, "reads back as the form's object");
  t.match(
    expected,
    {
      mutual_ssl: 'off',
      mediation: { request_format: 'json' },
      scopes: [{ name: 'read', description: 'Read orders', roles: ['subscriber', 'admin'] }],
    },
    'keys the form does not show stay',
  );
  t.match(r.text, /^timeout = "3s" # the stub is quick$/m, "a changed value keeps its line's comment");
  t.match(r.text, /^policy = "20KPerMin"$/m);
  t.match(r.text, /^state = "PUBLISHED"$/m);
  t.match(
    r.text,
    /# Creating: throttled\.\n\[\[resources\]\]\npath = "\/orders"\nmethods = \["POST"\]\npolicy = "10KPerMin" # busy hours\n/,
    'an unchanged resource is untouched',
  );
  const unchanged = checkForm(p.form, '', {}, { text: COMMENTED, raw: p.raw }, 'CREATED');
  t.equal(unchanged.text, COMMENTED, 'saving an unchanged form writes the same bytes');
});
