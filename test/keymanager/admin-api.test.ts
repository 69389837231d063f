/**
 * The JSON admin API (/admin/v1, super admin by HTTP Basic) and the events each change publishes
 * (docs/events.md).
 */
import t from 'tap';
import { adminAuth, basic, json, startKeyManager } from './helpers';

t.test('applications, keys, subscriptions and users, with their events', async (t) => {
  const h = await startKeyManager();
  t.teardown(() => h.close());
  const A = `${h.url}/admin/v1`;
  const auth = adminAuth();
  t.equal((await json('GET', `${A}/applications`)).status, 401, 'credentials required');
  t.equal((await json('GET', `${A}/applications`, undefined, basic('admin', 'x'))).status, 401);

  const app = await json('POST', `${A}/applications`, { name: 'Pizza App', tier: 'Gold', description: 'orders' }, auth);
  t.equal(app.status, 201);
  t.match(app.body, { name: 'Pizza App', owner: 'admin', tier: 'Gold', keys: [] });
  t.match(await json('POST', `${A}/applications`, { name: 'Pizza App' }, auth), { status: 409, body: { error: 'conflict' } });
  t.match(await json('POST', `${A}/applications`, {}, auth), { status: 400 });

  const prod = await json('POST', `${A}/applications/Pizza%20App/keys`, {}, auth);
  t.equal(prod.status, 201);
  t.match(prod.body, {
    application: 'Pizza App',
    keyType: 'PRODUCTION',
    grantTypes: ['client_credentials', 'password', 'refresh_token', 'urn:ietf:params:oauth:grant-type:jwt-bearer'],
  });
  const sandbox = await json('POST', `${A}/applications/Pizza%20App/keys`, { keyType: 'SANDBOX' }, auth);
  t.equal(sandbox.body.keyType, 'SANDBOX');
  t.match(await json('POST', `${A}/applications/Pizza%20App/keys`, { keyType: 'TEST' }, auth), { status: 400 });
  const got = await json('GET', `${A}/applications/Pizza%20App`, undefined, auth);
  t.same(
    (got.body.keys as { keyType: string }[]).map((k) => k.keyType),
    ['PRODUCTION', 'SANDBOX'],
  );
  t.notOk(got.text.includes(String(prod.body.consumerSecret)), 'secrets are shown only when generated');
  t.equal(((await json('GET', `${A}/applications`, undefined, auth)).body.list as unknown[]).length, 1);

  const sub = await json(
    'POST',
    `${A}/subscriptions`,
    { application: 'Pizza App', api: '/pizzashack', version: '1.0.0', tier: 'Gold' },
    auth,
  );
  t.equal(sub.status, 201, sub.text);
  t.match(sub.body, { application: 'Pizza App', apiContext: '/pizzashack', apiVersion: '1.0.0', state: 'UNBLOCKED' });
  t.match(await json('POST', `${A}/subscriptions`, { application: 'Pizza App', api: '/pizzashack', version: '1.0.0' }, auth), {
    status: 409,
  });
  t.match(await json('POST', `${A}/subscriptions`, { application: 'Nope', api: '/x', version: '1' }, auth), { status: 404 });
  const blocked = await json('PATCH', `${A}/subscriptions`, { application: 'Pizza App', api: 'pizzashack', state: 'BLOCKED' }, auth);
  t.match(blocked.body, { state: 'BLOCKED' });
  const prodOnly = await json('PATCH', `${A}/subscriptions/${String(sub.body.id)}`, { state: 'PROD_ONLY_BLOCKED' }, auth);
  t.match(prodOnly.body, { state: 'PROD_ONLY_BLOCKED' });
  t.match(await json('PATCH', `${A}/subscriptions/${String(sub.body.id)}`, { state: 'GONE' }, auth), { status: 400 });
  t.equal(((await json('GET', `${A}/subscriptions?application=Pizza%20App`, undefined, auth)).body.list as unknown[]).length, 1);
  t.equal(((await json('GET', `${A}/subscriptions?api=/other`, undefined, auth)).body.list as unknown[]).length, 0);

  const user = await json('POST', `${A}/users`, { username: 'erin1', password: 'erin-pw-1', roles: ['subscriber'] }, auth);
  t.match(user, { status: 201, body: { username: 'erin1', roles: ['subscriber'], hashMethod: 'SCRYPT' } });
  t.notOk('passwordHash' in user.body);
  t.match(await json('POST', `${A}/users`, { username: 'x', password: 'erin-pw-1' }, auth), {
    status: 400,
    body: { error_description: /UsernameJavaRegEx/ },
  });
  t.same(
    ((await json('GET', `${A}/users`, undefined, auth)).body.list as { username: string }[]).map((u) => u.username),
    ['admin', 'erin1'],
  );

  t.equal((await json('DELETE', `${A}/subscriptions/${String(sub.body.id)}`, undefined, auth)).status, 200);
  await json('POST', `${A}/subscriptions`, { application: 'Pizza App', api: '/menu', version: '2' }, auth);
  t.equal((await json('DELETE', `${A}/applications/Pizza%20App`, undefined, auth)).status, 200);
  t.equal((await json('DELETE', `${A}/applications/Pizza%20App`, undefined, auth)).status, 404);
  t.equal((await json('GET', `${A}/nothing`, undefined, auth)).status, 404);

  t.same(
    h.events.map((e) => e.name),
    [
      'application.added',
      'application.changed',
      'application.changed',
      'subscription.added',
      'subscription.changed',
      'subscription.changed',
      'subscription.removed',
      'subscription.added',
      'subscription.removed',
      'application.removed',
    ],
  );
  const changed = h.events.find((e) => e.name === 'subscription.changed');
  t.match(changed?.payload, { subscription: { state: 'BLOCKED', apiContext: '/pizzashack' }, previousState: 'UNBLOCKED' });
  const keysEvent = h.events.filter((e) => e.name === 'application.changed')[1];
  t.match(keysEvent?.payload, {
    application: { name: 'Pizza App', tier: 'Gold', keys: [{ keyType: 'PRODUCTION' }, { keyType: 'SANDBOX' }] },
  });
  for (const e of h.events) t.same(JSON.parse(JSON.stringify(e)), e, `${e.name} is plain JSON`);
});

t.test('PATCH an application: tier and description, published as application.changed', async (t) => {
  const h = await startKeyManager();
  t.teardown(() => h.close());
  const A = `${h.url}/admin/v1`;
  const auth = adminAuth();
  await json('POST', `${A}/applications`, { name: 'Tiered', tier: 'Gold', description: 'before' }, auth);
  await json('POST', `${A}/applications/Tiered/keys`, {}, auth);
  h.events.length = 0;
  const patched = await json('PATCH', `${A}/applications/Tiered`, { tier: '20PerMin', description: 'after' }, auth);
  t.equal(patched.status, 200, patched.text);
  t.match(patched.body, { name: 'Tiered', owner: 'admin', tier: '20PerMin', description: 'after', keys: [{ keyType: 'PRODUCTION' }] });
  t.match((await json('GET', `${A}/applications/Tiered`, undefined, auth)).body, { tier: '20PerMin', description: 'after' }, 'stored');
  t.same(
    h.events.map((e) => e.name),
    ['application.changed'],
  );
  t.match(
    h.events[0]?.payload,
    { application: { name: 'Tiered', tier: '20PerMin', keys: [{ keyType: 'PRODUCTION' }] } },
    'gateways hear the new tier with the keys',
  );
  const onlyDescription = await json('PATCH', `${A}/applications/Tiered`, { description: 'again' }, auth);
  t.match(onlyDescription.body, { tier: '20PerMin', description: 'again' }, 'a field not given is kept');
  t.match(await json('PATCH', `${A}/applications/Tiered`, { tier: 5 }, auth), { status: 400, body: { error: 'invalid_request' } });
  t.match(await json('PATCH', `${A}/applications/Tiered`, { tier: ' ' }, auth), { status: 400, body: { error: 'invalid_request' } });
  t.match(await json('PATCH', `${A}/applications/Tiered`, { description: 'a\u0000b' }, auth), {
    status: 400,
    body: { error: 'invalid_request' },
  });
  t.match(await json('PATCH', `${A}/applications/Nope`, { tier: 'Gold' }, auth), { status: 404 });
  t.equal((await json('PATCH', `${A}/applications/Tiered`, { tier: 'Gold' })).status, 401, 'credentials required');
  t.match(
    (await json('GET', `${A}/applications/Tiered`, undefined, auth)).body,
    { tier: '20PerMin', description: 'again' },
    'refused changes change nothing',
  );
});

t.test('the snapshot a gateway starts from', async (t) => {
  const h = await startKeyManager();
  t.teardown(() => h.close());
  const A = `${h.url}/admin/v1`;
  const auth = adminAuth();
  await json('POST', `${A}/applications`, { name: 'S1', tier: 'Gold' }, auth);
  const keys = await json('POST', `${A}/applications/S1/keys`, {}, auth);
  await json('POST', `${A}/subscriptions`, { application: 'S1', api: '/pizzashack', version: '1.0.0', state: 'BLOCKED' }, auth);
  const tok = await fetch(`${h.url}/oauth2/token`, {
    method: 'POST',
    headers: {
      Authorization: basic(String(keys.body.consumerKey), String(keys.body.consumerSecret)),
      'Content-Type': 'application/x-www-form-urlencoded',
    },
    body: 'grant_type=client_credentials',
  });
  const at = ((await tok.json()) as { access_token: string }).access_token;
  await fetch(`${h.url}/oauth2/revoke`, {
    method: 'POST',
    headers: {
      Authorization: basic(String(keys.body.consumerKey), String(keys.body.consumerSecret)),
      'Content-Type': 'application/x-www-form-urlencoded',
    },
    body: `token=${at}`,
  });
  const snap = await json('GET', `${A}/snapshot`, undefined, auth);
  t.equal(snap.status, 200);
  t.match(snap.body, {
    applications: [{ name: 'S1', tier: 'Gold', keys: [{ consumerKey: keys.body.consumerKey, keyType: 'PRODUCTION' }] }],
    subscriptions: [{ apiContext: '/pizzashack', apiVersion: '1.0.0', state: 'BLOCKED' }],
    revoked: [{ jti: String(JSON.parse(Buffer.from(at.split('.')[1] ?? '', 'base64url').toString()).jti) }],
  });
  t.type(snap.body.time, 'number');
  t.notOk(snap.text.includes(String(keys.body.consumerSecret)), 'no secret in the snapshot');
});
