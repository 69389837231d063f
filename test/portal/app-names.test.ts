/**
 * Application names with bidirectional formatting or control characters (docs/portal.md, "Security"):
 * refused at creation with a clear validation error through the admin API, dynamic client registration
 * and the developer portal; a name stored before (written to the store directly) is shown with the
 * character spelled out as [U+XXXX] on the key manager's sign-in page.
 */
import t from 'tap';
import { escapeHtml } from '../../lib/keymanager/signin-page';
import { adminAuth, json, startKeyManager } from '../keymanager/helpers';
import { hiddenField, req, signIn, startPortalNode } from './helpers';

const BAD = ['gpj\u202Eexe.txt', 'a\u202Ab', 'a\u2066b\u2069', 'a\u200Fb', 'a\u0007b', 'a\u0085b', 'a\u009bb'];

t.test('the admin API and client registration refuse them, naming the character', async (t) => {
  const h = await startKeyManager();
  t.teardown(() => h.close());
  for (const name of BAD) {
    const r = await json('POST', `${h.url}/admin/v1/applications`, { name }, adminAuth());
    t.equal(r.status, 400, `${JSON.stringify(name)}: 400`);
    t.match(r.body, {
      error: 'invalid_request',
      error_description: /^name contains the (bidirectional formatting|control) character U\+[0-9A-F]{4} at position \d+$/,
    });
  }
  t.match(await json('POST', `${h.url}/admin/v1/applications`, { name: 'gpj\u202Eexe.txt' }, adminAuth()), {
    body: { error_description: 'name contains the bidirectional formatting character U+202E at position 3' },
  });
  const dcr = await json(
    'POST',
    `${h.url}/client-registration/v0.17/register`,
    { client_name: 'x\u202Ey', grant_types: ['client_credentials'] },
    adminAuth(),
  );
  t.equal(dcr.status, 400, 'dynamic client registration too');
  t.match(JSON.stringify(dcr.body), /U\+202E/);
  t.equal(
    (await json('POST', `${h.url}/admin/v1/applications`, { name: 'Plain name \u05e9\u05dc\u05d5\u05dd' }, adminAuth())).status,
    201,
    'right-to-left letters themselves are fine',
  );
});

t.test('a name stored before is shown escaped', async (t) => {
  t.equal(escapeHtml('gpj\u202Eexe.txt'), 'gpj[U+202E]exe.txt');
  t.equal(escapeHtml('<b>\u2066x\u0000'), '&#60;b&#62;[U+2066]x[U+0000]');
  const h = await startKeyManager();
  t.teardown(() => h.close());
  const app = await h.store.createApplication({ name: 'Shop\u202Egpj.exe', owner: 'admin', tier: 'Unlimited', description: '' });
  const keys = await json(
    'POST',
    `${h.url}/admin/v1/applications/${encodeURIComponent(app.id)}/keys`,
    { grantTypes: ['authorization_code'], callbackUrl: 'http://127.0.0.1:1/cb' },
    adminAuth(),
  );
  t.equal(keys.status, 201, keys.text);
  const q = new URLSearchParams({
    response_type: 'code',
    client_id: String(keys.body.consumerKey),
    redirect_uri: 'http://127.0.0.1:1/cb',
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    code_challenge_method: 'S256',
  });
  const page = await (await fetch(`${h.url}/oauth2/authorize?${q}`)).text();
  t.match(page, /Shop\[U\+202E\]gpj\.exe/, 'the sign-in page spells the override out');
  t.notMatch(page, /\u202E/, 'and never sends it');
});

t.test('the developer portal refuses them with the validation error', async (t) => {
  const node = await startPortalNode();
  t.teardown(() => node.close());
  const cookie = await signIn(node.base);
  const csrf = hiddenField((await req(`${node.base}/devportal/applications`, cookie)).text, 'csrf');
  const r = await req(`${node.base}/devportal/applications`, cookie, { name: 'gpj\u202Eexe.txt', csrf });
  t.not(r.status, 303, 'not created');
  t.match(r.text, /name contains the bidirectional formatting character U\+202E at position 3/);
  t.notMatch(r.text, /\u202E/, 'the echoed name is escaped too');
  t.notOk(
    (await node.node.keyManager?.manager.listApplications('admin'))?.some((a) => a.name.includes('\u202E')),
    'nothing stored',
  );
});
