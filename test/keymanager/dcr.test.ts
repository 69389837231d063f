/**
 * Dynamic client registration at /client-registration/v0.<n>/register: RFC 7591 bodies and the
 * reference's clientName/grantType form, protected by the super admin's credentials.
 */
import t from 'tap';
import { adminAuth, basic, json, postForm, startKeyManager } from './helpers';

t.test('RFC 7591 registration, then a token with the new client', async (t) => {
  const h = await startKeyManager();
  t.teardown(() => h.close());
  const r = await json(
    'POST',
    `${h.url}/client-registration/v0.17/register`,
    { client_name: 'mobile', grant_types: ['client_credentials', 'refresh_token'], redirect_uris: ['https://app.example/cb'] },
    adminAuth(),
  );
  t.equal(r.status, 201, r.text);
  t.match(r.body, {
    client_name: 'mobile',
    grant_types: ['client_credentials', 'refresh_token'],
    redirect_uris: ['https://app.example/cb'],
    client_secret_expires_at: 0,
  });
  t.type(r.body.client_id, 'string');
  t.type(r.body.client_secret, 'string');
  const tok = await postForm(
    `${h.url}/oauth2/token`,
    { grant_type: 'client_credentials' },
    basic(String(r.body.client_id), String(r.body.client_secret)),
  );
  t.equal(tok.status, 200);
  const pw = await postForm(
    `${h.url}/oauth2/token`,
    { grant_type: 'password', username: 'admin', password: 'admin-pw-1' },
    basic(String(r.body.client_id), String(r.body.client_secret)),
  );
  t.match(pw.body, { error: 'unauthorized_client' }, 'only the registered grant types');
  t.ok(h.events.some((e) => e.name === 'application.added'));
});

t.test("the reference's form, on any v0.<n>", async (t) => {
  const h = await startKeyManager();
  t.teardown(() => h.close());
  for (const v of ['v0.14', 'v0.15']) {
    // The reference's documented body, callbackUrl "www.google.lk" included, is accepted and kept as given.
    const ok = await json(
      'POST',
      `${h.url}/client-registration/${v}/register`,
      { callbackUrl: 'www.google.lk', clientName: `rest_api_${v}`, owner: 'admin', grantType: 'password refresh_token', saasApp: true },
      adminAuth(),
    );
    t.equal(ok.status, 200, ok.text);
    t.match(ok.body, { clientName: `rest_api_${v}`, callBackURL: 'www.google.lk', appOwner: 'admin', isSaasApplication: true });
    t.type(ok.body.clientId, 'string');
    t.type(ok.body.clientSecret, 'string');
    t.same(JSON.parse(String(ok.body.jsonString)), {
      grant_types: 'password refresh_token',
      redirect_uris: 'www.google.lk',
      client_name: `rest_api_${v}`,
    });
    const bad = await json(
      'POST',
      `${h.url}/client-registration/${v}/register`,
      { callbackUrl: 'www.google.lk\r\nX: y', clientName: `cr_${v}`, grantType: 'password' },
      adminAuth(),
    );
    t.match(bad, {
      status: 400,
      body: { error: 'invalid_redirect_uri', error_description: /callbackUrl contains the control character U\+000D/ },
    });
  }
});

t.test('registration failures', async (t) => {
  const h = await startKeyManager();
  t.teardown(() => h.close());
  const url = `${h.url}/client-registration/v0.15/register`;
  const none = await json('POST', url, { client_name: 'x' });
  t.match(none, { status: 401, body: { error: 'invalid_token' } }, 'no credentials');
  t.match(none.headers.get('www-authenticate'), /^Bearer, Basic/);
  t.match(
    await json('POST', url, { client_name: 'x', redirect_uris: ['relative/cb'] }, adminAuth()),
    { status: 400, body: { error: 'invalid_redirect_uri' } },
    'RFC 7591 redirect URIs are absolute',
  );
  t.match(
    await json('POST', url, { client_name: 'x', redirect_uris: ['https://a.example/cb#frag'] }, adminAuth()),
    { status: 400, body: { error: 'invalid_redirect_uri' } },
    'no fragment',
  );
  t.match(await json('POST', url, { client_name: 'x\u0000y' }, adminAuth()), {
    status: 400,
    body: { error: 'invalid_client_metadata', error_description: /client_name contains the control character U\+0000/ },
  });
  t.match(await json('POST', url, { client_name: 'x'.repeat(256) }, adminAuth()), {
    status: 400,
    body: { error: 'invalid_client_metadata', error_description: /client_name is longer than 255/ },
  });
  t.match(await json('POST', url, { client_name: 'x' }, basic('admin', 'wrong')), { status: 401 }, 'wrong password');
  // A user without the admin role may not register.
  await json('POST', `${h.url}/admin/v1/users`, { username: 'dave1', password: 'dave-pw-1' }, adminAuth());
  t.match(await json('POST', url, { client_name: 'x' }, basic('dave1', 'dave-pw-1')), { status: 401 }, 'not an admin');
  t.match(await json('POST', url, {}, adminAuth()), { status: 400, body: { error: 'invalid_client_metadata' } }, 'no name');
  t.match(
    await json('POST', url, { client_name: 'x', grant_types: ['implicit'] }, adminAuth()),
    { status: 400, body: { error: 'invalid_client_metadata' } },
    'unknown grant',
  );
  t.match(await json('POST', url, { client_name: 'x', redirect_uris: 'https://a' }, adminAuth()), {
    status: 400,
    body: { error: 'invalid_redirect_uri' },
  });
  t.equal((await json('POST', url, { client_name: 'dup' }, adminAuth())).status, 201);
  t.match(await json('POST', url, { client_name: 'dup' }, adminAuth()), {
    status: 400,
    body: { error: 'invalid_client_metadata', error_description: /already exists/ },
  });
  const notJson = await fetch(url, {
    method: 'POST',
    headers: { Authorization: adminAuth(), 'Content-Type': 'application/json' },
    body: '{',
  });
  t.equal(notJson.status, 400);
  t.equal((await fetch(url, { headers: { Authorization: adminAuth() } })).status, 405);
});

t.test('an oversized body is refused with 413', async (t) => {
  const h = await startKeyManager();
  t.teardown(() => h.close());
  const r = await fetch(`${h.url}/oauth2/token`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: `grant_type=client_credentials&x=${'a'.repeat(200_000)}`,
  }).catch((err: unknown) => err as Error);
  // The server answers before reading the whole body; a client may see the answer or a reset.
  if (r instanceof Error) t.pass(`connection closed: ${r.message}`);
  else {
    t.equal(r.status, 413);
    t.match(await r.json(), { error: 'invalid_request', error_description: /larger than 65536/ });
  }
});
