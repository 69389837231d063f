/**
 * Stored backend credentials never follow an endpoint to another host (docs/apis.md, "Backend security";
 * docs/portal.md, "Backend credentials"): a publisher who points an endpoint with Basic, Digest or OAuth
 * credentials at another origin gets an error beside the URL unless the same edit re-enters the secret, the
 * admin API's raw write is refused the same way, and a file on disk whose `security.origin` is not its
 * URL's is not deployed. Each through a whole node (publisher, admin API, gateway) and a real backend pair:
 * the backend the API was meant for, and another one that records whatever reaches it.
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import * as toml from 'toml';
import t, { type Test } from 'tap';
import { ADMIN, hidden, req, signIn, startPortalNode, until, type PortalNode } from './helpers';

/** The error text shown beside a form field ('' for none). */
const errorFor = (html: string, id: string): string =>
  new RegExp(`id="${id}-error" role="alert">([^<]*)<`)
    .exec(html)?.[1]
    ?.replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'") ?? '';

interface Recorder {
  readonly port: number;
  /** The Authorization field of each request, '' for none. */
  readonly auth: string[];
  close(): Promise<void>;
}

/** A backend that records each request's Authorization; `digest`: it answers a request without one with a Digest challenge. */
async function recorder(digest = false): Promise<Recorder> {
  const auth: string[] = [];
  const server = http.createServer((q, s) => {
    q.resume();
    const a = q.headers.authorization ?? '';
    auth.push(a);
    if (digest && !a.startsWith('Digest ')) {
      s.writeHead(401, { 'WWW-Authenticate': 'Digest realm="backend", qop="auth", nonce="n0nce", algorithm=MD5', 'Content-Length': '0' });
      s.end();
      return;
    }
    s.writeHead(200, { 'Content-Type': 'application/json' });
    s.end('{"ok":true}');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { port: (server.address() as { port: number }).port, auth, close: () => new Promise((r) => server.close(() => r())) };
}

/** A token endpoint answering every client_credentials request with the token `tok-<n>`. */
async function tokenServer(): Promise<Recorder> {
  const auth: string[] = [];
  const server = http.createServer((q, s) => {
    q.resume();
    auth.push(q.headers.authorization ?? '');
    s.writeHead(200, { 'Content-Type': 'application/json' });
    s.end(JSON.stringify({ access_token: `tok-${auth.length}`, token_type: 'Bearer', expires_in: 3600 }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { port: (server.address() as { port: number }).port, auth, close: () => new Promise((r) => server.close(() => r())) };
}

const SECURITY: Record<string, (tokenPort: number) => string> = {
  basic: () => 'type = "basic"\nusername = "gw"\npassword = "basic-secret"\n',
  digest: () => 'type = "digest"\nusername = "gw"\npassword = "digest-secret"\n',
  oauth: (tp) => `type = "oauth"\ntoken_url = "http://127.0.0.1:${tp}/token"\nclient_id = "gw"\nclient_secret = "oauth-secret"\n`,
};

const apiFile = (type: string, url: string, tokenPort: number): string =>
  `name = "Sec${type}"\ncontext = "/sec-${type}"\nversion = "1"\nauth = "none"\nstate = "PUBLISHED"\n\n[endpoints.production]\nurl = "${url}"\n[endpoints.production.security]\n${SECURITY[type]?.(tokenPort) ?? ''}\n[[resources]]\npath = "/*"\nmethods = ["GET"]\n`;

/** The form fields of the API file of `type`, with the production URL `url`. */
const form = (csrf: string, type: string, url: string): Record<string, string> => ({
  csrf,
  action: 'save',
  name: `Sec${type}`,
  context: `/sec-${type}`,
  version: '1',
  production: url,
  auth: 'none',
  resources: 'GET /*',
  labels: 'Default',
});

interface Setup {
  readonly node: PortalNode;
  readonly meant: Recorder;
  readonly other: Recorder;
  readonly tokens: Recorder;
  readonly cookie: string;
  readonly csrf: string;
}

async function setup(t: Test, type: string): Promise<Setup> {
  const meant = await recorder(type === 'digest');
  const other = await recorder(type === 'digest');
  const tokens = await tokenServer();
  t.teardown(() => Promise.all([meant.close(), other.close(), tokens.close()]).then(() => undefined));
  const node = await startPortalNode(undefined, {
    [`apis/sec-${type}.toml`]: apiFile(type, `http://127.0.0.1:${meant.port}/v1`, tokens.port),
  });
  t.teardown(() => node.close());
  const cookie = await signIn(node.base);
  const csrf = hidden((await req(`${node.base}/publisher`, cookie)).text, 'csrf');
  return { node, meant, other, tokens, cookie, csrf };
}

const call = async (s: Setup, type: string): Promise<number> => (await fetch(`${s.node.gateway}/sec-${type}/1/x`)).status;
const sentCredentials = (r: Recorder): string[] => r.auth.filter((a) => a !== '');

for (const type of ['basic', 'digest', 'oauth']) {
  t.test(`${type}: a URL moved to another host keeps no credentials unless they are re-entered`, async (t) => {
    const s = await setup(t, type);
    const file = path.join(s.node.dir, 'apis', `sec-${type}.toml`);
    t.equal(await call(s, type), 200, 'the backend the credentials are meant for is called with them');
    t.ok(sentCredentials(s.meant).length > 0);
    const before = fs.readFileSync(file, 'utf8');

    // The publisher points the endpoint at the other backend without re-entering the secret.
    const otherUrl = `http://127.0.0.1:${s.other.port}/v1`;
    const moved = await req(`${s.node.base}/publisher/apis/sec-${type}.toml`, s.cookie, form(s.csrf, type, otherUrl));
    t.equal(moved.status, 400, 'refused');
    t.match(
      errorFor(moved.text, 'production'),
      new RegExp(
        `credentials \\(${type}\\) are bound to http://127\\.0\\.0\\.1:${s.meant.port}, and the new URL is at http://127\\.0\\.0\\.1:${s.other.port}: they are never sent to another host`,
      ),
      'the error says why, beside the URL',
    );
    t.notMatch(moved.text, /basic-secret|digest-secret|oauth-secret/, 'the page shows no secret');
    t.equal(fs.readFileSync(file, 'utf8'), before, 'the file is unchanged');

    // The admin API's raw write of the same change is refused the same way.
    const adminAuth = `Basic ${Buffer.from(`${ADMIN.username}:${ADMIN.password}`).toString('base64')}`;
    const put = await fetch(`${s.node.base}/admin/v1/api-files/sec-${type}.toml`, {
      method: 'PUT',
      headers: { Authorization: adminAuth, 'Content-Type': 'application/json' },
      body: JSON.stringify({ text: before.replace(`127.0.0.1:${s.meant.port}`, `127.0.0.1:${s.other.port}`) }),
    });
    t.equal(put.status, 422);
    const body = (await put.json()) as { fields: Record<string, string> };
    t.match(
      body.fields['endpoints.production.security'],
      new RegExp(`bound to http://127\\.0\\.0\\.1:${s.meant.port} and the url is now at http://127\\.0\\.0\\.1:${s.other.port}`),
    );
    t.equal(fs.readFileSync(file, 'utf8'), before, 'the file is unchanged');
    t.equal(await call(s, type), 200);
    t.same(s.other.auth, [], 'the other backend got nothing');

    // Re-entered in the same edit: the credentials are bound to the new origin and sent there.
    const secret = `${type}-new-secret`;
    const rebound = await req(`${s.node.base}/publisher/apis/sec-${type}.toml`, s.cookie, {
      ...form(s.csrf, type, otherUrl),
      production_secret: secret,
    });
    t.equal(rebound.status, 303, `saved (${errorFor(rebound.text, 'production')}${errorFor(rebound.text, 'production_secret')})`);
    const doc = toml.parse(fs.readFileSync(file, 'utf8')) as {
      endpoints: { production: { url: string; security: Record<string, string> } };
    };
    t.equal(doc.endpoints.production.url, otherUrl);
    t.equal(doc.endpoints.production.security.origin, `http://127.0.0.1:${s.other.port}`, 'bound to the new origin');
    t.equal(doc.endpoints.production.security[type === 'oauth' ? 'client_secret' : 'password'], secret, 'the re-entered secret');
    t.ok(await until(async () => (await call(s, type)) === 200 && s.other.auth.length > 0), 'the gateway serves the new URL');
    t.ok(sentCredentials(s.other).length > 0, 'the other backend now gets credentials');
    if (type === 'basic')
      t.equal(sentCredentials(s.other)[0], `Basic ${Buffer.from(`gw:${secret}`).toString('base64')}`, 'the re-entered ones');
  });
}

t.test('a secret re-entered for an endpoint without credentials is an error beside it', async (t) => {
  const s = await setup(t, 'basic');
  const demo = /production = "([^"]+)"/.exec(fs.readFileSync(path.join(s.node.dir, 'apis', 'demo.toml'), 'utf8'))?.[1] ?? '';
  const r = await req(`${s.node.base}/publisher/new`, s.cookie, {
    ...form(s.csrf, 'plain', demo),
    name: 'Plain',
    context: '/plain',
    production_secret: 'x',
  });
  t.equal(r.status, 400);
  t.match(errorFor(r.text, 'production_secret'), /has no backend credentials to re-enter/);
  t.match(r.text, /id="production_secret" name="production_secret" value=""/, 'the secret is not shown back');
});

t.test("a file on disk whose security.origin is not its URL's origin is not deployed (API_CREDENTIALS_ORIGIN)", async (t) => {
  const s = await setup(t, 'basic');
  const file = path.join(s.node.dir, 'apis', 'sec-basic.toml');
  // A writer moved the URL and kept the origin the credentials were stored for.
  const text = fs
    .readFileSync(file, 'utf8')
    .replace(`127.0.0.1:${s.meant.port}`, `127.0.0.1:${s.other.port}`)
    .replace('[endpoints.production.security]\n', `[endpoints.production.security]\norigin = "http://127.0.0.1:${s.meant.port}"\n`);
  fs.writeFileSync(file, text);
  const gw = s.node.node.gateway;
  t.ok(
    await until(async () => gw?.states().some((x) => x.diagnostics.some((d) => d.code === 'API_CREDENTIALS_ORIGIN')) === true),
    'the diagnostic is there',
  );
  const d = gw
    ?.states()
    .flatMap((x) => x.diagnostics)
    .find((x) => x.code === 'API_CREDENTIALS_ORIGIN');
  t.equal(d?.field, 'endpoints.production.security.origin');
  t.match(
    d?.message,
    new RegExp(`stored for http://127\\.0\\.0\\.1:${s.meant.port} and the url points to http://127\\.0\\.0\\.1:${s.other.port}`),
  );
  await call(s, 'basic');
  t.same(s.other.auth, [], 'the other backend got nothing');
});
