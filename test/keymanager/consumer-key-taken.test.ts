/**
 * POST /admin/v1/applications/{name}/keys with a caller-given consumerKey (docs/admin-api.md): a key held
 * by another client is refused before anything changes (the application keeps its working key), and the
 * refusal is the same whoever holds the key, so it names no tenant or application. The same key given
 * again by its own application replaces that client.
 */
import t from 'tap';
import { basic, json, postForm, startKeyManager, type Reply } from './helpers';

t.test('a taken consumer key is refused before the old key is deleted, naming no owner', async (t) => {
  const h = await startKeyManager();
  t.teardown(() => h.close());
  const A = `${h.url}/admin/v1`;
  await h.km.tenants.add({ domain: 'acme.test', admin: 'bossy', password: 'acme-pw-1' });
  await h.km.tenants.add({ domain: 'beta.test', admin: 'chief', password: 'beta-pw-1' });
  const acme = basic('bossy@acme.test', 'acme-pw-1');
  const beta = basic('chief@beta.test', 'beta-pw-1');
  const token = (key: string, secret: string): Promise<Reply> =>
    postForm(`${h.url}/oauth2/token`, { grant_type: 'client_credentials' }, basic(key, secret));

  t.equal((await json('POST', `${A}/applications`, { name: 'AcmeSecretApp' }, acme)).status, 201);
  const held = await json('POST', `${A}/applications/AcmeSecretApp/keys`, { consumerKey: 'shared-key-1' }, acme);
  t.equal(held.status, 201, held.text);

  t.equal((await json('POST', `${A}/applications`, { name: 'BetaApp' }, beta)).status, 201);
  t.equal((await json('POST', `${A}/applications`, { name: 'BetaOther' }, beta)).status, 201);
  const own = await json('POST', `${A}/applications/BetaApp/keys`, {}, beta);
  t.equal(own.status, 201, own.text);
  const ownKey = String(own.body.consumerKey);
  const ownSecret = String(own.body.consumerSecret);

  // Another tenant's key, and a key of another application of the same tenant, get one and the same answer.
  const other = await json('POST', `${A}/applications/BetaApp/keys`, { consumerKey: 'shared-key-1' }, beta);
  t.equal(other.status, 409, other.text);
  t.equal(other.body.error, 'conflict');
  for (const secret of ['acme', 'AcmeSecretApp', String(held.body.applicationId), 'tenant', 'application'])
    t.notOk(other.text.includes(secret), `the refusal does not name ${secret}`);
  const sibling = await json('POST', `${A}/applications/BetaOther/keys`, { consumerKey: ownKey }, beta);
  t.equal(sibling.status, 409, sibling.text);
  t.same(sibling.body, other.body, 'the same refusal whoever holds the key');

  // Nothing was deleted by the refusals: BetaApp's key still gets tokens, and the held key is still acme's.
  t.equal((await token(ownKey, ownSecret)).status, 200, "BetaApp's old key still works");
  t.equal((await h.store.getClient('shared-key-1'))?.applicationId, held.body.applicationId);
  t.equal((await token('shared-key-1', String(held.body.consumerSecret))).status, 200, "acme's key still works");

  // The same key given again by its own application replaces its client (the sync re-applying a key).
  const again = await json('POST', `${A}/applications/BetaApp/keys`, { consumerKey: ownKey }, beta);
  t.equal(again.status, 201, again.text);
  t.equal(again.body.replaced, ownKey);
  t.equal((await token(ownKey, ownSecret)).status, 401, 'the old secret is gone');
  t.equal((await token(ownKey, String(again.body.consumerSecret))).status, 200, 'the new secret works');
  // A free key replaces the old one.
  const fresh = await json('POST', `${A}/applications/BetaApp/keys`, { consumerKey: 'beta-key-2' }, beta);
  t.equal(fresh.status, 201, fresh.text);
  t.equal(fresh.body.replaced, ownKey);
  t.equal(await h.store.getClient(ownKey), undefined, 'the replaced client is deleted');
});
