/**
 * Outbound HTTP proxies: a forward proxy written here (absolute-form requests relayed, CONNECT tunnels
 * opened, Proxy-Authorization checked). `http://` endpoints go through it with absolute-form targets,
 * `https://` ones through a CONNECT tunnel with TLS end to end; profiles are chosen by target host
 * (regular expressions, bypass hosts), sender.http.proxyHost applies outside nonProxyHosts (the
 * spec's wildcard rule), and a refused tunnel is 103081.
 */
import * as https from 'node:https';
import * as net from 'node:net';
import * as path from 'node:path';
import t, { type Test } from 'tap';
import { createTransport, targetFromUrl, type Outbound, type TransportFault } from '../../lib/transport';
import { proxySelector, nonProxyHosts, hostList, parseProxyProfiles } from '../../lib/tls/proxy';
import { outboundFrom } from '../../lib/tls/settings';
import { loadConfig } from '../../lib/config/load';
import * as tls from 'node:tls';
import { checkServerIdentityFor } from '../../lib/transport/verify';
import { HOST, makePki } from './helpers';

const pki = makePki();
t.teardown(() => pki.cleanup());

interface Proxy {
  readonly port: number;
  /** Request lines the proxy received ("GET http://... HTTP/1.1", "CONNECT host:port HTTP/1.1"). */
  readonly lines: string[];
  readonly auths: (string | undefined)[];
  close(): Promise<void>;
}

/** A forward proxy; with `credentials`, requests without the matching Proxy-Authorization get 407. */
async function forwardProxy(credentials?: string): Promise<Proxy> {
  const lines: string[] = [];
  const auths: (string | undefined)[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((c) => {
    sockets.add(c);
    c.on('close', () => sockets.delete(c));
    c.on('error', () => undefined);
    let head = '';
    const onData = (d: Buffer): void => {
      head += d.toString('latin1');
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      c.off('data', onData);
      const line = head.slice(0, head.indexOf('\r\n'));
      lines.push(line);
      const auth = /\r\nproxy-authorization: ([^\r]*)/i.exec(head)?.[1];
      auths.push(auth);
      if (credentials !== undefined && auth !== `Basic ${Buffer.from(credentials).toString('base64')}`) {
        c.end('HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n');
        return;
      }
      const [method, target] = line.split(' ') as [string, string];
      if (method === 'CONNECT') {
        const [h, p] = [target.slice(0, target.lastIndexOf(':')), Number(target.slice(target.lastIndexOf(':') + 1))];
        const up = net.connect(p, h.replace(/^\[|\]$/g, ''), () => {
          c.write('HTTP/1.1 200 Connection Established\r\n\r\n');
          const rest = head.slice(end + 4);
          if (rest !== '') up.write(rest, 'latin1');
          c.pipe(up).pipe(c);
        });
        up.on('error', () => c.destroy());
        return;
      }
      // Absolute-form: relay to the origin in origin-form, one request per connection (simple).
      const u = new URL(target);
      const up = net.connect(Number(u.port || 80), u.hostname, () => {
        const rewritten = head.replace(line, `${method} ${u.pathname}${u.search} HTTP/1.1`).replace(/\r\nproxy-authorization: [^\r]*/i, '');
        up.write(rewritten, 'latin1');
        c.pipe(up).pipe(c);
      });
      up.on('error', () => c.destroy());
    };
    c.on('data', onData);
  });
  await new Promise<void>((resolve) => server.listen(0, HOST, () => resolve()));
  return {
    port: (server.address() as net.AddressInfo).port,
    lines,
    auths,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

async function plainBackend(): Promise<{ port: number; seen: string[]; close(): Promise<void> }> {
  const seen: string[] = [];
  const server = net.createServer((c) => {
    let d = '';
    c.on('data', (b) => {
      d += b.toString('latin1');
      if (!d.includes('\r\n\r\n')) return;
      seen.push(d);
      d = '';
      c.write('HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nplain');
      c.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, HOST, () => resolve()));
  return {
    port: (server.address() as net.AddressInfo).port,
    seen,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function call(t: Test, url: string, ob: Outbound): Promise<{ status: number; body: string; faults: TransportFault[] }> {
  const target = targetFromUrl(url, ob);
  const faults: TransportFault[] = [];
  const transport = createTransport({
    route: () => ({ target }),
    settings: { shutdownTimeout: 200 },
    events: { onFault: (f) => faults.push(f) },
  });
  const a = await transport.listen({ port: 0, host: HOST });
  t.teardown(() => transport.close());
  return new Promise((resolve) => {
    const c = net.connect(a.port, HOST);
    let d = '';
    c.on('data', (b) => (d += b.toString('latin1')));
    c.on('close', () => resolve({ status: Number(d.slice(9, 12)), body: d.slice(d.indexOf('\r\n\r\n') + 4), faults }));
    c.write('GET /p?q=1 HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n\r\n');
  });
}

const tlsTo = (extra: Outbound = {}): Outbound => ({
  tls: { context: tls.createSecureContext({ ca: pki.ca.certPem }), checkServerIdentity: checkServerIdentityFor('Strict') },
  ...extra,
});

t.test('http:// through the proxy: absolute-form request target, Proxy-Authorization sent', async (t) => {
  const proxy = await forwardProxy('user:pw');
  const backend = await plainBackend();
  t.teardown(() => Promise.all([proxy.close(), backend.close()]));
  const ob: Outbound = {
    proxyFor: () => ({ host: HOST, port: proxy.port, authorization: `Basic ${Buffer.from('user:pw').toString('base64')}` }),
  };
  const r = await call(t, `http://127.0.0.1:${backend.port}/base`, ob);
  t.equal(r.status, 200);
  t.equal(r.body, 'plain');
  t.equal(
    proxy.lines[0],
    `GET http://127.0.0.1:${backend.port}/p?q=1 HTTP/1.1`,
    'absolute-form (RFC 9112 §3.2.2); the router kept the client path',
  );
  t.match(backend.seen[0], /^GET \/p\?q=1 HTTP\/1\.1/, 'the backend got the request');
});

t.test('https:// through a CONNECT tunnel: TLS end to end, SNI and verification against the backend', async (t) => {
  const proxy = await forwardProxy();
  const server = https.createServer({ key: pki.server.keyPem, cert: pki.server.certPem }, (req, res) =>
    res.end(`tls ${(req.socket as tls.TLSSocket).servername}`),
  );
  await new Promise<void>((resolve) => server.listen(0, HOST, () => resolve()));
  t.teardown(() =>
    Promise.all([proxy.close(), new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve())))]),
  );
  const port = (server.address() as net.AddressInfo).port;
  const r = await call(
    t,
    `https://localhost:${port}/`,
    tlsTo({ proxyFor: () => ({ host: HOST, port: proxy.port, authorization: undefined }) }),
  );
  t.equal(r.status, 200);
  t.equal(r.body, 'tls localhost', 'the backend saw SNI through the tunnel');
  t.equal(proxy.lines[0], `CONNECT localhost:${port} HTTP/1.1`);
});

t.test('a proxy that refuses the tunnel (407): 103081, 502', async (t) => {
  const proxy = await forwardProxy('user:pw');
  t.teardown(() => proxy.close());
  const r = await call(
    t,
    `https://localhost:1/`,
    tlsTo({ proxyFor: () => ({ host: HOST, port: proxy.port, authorization: 'Basic d3Jvbmc6d3Jvbmc=' }) }),
  );
  t.equal(r.status, 502);
  t.match(r.body, /"code":103081/);
  t.equal(r.faults[0]?.reason, 'proxy_refused');
  t.match(r.faults[0]?.cause, /407/);
});

t.test('host rules: nonProxyHosts wildcards, profile target hosts as regular expressions, bypass hosts', async (t) => {
  const direct = nonProxyHosts('localhost|.*.internal.test|*.corp.test|10.0.0.1');
  t.ok(direct('localhost'));
  t.ok(direct('a.internal.test'), 'period before the asterisk: sub-domains');
  t.ok(direct('a.b.internal.test'));
  t.notOk(direct('internal.test'), 'not the domain itself');
  t.ok(direct('x.corp.test'), '*.corp.test means the same');
  t.ok(direct('10.0.0.1'));
  t.notOk(direct('10.0.0.12'), 'dots are literal');
  t.notOk(direct('example.com'));
  const targets = hostList(['api\\.example\\.com', '.*\\.svc\\.test', 'plain.host']);
  t.ok(targets('api.example.com'));
  t.ok(targets('a.svc.test'), 'a regular expression');
  t.ok(targets('PLAIN.host'), 'case-insensitive');
  t.notOk(targets('other.test'));
  t.ok(hostList(['*'])('anything'), '* matches all');
  const profiles = parseProxyProfiles(
    '<profiles><profile><targetHosts>a.test, .*\\.b\\.test</targetHosts><proxyHost>p1</proxyHost><proxyPort>3128</proxyPort><proxyUserName>u</proxyUserName><proxyPassword>pw</proxyPassword><bypass>x.b.test</bypass></profile></profiles>',
  );
  t.equal(profiles.length, 1);
  t.ok(profiles[0]?.targets('y.b.test'));
  t.ok(profiles[0]?.bypass('x.b.test'));
  t.equal(profiles[0]?.route.authorization, `Basic ${Buffer.from('u:pw').toString('base64')}`);
});

t.test('deployment.toml: profiles chosen by target host, http and https apart, global proxy outside nonProxyHosts', async (t) => {
  const toml = `[server]\nhostname = "localhost"\n[super_admin]\nusername = "a"\npassword = "a"\n[database.apim_db]\ntype = "h2"\nusername = "u"\npassword = "p"\n
[transport.passthru_http]
sender.http.proxyHost = "global.proxy"
sender.http.proxyPort = 3128
sender.http.nonProxyHosts = "localhost|.*.local.test"

[[transport.http.proxy_profile]]
target_hosts = ["api\\\\.one\\\\.test", ".*\\\\.two\\\\.test"]
proxy_host = "p1"
proxy_port = "8001"
proxy_username = "u1"
proxy_password = "pw1"
bypass_hosts = ["skip.two.test"]

[[transport.http.proxy_profile]]
target_hosts = ["*"]
proxy_host = "p2"
proxy_port = "8002"

[[transport.http.secured_proxy_profile]]
target_hosts = ["secure.test"]
proxy_host = "p3"
proxy_port = "8003"
`;
  const loaded = loadConfig({ text: toml, file: path.join(pki.dir, 'deployment.toml') });
  t.ok(loaded.ok, JSON.stringify(loaded.diagnostics.filter((d) => d.level === 'error')));
  if (!loaded.ok) return;
  const pick = proxySelector(loaded.config);
  if (pick === undefined) return t.fail('a selector');
  t.equal(pick('api.one.test', false)?.host, 'p1');
  t.equal(pick('api.one.test', false)?.authorization, `Basic ${Buffer.from('u1:pw1').toString('base64')}`);
  t.equal(pick('x.two.test', false)?.host, 'p1', 'regular expression');
  t.equal(pick('skip.two.test', false), undefined, 'a bypass host of the matching profile goes direct');
  t.equal(pick('other.test', false)?.host, 'p2', 'the next profile (*)');
  t.equal(pick('secure.test', true)?.host, 'p3', 'https:// endpoints use the secured profiles');
  t.equal(pick('other.test', true), undefined, 'no secured profile and no HTTPS proxyHost: direct');
  const target = targetFromUrl('http://api.one.test:8080/v1', outboundFrom(loaded.config, pki.dir));
  t.same(target.proxy, { host: 'p1', port: 8001, authorization: `Basic ${Buffer.from('u1:pw1').toString('base64')}` });
  t.equal(target.origin, 'http://api.one.test:8080');
  t.not(target.key, 'api.one.test:8080', 'a proxied route has a pool of its own');

  const onlyGlobal = loadConfig({
    text: toml.slice(0, toml.indexOf('[[transport.http.proxy_profile]]')),
    file: path.join(pki.dir, 'deployment.toml'),
  });
  if (!onlyGlobal.ok) return t.fail('loads');
  const g = proxySelector(onlyGlobal.config);
  t.equal(g?.('example.com', false)?.host, 'global.proxy');
  t.equal(g?.('localhost', false), undefined, 'nonProxyHosts: direct');
  t.equal(g?.('db.local.test', false), undefined, 'nonProxyHosts wildcard: direct');
  t.equal(g?.('example.com', true), undefined, 'the HTTP section proxies http:// only');
  const none = loadConfig({ text: toml.slice(0, toml.indexOf('[transport.passthru_http]')) });
  if (none.ok) t.equal(proxySelector(none.config), undefined, 'no proxy configured: no selector, no per-endpoint work');
});
