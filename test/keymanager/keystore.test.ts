/**
 * [throughway.key_manager] signing_keystore: the private key of a PEM [custom_keystore.<name>] signs
 * tokens (RSA → RS256, EC P-256 → ES256); keys generated before stay published until their tokens
 * expire; rotation is refused; other keystore types and bad files fail at start with the reason.
 * PKCS#12 files are made in the test: RSA ones with node-forge, an EC one with the openssl command (skipped
 * with a reason when it is absent); a JKS file is recognised by its magic bytes whatever `type` says.
 */
import t from 'tap';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import forge from 'node-forge';
import { calculateJwkThumbprint, createLocalJWKSet, importSPKI, jwtVerify, type JWK } from 'jose';
import { adminAuth, appWithKeys, basic, decodeHeader, json, postForm, startKeyManager } from './helpers';

function keystore(name: string, file: string, type = 'PEM', password?: string, extra = ''): string {
  return `[throughway.key_manager]\nsigning_keystore = "${name}"\n[custom_keystore.${name}]\nfile_name = "${file}"\ntype = "${type}"\n${password !== undefined ? `password = "${password}"\n` : ''}${extra}`;
}

/** A self-signed certificate for `key` (node-forge), so the PKCS#12 files look like real keystores. */
function selfSigned(key: forge.pki.rsa.PrivateKey): forge.pki.Certificate {
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.setRsaPublicKey(key.n, key.e);
  cert.serialNumber = '01';
  cert.validity.notBefore = new Date(Date.now() - 60_000);
  cert.validity.notAfter = new Date(Date.now() + 86_400_000);
  cert.setSubject([{ name: 'commonName', value: 'throughway test' }]);
  cert.setIssuer([{ name: 'commonName', value: 'throughway test' }]);
  cert.sign(key, forge.md.sha256.create());
  return cert;
}

/** A PKCS#12 file (DER) holding `key` (or only a certificate when key is null), as node-forge writes it. */
function pkcs12(key: KeyObject | null, password: string, friendlyName?: string): Buffer {
  const rsa = forge.pki.privateKeyFromPem(
    (key ?? generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey).export({ type: 'pkcs1', format: 'pem' }) as string,
  ) as forge.pki.rsa.PrivateKey;
  const asn1 = forge.pkcs12.toPkcs12Asn1(key === null ? null : rsa, [selfSigned(rsa)], password, {
    algorithm: '3des',
    ...(friendlyName !== undefined ? { friendlyName } : {}),
  });
  return Buffer.from(forge.asn1.toDer(asn1).getBytes(), 'binary');
}

function hasOpenssl(): boolean {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

t.test('an encrypted RSA PEM key signs; the generated key before it stays published', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-ks-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const file = path.join(dir, 'km.pem');
  fs.writeFileSync(file, privateKey.export({ type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase: 'ks-pass-1' }));

  const before = await startKeyManager('', { dir });
  const app = await appWithKeys(before);
  const oldToken = String(
    (await postForm(`${before.url}/oauth2/token`, { grant_type: 'client_credentials' }, basic(app.key, app.secret))).body.access_token,
  );
  await before.close();

  const h = await startKeyManager(keystore('km', file, 'PEM', 'ks-pass-1'), { dir });
  t.teardown(() => h.close());
  const tok = String(
    (await postForm(`${h.url}/oauth2/token`, { grant_type: 'client_credentials' }, basic(app.key, app.secret))).body.access_token,
  );
  const kid = await calculateJwkThumbprint(publicKey.export({ format: 'jwk' }) as JWK);
  t.match(decodeHeader(tok), { alg: 'RS256', kid });
  await t.resolves(
    jwtVerify(tok, await importSPKI(publicKey.export({ type: 'spki', format: 'pem' }) as string, 'RS256')),
    "verifies with the keystore's public key",
  );
  const jwks = (await json('GET', `${h.url}/oauth2/jwks`)).body;
  t.equal((jwks.keys as unknown[]).length, 2, 'the keystore key and the retired generated key');
  await t.resolves(jwtVerify(oldToken, createLocalJWKSet(jwks as never)), 'tokens of the generated key still verify');
  t.match(await json('POST', `${h.url}/admin/v1/signing-keys/rotate`, undefined, adminAuth()), {
    status: 409,
    body: { error_description: /replace that file/ },
  });
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
  t.equal(
    (await postForm(`${h.url}/oauth2/introspect`, { token: String(tok.body.access_token) }, basic(app.key, app.secret))).body.active,
    true,
  );
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
    [
      'JKS type',
      keystore('j', file, 'JKS'),
      /type = "JKS": Node cannot read JKS keystores: convert it to PKCS#12 with `keytool -importkeystore -srckeystore .*enc\.pem -srcstoretype JKS -destkeystore .*enc\.pem\.p12 -deststoretype PKCS12`/,
    ],
    ['missing table', '[throughway.key_manager]\nsigning_keystore = "nope"\n', /names no \[custom_keystore\.nope\] table/],
    ['missing file', keystore('m', path.join(dir, 'missing.pem')), /ENOENT/],
    ['wrong passphrase', keystore('w', file, 'PEM', 'wrong'), /no readable private key/],
    ['Ed25519', keystore('e', ed), /ed25519 key cannot sign tokens here/],
  ];
  for (const [name, toml, why] of cases) {
    await t.rejects(startKeyManager(toml, { dir }), { message: why }, name);
  }
});

t.test('a PKCS#12 keystore (RSA, made with node-forge) signs RS256; alias picks the key', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-ks-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const file = path.join(dir, 'km.p12');
  fs.writeFileSync(file, pkcs12(privateKey, 'p12-pass', 'tokens'));
  const h = await startKeyManager(keystore('km', file, 'PKCS12', 'p12-pass', 'alias = "tokens"\n'), { dir });
  t.teardown(() => h.close());
  const app = await appWithKeys(h);
  const tok = String(
    (await postForm(`${h.url}/oauth2/token`, { grant_type: 'client_credentials' }, basic(app.key, app.secret))).body.access_token,
  );
  const kid = await calculateJwkThumbprint(publicKey.export({ format: 'jwk' }) as JWK);
  t.match(decodeHeader(tok), { alg: 'RS256', kid }, 'signed by the keystore key, kid = its thumbprint');
  await t.resolves(
    jwtVerify(tok, await importSPKI(publicKey.export({ type: 'spki', format: 'pem' }) as string, 'RS256')),
    "verifies with the keystore's public key",
  );
  const jwks = (await json('GET', `${h.url}/oauth2/jwks`)).body;
  t.same(
    (jwks.keys as JWK[]).map((k) => k.kid),
    [kid],
    'the JWKS publishes it',
  );
});

t.test('a PKCS#12 keystore with an EC P-256 key (made with openssl) signs ES256', async (t) => {
  if (!hasOpenssl()) {
    t.comment('skipped: no openssl command on this machine to write an EC PKCS#12 file');
    return;
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-ks-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const pem = path.join(dir, 'ec.pem');
  fs.writeFileSync(pem, privateKey.export({ type: 'sec1', format: 'pem' }));
  const file = path.join(dir, 'ec.p12');
  // OpenSSL 3's defaults: AES-256-CBC with PBKDF2, HMAC-SHA256 MAC.
  execFileSync('openssl', ['pkcs12', '-export', '-nocerts', '-inkey', pem, '-out', file, '-passout', 'pass:ec-pass', '-name', 'ec'], {
    stdio: 'ignore',
  });
  const h = await startKeyManager(keystore('ec', file, 'PKCS12', 'ec-pass'), { dir });
  t.teardown(() => h.close());
  const app = await appWithKeys(h);
  const tok = String(
    (await postForm(`${h.url}/oauth2/token`, { grant_type: 'client_credentials' }, basic(app.key, app.secret))).body.access_token,
  );
  t.match(decodeHeader(tok), { alg: 'ES256', kid: await calculateJwkThumbprint(publicKey.export({ format: 'jwk' }) as JWK) });
  await t.resolves(jwtVerify(tok, await importSPKI(publicKey.export({ type: 'spki', format: 'pem' }) as string, 'ES256')));
});

t.test('PKCS#12 and JKS problems fail at start with the reason', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-ks-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const good = path.join(dir, 'good.p12');
  fs.writeFileSync(good, pkcs12(privateKey, 'right', 'tokens'));
  const certOnly = path.join(dir, 'cert-only.p12');
  fs.writeFileSync(certOnly, pkcs12(null, 'right'));
  const jks = path.join(dir, 'reference.jks');
  // A JKS header (magic 0xFEEDFEED, version 2, no entries): refused by content even when type says PKCS12.
  fs.writeFileSync(jks, Buffer.from([0xfe, 0xed, 0xfe, 0xed, 0, 0, 0, 2, 0, 0, 0, 0]));
  const garbage = path.join(dir, 'garbage.p12');
  fs.writeFileSync(garbage, 'not a keystore at all');
  const cases: [string, string, RegExp][] = [
    ['wrong password', keystore('w', good, 'PKCS12', 'wrong'), /good\.p12: wrong password/],
    ['no password', keystore('n', good, 'PKCS12'), /wrong password/],
    ['no private key', keystore('c', certOnly, 'PKCS12', 'right'), /holds no private key/],
    [
      'unknown alias',
      keystore('a', good, 'PKCS12', 'right', 'alias = "other"\n'),
      /no private key with alias "other" \(the file has: tokens\)/,
    ],
    [
      'JKS named PKCS12',
      keystore('j', jks, 'PKCS12', 'right'),
      /is a JKS keystore \(although type = "PKCS12"\), which Node cannot read: convert it to PKCS#12 with `keytool -importkeystore/,
    ],
    ['not PKCS#12', keystore('g', garbage, 'PKCS12', 'right'), /not a PKCS#12 file/],
  ];
  for (const [name, toml, why] of cases) {
    await t.rejects(startKeyManager(toml, { dir }), { message: why }, name);
  }
});
