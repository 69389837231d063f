/**
 * urn:ietf:params:oauth:grant-type:saml2-bearer (RFC 7522 §2.1): an identity provider's key pair and
 * self-signed certificate made here (node-forge), assertions signed here with xml-crypto (enveloped,
 * RSA-SHA256, exclusive c14n), posted to the real token endpoint over HTTP. A good one gets a user token;
 * each refusal of docs/key-manager.md, "SAML 2.0 bearer", is its own assertion, answered 400 invalid_grant
 * with its code.
 */
import t, { type Test } from 'tap';
import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import forge from 'node-forge';
import { SignedXml } from 'xml-crypto';
import { appWithKeys, basic, decodePayload, postForm, startKeyManager, type Harness } from './helpers';
import { echoBackend, request } from '../gateway/helpers';
import { NODE_TOML, startTestNode } from '../observability/node-helpers';
import { ADMIN, http, securedApi } from '../scale/helpers';

const GRANT = 'urn:ietf:params:oauth:grant-type:saml2-bearer';
const IDP = 'https://idp.example/saml';
const ALIAS = 'https://throughway.example/oauth2/token';

/** An RSA key pair and a self-signed certificate for it, as PEM. */
function identityProvider(cn: string): { key: string; cert: string } {
  const keys = forge.pki.rsa.generateKeyPair(2048);
  const cert = forge.pki.createCertificate();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = '01';
  cert.validity.notBefore = new Date(Date.now() - 60_000);
  cert.validity.notAfter = new Date(Date.now() + 86_400_000);
  const attrs = [{ name: 'commonName', value: cn }];
  cert.setSubject(attrs);
  cert.setIssuer(attrs);
  cert.sign(keys.privateKey, forge.md.sha256.create());
  return { key: forge.pki.privateKeyToPem(keys.privateKey), cert: forge.pki.certificateToPem(cert) };
}

interface Shape {
  id?: string;
  issuer?: string;
  audience?: string;
  recipient?: string;
  notOnOrAfter?: number;
  confirmUntil?: number;
  subject?: string;
  notBefore?: number;
  method?: string;
}

function assertionXml(s: Shape = {}): string {
  const now = Date.now();
  const iso = (ms: number): string => new Date(ms).toISOString();
  return (
    `<saml:Assertion xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="${s.id ?? `_${randomUUID()}`}" Version="2.0" IssueInstant="${iso(now)}">` +
    `<saml:Issuer>${s.issuer ?? IDP}</saml:Issuer>` +
    `<saml:Subject><saml:NameID>${s.subject ?? 'carol'}</saml:NameID>` +
    `<saml:SubjectConfirmation Method="${s.method ?? 'urn:oasis:names:tc:SAML:2.0:cm:bearer'}">` +
    `<saml:SubjectConfirmationData NotOnOrAfter="${iso(s.confirmUntil ?? now + 300_000)}" Recipient="${s.recipient ?? ALIAS}"/>` +
    `</saml:SubjectConfirmation></saml:Subject>` +
    `<saml:Conditions NotBefore="${iso(s.notBefore ?? now - 60_000)}" NotOnOrAfter="${iso(s.notOnOrAfter ?? now + 300_000)}">` +
    `<saml:AudienceRestriction><saml:Audience>${s.audience ?? ALIAS}</saml:Audience></saml:AudienceRestriction></saml:Conditions>` +
    `<saml:AuthnStatement AuthnInstant="${iso(now)}"><saml:AuthnContext><saml:AuthnContextClassRef>urn:oasis:names:tc:SAML:2.0:ac:classes:Password</saml:AuthnContextClassRef></saml:AuthnContext></saml:AuthnStatement>` +
    `</saml:Assertion>`
  );
}

/** Signs the Assertion element: enveloped signature after its Issuer (SAML core §5.4.1), RSA-SHA256, exclusive c14n. */
function sign(xml: string, key: string): string {
  const sig = new SignedXml({
    privateKey: key,
    signatureAlgorithm: 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256',
    canonicalizationAlgorithm: 'http://www.w3.org/2001/10/xml-exc-c14n#',
  });
  sig.addReference({
    xpath: "//*[local-name(.)='Assertion']",
    transforms: ['http://www.w3.org/2000/09/xmldsig#enveloped-signature', 'http://www.w3.org/2001/10/xml-exc-c14n#'],
    digestAlgorithm: 'http://www.w3.org/2001/04/xmlenc#sha256',
  });
  sig.computeSignature(xml, { location: { reference: "//*[local-name(.)='Issuer']", action: 'after' } });
  return sig.getSignedXml();
}

const b64 = (xml: string): string => Buffer.from(xml, 'utf8').toString('base64url');

/** A key manager trusting IDP with `cert` (its file in a directory removed at the end), ALIAS its audience. */
async function trusting(t: Test, cert: string): Promise<Harness> {
  const dir = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'tw-saml-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const certFile = path.join(dir, 'idp.pem');
  fs.writeFileSync(certFile, cert);
  const h = await startKeyManager(
    `[[oauth.grant_type.saml_bearer.identity_provider]]\nissuer = "${IDP}"\ncertificate_file = "${certFile}"\naudience = "${ALIAS}"\n`,
  );
  t.teardown(() => h.close());
  return h;
}

t.test('saml2-bearer: a signed assertion gets a user token; each refusal has its code', async (t) => {
  const idp = identityProvider('idp.example');
  const rogue = identityProvider('rogue.example');
  const h = await trusting(t, idp.cert);
  const { key, secret } = await appWithKeys(h, 'App1', { grantTypes: [GRANT, 'refresh_token'] });
  const token = (assertion: string) => postForm(`${h.url}/oauth2/token`, { grant_type: GRANT, assertion }, basic(key, secret));

  const good = sign(assertionXml(), idp.key);
  const ok = await token(b64(good));
  t.equal(ok.status, 200, ok.status === 200 ? 'a signed assertion: 200' : ok.text);
  t.match(decodePayload(String(ok.body.access_token)), { sub: 'carol', aut: 'APPLICATION_USER', client_id: key });
  const replay = await token(b64(good));
  t.match(replay, { status: 400, body: { error: 'invalid_grant', error_description: /^SAML_REPLAYED:/ } }, 'replayed');

  // This server's own token endpoint URL is an audience and recipient without the alias.
  const own = `${h.url}/oauth2/token`;
  const local = await token(b64(sign(assertionXml({ audience: own, recipient: own }), idp.key)));
  t.equal(local.status, 200, local.status === 200 ? 'audience and recipient: the token endpoint URL' : local.text);

  const signedOther = sign(assertionXml(), idp.key);
  const evilId = `_${randomUUID()}`;
  const wrapped = signedOther.replace(
    '<saml:Assertion ',
    `<saml:Assertion xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="${evilId}" Version="2.0"><saml:Issuer>${IDP}</saml:Issuer></saml:Assertion><saml:Assertion `,
  );
  const bad: [string, string, RegExp][] = [
    ['unsigned', b64(assertionXml()), /^SAML_UNSIGNED:/],
    ['signed by another key', b64(sign(assertionXml(), rogue.key)), /^SAML_SIGNATURE:/],
    ['tampered after signing', b64(sign(assertionXml(), idp.key).replace('>carol<', '>admin<')), /^SAML_SIGNATURE:/],
    [
      'signature wrapping: the signed assertion inside a Response with a forged one first',
      b64(`<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol">${wrapped.replace(/^<\?xml[^>]*>/, '')}</samlp:Response>`),
      /^SAML_WRAPPED:/,
    ],
    ['expired', b64(sign(assertionXml({ notOnOrAfter: Date.now() - 600_000 }), idp.key)), /^SAML_EXPIRED:/],
    ['subject confirmation expired', b64(sign(assertionXml({ confirmUntil: Date.now() - 600_000 }), idp.key)), /^SAML_EXPIRED:/],
    ['not valid yet', b64(sign(assertionXml({ notBefore: Date.now() + 600_000 }), idp.key)), /^SAML_NOT_YET_VALID:/],
    [
      'no bearer confirmation',
      b64(sign(assertionXml({ method: 'urn:oasis:names:tc:SAML:2.0:cm:holder-of-key' }), idp.key)),
      /^SAML_SUBJECT:/,
    ],
    ['wrong audience', b64(sign(assertionXml({ audience: 'https://elsewhere.example' }), idp.key)), /^SAML_AUDIENCE:/],
    ['wrong recipient', b64(sign(assertionXml({ recipient: 'https://elsewhere.example/acs' }), idp.key)), /^SAML_RECIPIENT:/],
    ['unknown issuer', b64(sign(assertionXml({ issuer: 'https://evil.example' }), idp.key)), /^SAML_ISSUER:/],
    ['DOCTYPE', b64(`<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e "carol">]>${sign(assertionXml(), idp.key)}`), /^SAML_DOCTYPE:/],
    ['oversized', b64(assertionXml({ subject: 'x'.repeat(40_000) })), /^SAML_TOO_LARGE:/],
    ['not XML', b64('<saml:Assertion'), /^SAML_MALFORMED:/],
  ];
  for (const [name, assertion, why] of bad) {
    const r = await token(assertion);
    t.match(r, { status: 400, body: { error: 'invalid_grant', error_description: why } }, `${name}: ${String(r.body.error_description)}`);
  }
  const none = await postForm(`${h.url}/oauth2/token`, { grant_type: GRANT }, basic(key, secret));
  t.match(none, { status: 400, body: { error: 'invalid_request' } });
});

t.test('saml2-bearer disabled', async (t) => {
  const h = await startKeyManager('[oauth.grant_type.saml_bearer]\nenable = false\n');
  t.teardown(() => h.close());
  const { key, secret } = await appWithKeys(h);
  const r = await postForm(`${h.url}/oauth2/token`, { grant_type: GRANT, assertion: 'x' }, basic(key, secret));
  t.match(r, { status: 400, body: { error: 'unsupported_grant_type', error_description: /saml_bearer\] enable = false/ } });
});

t.test('saml2-bearer on a whole node: the token opens a subscribed API at the gateway', async (t) => {
  const idp = identityProvider('idp.example');
  const backend = await echoBackend();
  t.teardown(() => backend.close());
  const n = await startTestNode(
    `${NODE_TOML}[[oauth.grant_type.saml_bearer.identity_provider]]\nissuer = "${IDP}"\ncertificate_file = "idp.pem"\naudience = "${ALIAS}"\n`,
    { 'shop.toml': securedApi(`http://127.0.0.1:${backend.port}`) },
    { 'idp.pem': idp.cert },
  );
  t.teardown(() => n.close());
  const base = `http://127.0.0.1:${n.mgmt}/admin/v1`;
  t.equal((await http(`${base}/applications`, { json: { name: 'Fed' }, auth: ADMIN })).status, 201);
  const k = await http(`${base}/applications/Fed/keys`, { json: { grantTypes: [GRANT] }, auth: ADMIN });
  t.equal(k.status, 201, k.text);
  const s = await http(`${base}/subscriptions`, { json: { application: 'Fed', api: '/shop', version: '1.0.0' }, auth: ADMIN });
  t.equal(s.status, 201, s.text);
  const r = await postForm(
    `http://127.0.0.1:${n.mgmt}/oauth2/token`,
    { grant_type: GRANT, assertion: b64(sign(assertionXml({ subject: 'dave' }), idp.key)) },
    basic(String(k.body.consumerKey), String(k.body.consumerSecret)),
  );
  t.equal(r.status, 200, r.status === 200 ? 'the assertion is exchanged' : r.text);
  const ok = await request(n.gw, '/shop/1.0.0/x', { headers: { Authorization: `Bearer ${String(r.body.access_token)}` } });
  t.equal(ok.status, 200, `the SAML-bearer token opens the subscribed API: ${ok.body.slice(0, 200)}`);
  const none = await request(n.gw, '/shop/1.0.0/x', { headers: { Authorization: 'Bearer x.y.z' } });
  t.equal(none.status, 401, 'a made-up token does not');
});

t.test("saml2-bearer and tenants: an assertion names a user of the client's tenant or gets no token", async (t) => {
  const idp = identityProvider('idp.example');
  const h = await trusting(t, idp.cert);
  await h.km.tenants.add({ domain: 'acme.test', admin: 'bossy', password: 'acme-pw-1' });
  await h.km.tenants.add({ domain: 'beta.test', admin: 'chief', password: 'beta-pw-1' });
  const acme = h.km.manager.forTenant('acme.test');
  await acme.addUser({ username: 'jane', password: 'jane-pw-1' });
  await h.km.manager.addUser({ username: 'carol', password: 'carol-pw-1' });
  const superApp = await appWithKeys(h, 'SuperApp', { grantTypes: [GRANT] });
  const acmeApp = await acme.createApplication({ name: 'AcmeApp', owner: 'jane@acme.test' });
  const acmeKeys = await acme.generateKeys(acmeApp.id, { grantTypes: [GRANT] });
  const token = (app: { key: string; secret: string }, subject: string) =>
    postForm(
      `${h.url}/oauth2/token`,
      { grant_type: GRANT, assertion: b64(sign(assertionXml({ subject }), idp.key)) },
      basic(app.key, app.secret),
    );
  const acmeClient = { key: acmeKeys.consumerKey, secret: acmeKeys.consumerSecret };

  const own = await token(acmeClient, 'jane@acme.test');
  t.equal(own.status, 200, own.status === 200 ? "the tenant's user, at its tenant's client: 200" : own.text);
  t.match(decodePayload(String(own.body.access_token)), {
    sub: 'jane@acme.test',
    aut: 'APPLICATION_USER',
    client_id: acmeKeys.consumerKey,
  });
  const superOwn = await token(superApp, 'carol');
  t.equal(superOwn.status, 200, superOwn.status === 200 ? "the super tenant's user at a super tenant client: 200" : superOwn.text);

  const refused: [string, { key: string; secret: string }, string, RegExp][] = [
    ["a tenant's user at the super tenant's client", superApp, 'jane@acme.test', /^SAML_TENANT: jane@acme.test .*carbon.super/],
    ["a tenant's admin at the super tenant's client", superApp, 'bossy@acme.test', /^SAML_TENANT: bossy@acme.test/],
    [
      "a name of another tenant with no such user, at the super tenant's client",
      superApp,
      'ghost@acme.test',
      /^SAML_TENANT: ghost@acme.test/,
    ],
    ["another tenant's user at a tenant's client", acmeClient, 'chief@beta.test', /^SAML_TENANT: chief@beta.test .*acme.test/],
    ["a super tenant user at a tenant's client", acmeClient, 'carol', /^SAML_TENANT: carol .*acme.test/],
    ["the super admin at a tenant's client", acmeClient, 'admin', /^SAML_TENANT: admin .*acme.test/],
    ["a super tenant name with no such user, at a tenant's client", acmeClient, 'dave', /^SAML_TENANT: dave .*acme.test/],
  ];
  for (const [name, app, subject, why] of refused) {
    const r = await token(app, subject);
    t.match(r, { status: 400, body: { error: 'invalid_grant', error_description: why } }, `${name}: ${String(r.body.error_description)}`);
    t.notOk(r.body.access_token, `${name}: no token`);
  }
});

t.test('an identity provider table the key manager cannot use: SAML_IDP_CONFIG', async (t) => {
  const dir = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'tw-saml-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const notPem = path.join(dir, 'idp.toml');
  fs.writeFileSync(notPem, 'issuer = "x"\n');
  const broken = path.join(dir, 'broken.pem');
  fs.writeFileSync(broken, '-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n');
  const table = (body: string): string => `[[oauth.grant_type.saml_bearer.identity_provider]]\n${body}`;
  const cases: [string, string, RegExp][] = [
    ['no certificate_file', table(`issuer = "${IDP}"\n`), /#1 needs issuer and certificate_file/],
    ['a missing file', table(`issuer = "${IDP}"\ncertificate_file = "${path.join(dir, 'none.pem')}"\n`), /none\.pem: ENOENT/],
    ['not PEM', table(`issuer = "${IDP}"\ncertificate_file = "${notPem}"\n`), /idp\.toml holds no PEM certificate/],
    [
      'a certificate that does not parse',
      table(`issuer = "${IDP}"\ncertificate_file = "${broken}"\n`),
      /broken\.pem certificate 1 does not parse/,
    ],
  ];
  for (const [name, toml, why] of cases) await t.rejects(startKeyManager(toml, { dir }), { code: 'SAML_IDP_CONFIG', message: why }, name);
});
