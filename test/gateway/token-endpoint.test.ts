/**
 * `/token` and `/revoke` on the gateway's listeners (spec 002 part 4; docs/key-manager.md, "The gateway's
 * /token and /revoke"): oauth4webapi doing client_credentials and revocation against
 * https://127.0.0.1:<gateway HTTPS>/token (the sample key pair pinned as the only CA), the key manager's
 * answers passed through (status, Cache-Control: no-store, OAuth errors, 405), the body bound, only the
 * exact paths taken; and a gateway-worker forwarding both to a separate key manager process.
 */
import t from 'tap';
import * as fs from 'node:fs';
import * as https from 'node:https';
import * as net from 'node:net';
import * as path from 'node:path';
import * as oauth from 'oauth4webapi';
import { SAMPLE_KEYSTORE } from '../../lib/tls/sample';
import { echoBackend, HOST, rawRequest, request } from './helpers';
import { NODE_TOML, startTestNode } from '../observability/node-helpers';
import { ADMIN, baseOffset, http, nodeToml, securedApi, spawnNode, started } from '../scale/helpers';

const basic = (user: string, password: string): string => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

/** fetch over node:https trusting only `ca` (oauth4webapi's customFetch). */
function pinnedFetch(ca: string): typeof fetch {
  return (async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const headers = new Headers(init?.headers);
    const body = init?.body === undefined || init.body === null ? undefined : String(init.body);
    if (body !== undefined) headers.set('content-length', String(Buffer.byteLength(body)));
    return new Promise<Response>((resolve, reject) => {
      const req = https.request(url, { method: init?.method ?? 'GET', headers: Object.fromEntries(headers), ca, agent: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const h = new Headers();
          for (let i = 0; i < res.rawHeaders.length; i += 2) h.append(res.rawHeaders[i] as string, res.rawHeaders[i + 1] as string);
          const status = res.statusCode ?? 0;
          resolve(new Response(status === 204 || status === 304 ? null : Buffer.concat(chunks), { status, headers: h }));
        });
      });
      req.on('error', reject);
      req.end(body);
    });
  }) as typeof fetch;
}

async function keysFor(
  mgmt: number,
  app: string,
  api: { context: string; version: string } | undefined,
): Promise<{ id: string; secret: string }> {
  const base = `http://127.0.0.1:${mgmt}/admin/v1`;
  const a = await http(`${base}/applications`, { json: { name: app }, auth: ADMIN });
  if (a.status !== 201) throw new Error(a.text);
  const k = await http(`${base}/applications/${app}/keys`, { json: {}, auth: ADMIN });
  if (k.status !== 201) throw new Error(k.text);
  if (api !== undefined) {
    const s = await http(`${base}/subscriptions`, { json: { application: app, api: api.context, version: api.version }, auth: ADMIN });
    if (s.status !== 201) throw new Error(s.text);
  }
  return { id: String(k.body.consumerKey), secret: String(k.body.consumerSecret) };
}

t.test('in process: oauth4webapi client_credentials and revocation at https://<gateway>/token and /revoke', async (t) => {
  const backend = await echoBackend();
  t.teardown(() => backend.close());
  const n = await startTestNode(NODE_TOML, { 'shop.toml': securedApi(`http://127.0.0.1:${backend.port}`) });
  t.teardown(() => n.close());
  const line = n.out.find((l) => /gateway HTTPS\s+port \d+/.test(l));
  t.ok(line, `the node has a gateway HTTPS listener:\n${n.out.join('\n')}`);
  const httpsPort = Number(/port (\d+)/.exec(line ?? '')?.[1]);
  const ca = fs.readFileSync(path.join(n.dir, SAMPLE_KEYSTORE), 'utf8');
  const client = await keysFor(n.mgmt, 'App1', { context: '/shop', version: '1.0.0' });

  const gw = `https://127.0.0.1:${httpsPort}`;
  const as: oauth.AuthorizationServer = { issuer: gw, token_endpoint: `${gw}/token`, revocation_endpoint: `${gw}/revoke` };
  const c: oauth.Client = { client_id: client.id };
  const auth = oauth.ClientSecretBasic(client.secret);
  const opts = { [oauth.customFetch]: pinnedFetch(ca) };
  const res = await oauth.clientCredentialsGrantRequest(as, c, auth, new URLSearchParams({ scope: 'default' }), opts);
  t.equal(res.status, 200, 'the token endpoint on the gateway HTTPS port answers');
  t.equal(res.headers.get('cache-control'), 'no-store', 'Cache-Control: no-store as the key manager sends it (RFC 6749 §5.1)');
  t.equal(res.headers.get('pragma'), 'no-cache');
  const cc = await oauth.processClientCredentialsResponse(as, c, res);
  t.type(cc.access_token, 'string');
  t.equal(cc.token_type.toLowerCase(), 'bearer');

  const ok = await request(n.gw, '/shop/1.0.0/x', { headers: { Authorization: `Bearer ${cc.access_token}` } });
  t.equal(ok.status, 200, `the token from the gateway's /token opens the API: ${ok.body}`);

  const rv = await oauth.revocationRequest(as, c, auth, cc.access_token, opts);
  t.equal(rv.status, 200, 'revocation through the gateway (RFC 7009 §2.2)');
  await oauth.processRevocationResponse(rv);
  const after = await request(n.gw, '/shop/1.0.0/x', { headers: { Authorization: `Bearer ${cc.access_token}` } });
  t.equal(after.status, 401, 'the revoked token is refused');
  t.match(after.body, /900901/);

  // The same endpoint on the gateway HTTP listener, with the client's credentials in the body.
  const plain = await request(n.gw, '/token', {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: client.id, client_secret: client.secret }).toString(),
  });
  t.equal(plain.status, 200, `HTTP listener too: ${plain.body.slice(0, 120)}`);
  t.type(plain.json().access_token, 'string');
});

t.test("in process: the key manager's answers pass through; only /token and /revoke are taken; the body is bound", async (t) => {
  const n = await startTestNode(NODE_TOML);
  t.teardown(() => n.close());
  const client = await keysFor(n.mgmt, 'App2', undefined);
  const form = { 'Content-Type': 'application/x-www-form-urlencoded' };

  const wrong = await request(n.gw, '/token', {
    method: 'POST',
    headers: { ...form, Authorization: basic(client.id, 'not-the-secret') },
    body: 'grant_type=client_credentials',
  });
  t.equal(wrong.status, 401, 'a wrong secret: invalid_client, 401');
  t.equal(wrong.json().error, 'invalid_client');
  t.equal(wrong.headers['cache-control'], 'no-store');

  const unsupported = await request(n.gw, '/token/?x=1', {
    method: 'POST',
    headers: { ...form, Authorization: basic(client.id, client.secret) },
    body: 'grant_type=urn:nothing',
  });
  t.equal(unsupported.status, 400, 'a trailing slash and a query are the same endpoint');
  t.equal(unsupported.json().error, 'unsupported_grant_type');

  const notForm = await request(n.gw, '/token', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: basic(client.id, client.secret) },
    body: '{}',
  });
  t.equal(notForm.status, 400);
  t.equal(notForm.json().error, 'invalid_request', 'RFC 6749 §3.2: form-encoded bodies only');

  const get = await request(n.gw, '/token');
  t.equal(get.status, 405, "GET /token: the key manager's 405");
  t.equal(get.headers.allow, 'POST');

  const revokeUnknown = await request(n.gw, '/revoke', {
    method: 'POST',
    headers: { ...form, Authorization: basic(client.id, client.secret) },
    body: 'token=not-a-token',
  });
  t.equal(revokeUnknown.status, 200, 'RFC 7009 §2.2: an unknown token is not an error');
  t.equal(revokeUnknown.body, '');

  for (const p of ['/token/x', '/tokens', '/revoke/1.0.0/x']) {
    const r = await request(n.gw, p, { method: 'POST', headers: form, body: 'grant_type=client_credentials' });
    t.equal(r.status, 404, `${p} is routed like any path`);
    t.match(r.body, /103005/);
  }

  // Over the 64 KiB limit: 413 without the body being read, and the connection closes.
  const big = await rawRequest(
    n.gw,
    `POST /token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${70 * 1024}\r\n\r\n`,
  );
  t.equal(big.status, 413);
  t.equal(big.json().error, 'invalid_request');
  t.equal(big.headers.connection, 'close');
  // A chunked body over the limit is cut at the limit.
  const chunk = 'a'.repeat(16 * 1024);
  const chunked = await new Promise<string>((resolve) => {
    const s = net.connect(n.gw, HOST);
    let got = '';
    s.on('data', (d: Buffer) => (got += d.toString('latin1')));
    s.on('close', () => resolve(got));
    s.on('error', () => resolve(got));
    s.write('POST /token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\n\r\n');
    for (let i = 0; i < 5; i++) s.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n`);
    s.write('0\r\n\r\n');
  });
  t.match(chunked, /^HTTP\/1\.1 413 /, 'chunked body over 64 KiB: 413');
});

t.test('gateway-worker: /token and /revoke forwarded over HTTP to the key manager process', async (t) => {
  const base = baseOffset(7);
  const kmPort = 9763 + base;
  const channel = `tw-test-token-${process.pid}`;
  const km = spawnNode(nodeToml({ offset: base, role: 'api-key-manager', channel }), { 'shop.toml': securedApi('http://127.0.0.1:9') });
  t.teardown(() => km.stop());
  t.ok(await started(km, /Key manager: /), `key manager started:\n${km.out}\n${km.err}`);
  const client = await keysFor(kmPort, 'App1', undefined);
  const gw = spawnNode(nodeToml({ offset: base + 1, role: 'gateway-worker', channel, km: kmPort }));
  t.teardown(() => gw.stop());
  t.ok(await started(gw, /APIs: \d+ deployed/), `gateway-worker started:\n${gw.out}\n${gw.err}`);
  const gwPort = 8280 + base + 1;

  const tok = await http(`http://127.0.0.1:${gwPort}/token`, {
    form: { grant_type: 'client_credentials' },
    auth: { user: client.id, password: client.secret },
  });
  t.equal(tok.status, 200, `the gateway-worker's /token: ${tok.text.slice(0, 120)}`);
  const token = String(tok.body.access_token);
  t.ok(token.split('.').length === 3, 'a JWT access token of the key manager process');
  const intro = await http(`http://127.0.0.1:${kmPort}/oauth2/introspect`, { form: { token }, auth: ADMIN });
  t.equal(intro.body.active, true, 'the key manager issued it');

  const raw = await request(gwPort, '/token', {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', Authorization: basic(client.id, 'wrong') },
    body: 'grant_type=client_credentials',
  });
  t.equal(raw.status, 401, 'client authentication passes through untouched: the key manager refuses a wrong secret');
  t.equal(raw.json().error, 'invalid_client');
  t.equal(raw.headers['cache-control'], 'no-store', "the key manager's fields come back");

  const rv = await http(`http://127.0.0.1:${gwPort}/revoke`, { form: { token }, auth: { user: client.id, password: client.secret } });
  t.equal(rv.status, 200, `the gateway-worker's /revoke: ${rv.text}`);
  const gone = await http(`http://127.0.0.1:${kmPort}/oauth2/introspect`, { form: { token }, auth: ADMIN });
  t.equal(gone.body.active, false, 'revoked at the key manager');

  const big = await rawRequest(
    gwPort,
    `POST /token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${70 * 1024}\r\n\r\n`,
  );
  t.equal(big.status, 413, 'the gateway-worker bounds the body before forwarding');
});
