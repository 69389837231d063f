/**
 * [throughway.key_manager] signing_keystore: the private key of a PEM [custom_keystore.<name>] signs
 * tokens (RSA → RS256, EC P-256 → ES256); keys generated before stay published until their tokens
 * expire; rotation is refused; other keystore types and bad files fail at start with the reason.
 */
import t from 'tap';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { generateKeyPairSync } from 'node:crypto';
import { calculateJwkThumbprint, createLocalJWKSet, importSPKI, jwtVerify, type JWK } from 'jose';
import { adminAuth, appWithKeys, basic, decodeHeader, json, postForm, startKeyManager } from './helpers';

function keystore(name: string, file: string, type = 'PEM', password?: string): string {
  return `[throughway.key_manager]\nsigning_keystore = "${name}"\n[custom_keystore.${name}]\nfile_name = "${file}"\ntype = "${type}"\n${password !== undefined ? `password = "${password}"\n` : ''}`;
}

t.test('an encrypted RSA PEM key signs; the generated key before it stays published', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-ks-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const file = path.join(dir, 'km.pem');
  fs.writeFileSync(file, privateKey.export({ type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase: 'ks-pass-1' }));

  const before = await startKeyManager('', { dir });
  const app = await appWithKeys(before);
  const oldToken = String((await postForm(`${before.url}/oauth2/token`, { grant_type: 'client_credentials' }, basic(app.key, app.secret))).body.access_token);
  await before.close();

  const h = await startKeyManager(keystore('km', file, 'PEM', 'ks-pass-1'), { dir });
  t.teardown(() => h.close());
  const tok = String((await postForm(`${h.url}/oauth2/token`, { grant_type: 'client_credentials' }, basic(app.key, app.secret))).body.access_token);
  const kid = await calculateJwkThumbprint(publicKey.export({ format: 'jwk' }) as JWK);
  t.match(decodeHeader(tok), { alg: 'RS256', kid });
  await t.resolves(jwtVerify(tok, await importSPKI(publicKey.export({ type: 'spki', format: 'pem' }) as string, 'RS256')), 'verifies with the keystore\'s public key');
  const jwks = (await json('GET', `${h.url}/oauth2/jwks`)).body;
  t.equal((jwks.keys as unknown[]).length, 2, 'the keystore key and the retired generated key');
  await t.resolves(jwtVerify(oldToken, createLocalJWKSet(jwks as never)), 'tokens of the generated key still verify');
  t.match(await json('POST', `${h.url}/admin/v1/signing-keys/rotate`, undefined, adminAuth()), { status: 409, body: { error_description: /replace that file/ } });
});

t.test('an EC P-256 key signs ES256', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-ks-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const file = path.join(dir, 'ec.pem');
  fs.writeFileSync(file, privateKey.export({ type: 'sec1', format: 'pem' }));
  const h = await startKeyManager(keystore('ec', file), { dir });
  t.teardown(() => h.close());
  const app = await appWithKeys(h);
  const tok = await postForm(`${h.url}/oauth2/token`, { grant_type: 'client_credentials' }, basic(app.key, app.secret));
  t.equal(decodeHeader(String(tok.body.access_token)).alg, 'ES256');
  t.equal((await postForm(`${h.url}/oauth2/introspect`, { token: String(tok.body.access_token) }, basic(app.key, app.secret))).body.active, true);
  t.match((await json('GET', `${h.url}/.well-known/openid-configuration`)).body, { id_token_signing_alg_values_supported: ['ES256'] });
});

t.test('keystore problems fail at start with the reason', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-ks-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const file = path.join(dir, 'enc.pem');
  fs.writeFileSync(file, privateKey.export({ type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase: 'right' }));
  const ed = path.join(dir, 'ed.pem');
  fs.writeFileSync(ed, generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }));
  const cases: [string, string, RegExp][] = [
    ['PKCS12', keystore('p', path.join(dir, 'x.p12'), 'PKCS12'), /reads PEM keystores only; convert a PKCS12 file with `openssl pkcs12/],
    ['missing table', '[throughway.key_manager]\nsigning_keystore = "nope"\n', /names no \[custom_keystore\.nope\] table/],
    ['missing file', keystore('m', path.join(dir, 'missing.pem')), /ENOENT/],
    ['wrong passphrase', keystore('w', file, 'PEM', 'wrong'), /no readable private key/],
    ['Ed25519', keystore('e', ed), /ed25519 key cannot sign tokens here/],
  ];
  for (const [name, toml, why] of cases) {
    await t.rejects(startKeyManager(toml, { dir }), { message: why }, name);
  }
});
