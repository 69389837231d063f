/**
 * HTTP/2 to clients through the whole chain (docs/http2.md): ALPN h2 on the HTTPS listener with Node's
 * http2 client, many streams on one connection, a large upload and download checked by digest, a client
 * that resets streams, faults with the same JSON and codes as HTTP/1.1, an HTTP/1.1 and an HTTP/2 client on
 * the same port at once, h2c with prior knowledge, the access log naming HTTP/2.0, and curl --http2.
 */
import t, { type Test } from 'tap';
import * as https from 'node:https';
import * as http from 'node:http';
import * as http2 from 'node:http2';
import { createHash } from 'node:crypto';
import { execFile } from 'node:child_process';
import { api, connect, echoBackend, h2Gateway, h2Request, HOST } from './helpers';
import { until } from '../gateway/helpers';

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');
const BIG = 5 * 1024 * 1024 + 7;
const bigBody = Buffer.alloc(BIG);
for (let i = 0; i < BIG; i++) bigBody[i] = (i * 31 + 7) & 0xff;

async function setup(t: Test) {
  const backend = await echoBackend((req, res, body) => {
    if (req.url === '/download') {
      res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Set-Cookie': ['a=1', 'b=2'] });
      res.end(bigBody);
      return true;
    }
    if (req.url === '/upload') {
      res.end(`${sha(Buffer.from(body, 'latin1'))} ${req.headers['transfer-encoding'] ?? 'length ' + req.headers['content-length']}`);
      return true;
    }
    return false;
  });
  const g = await h2Gateway(
    [
      api('Pets', '/pets', `http://${HOST}:${backend.port}`),
      { ...api('Secured', '/secured', `http://${HOST}:${backend.port}`), auth: 'oauth2' },
    ],
    {},
    '[http_access_log]\nenabled = true\nuseLogger = true\n',
  );
  t.teardown(async () => {
    await g.close();
    await backend.close();
  });
  return { g, backend };
}

t.test('ALPN h2: a GET through the chain, the backend reached over HTTP/1.1 with Host from :authority', async (t) => {
  const { g, backend } = await setup(t);
  const s = connect(g);
  t.teardown(() => s.close());
  const r = await h2Request(s, { ':method': 'GET', ':path': '/pets/v1/list?x=1', cookie: 'a=1', 'x-test': 'yes' });
  t.equal(s.alpnProtocol, 'h2', 'ALPN chose h2');
  t.equal(r.status, 200);
  const seen = r.json();
  t.equal(seen.method, 'GET');
  t.equal(seen.url, '/list?x=1');
  const raw = seen.headers as string[];
  const field = (n: string) => raw[raw.findIndex((x, i) => i % 2 === 0 && x.toLowerCase() === n) + 1];
  t.equal(
    field('x-forwarded-host'),
    `localhost:${g.tlsPort}`,
    "the client's Host was :authority (the backend gets its own Host, as over HTTP/1.1)",
  );
  t.equal(field('x-test'), 'yes');
  t.equal(field('x-forwarded-proto'), 'https');
  t.equal(backend.seen.length, 1);
  t.ok(await until(() => g.logger.lines.some((l) => l.event === 'http_access')), 'an access log line');
  const line = String(g.logger.lines.find((l) => l.event === 'http_access')?.line);
  t.match(line, /"GET \/pets\/v1\/list\?x=1 HTTP\/2\.0" 200 /, 'the access log names HTTP/2.0');
});

t.test('100 streams on one connection, each answered', async (t) => {
  const { g, backend } = await setup(t);
  const s = connect(g);
  t.teardown(() => s.close());
  const answers = await Promise.all(Array.from({ length: 100 }, (_, i) => h2Request(s, { ':method': 'GET', ':path': `/pets/v1/n/${i}` })));
  t.same(
    answers.map((a) => a.status),
    Array(100).fill(200),
  );
  t.same(answers.map((a) => a.json().url).sort(), Array.from({ length: 100 }, (_, i) => `/n/${i}`).sort(), 'each stream its own answer');
  t.equal(backend.seen.length, 100);
});

t.test('a 5 MiB upload (no content-length: chunked to the backend, and with one) and download, checked by digest', async (t) => {
  const { g } = await setup(t);
  const s = connect(g);
  t.teardown(() => s.close());
  const up = await h2Request(s, { ':method': 'POST', ':path': '/pets/v1/upload' }, bigBody);
  t.equal(up.status, 200);
  t.equal(up.text(), `${sha(bigBody)} chunked`, 'the body arrived whole, chunked');
  const up2 = await h2Request(s, { ':method': 'POST', ':path': '/pets/v1/upload', 'content-length': String(BIG) }, bigBody);
  t.equal(up2.text(), `${sha(bigBody)} length ${BIG}`, 'with its content-length');
  const down = await h2Request(s, { ':method': 'GET', ':path': '/pets/v1/download' });
  t.equal(down.status, 200);
  t.equal(down.body.length, BIG);
  t.equal(sha(down.body), sha(bigBody), 'the download arrived whole');
  t.same(down.headers['set-cookie'], ['a=1', 'b=2'], 'repeated set-cookie kept apart');
  t.equal(down.headers['transfer-encoding'], undefined, 'no hop-by-hop field');
});

t.test('faults over h2: the same JSON and codes as over HTTP/1.1', async (t) => {
  const { g } = await setup(t);
  const s = connect(g);
  t.teardown(() => s.close());
  const h1 = (path: string) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      https
        .get({ host: '127.0.0.1', port: g.tlsPort, path, ca: g.pki.ca.certPem, servername: 'localhost', agent: false }, (res) => {
          let b = '';
          res.on('data', (c) => (b += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: b }));
        })
        .on('error', reject);
    });
  for (const path of ['/secured/v1/x', '/nothing/here']) {
    const a = await h2Request(s, { ':method': 'GET', ':path': path });
    const b = await h1(path);
    t.equal(a.status, b.status, `${path}: same status`);
    t.ok(a.status >= 400);
    t.same(a.json(), JSON.parse(b.body), `${path}: same fault JSON`);
    t.match(a.headers['content-type'], /^application\/json/);
  }
  const noAuth = await h2Request(s, { ':method': 'GET', ':path': '/secured/v1/x' });
  t.equal(noAuth.status, 401);
  t.equal(noAuth.json().fault.code, 900902, 'missing credentials');
});

t.test('a client that resets its streams: the backend connection is released, the session goes on', async (t) => {
  const hold: http.ServerResponse[] = [];
  const slow = await echoBackend((req, res) => {
    if (req.url === '/wait') {
      hold.push(res);
      return true;
    }
    return false;
  });
  const g = await h2Gateway([api('Slow', '/slow', `http://${HOST}:${slow.port}`)]);
  t.teardown(async () => {
    for (const r of hold) r.destroy();
    await g.close();
    await slow.close();
  });
  const s = connect(g);
  t.teardown(() => s.close());
  for (let i = 0; i < 10; i++) {
    const req = s.request({ ':method': 'GET', ':path': '/slow/v1/wait' });
    req.on('error', () => undefined);
    await until(() => hold.length === i + 1);
    req.close(http2.constants.NGHTTP2_CANCEL);
  }
  t.equal(hold.length, 10, 'each stream reached the backend');
  t.ok(await until(() => g.gw.transport.connections().inFlight === 0), 'no exchange left in flight after the resets');
  const r = await h2Request(s, { ':method': 'GET', ':path': '/slow/v1/after' });
  t.equal(r.status, 200, 'the same session still serves');
});

t.test('an HTTP/1.1 and an HTTP/2 client on the same port at once', async (t) => {
  const { g } = await setup(t);
  const s = connect(g);
  t.teardown(() => s.close());
  const agent = new https.Agent({ keepAlive: true, ca: g.pki.ca.certPem });
  t.teardown(() => agent.destroy());
  let alpn: string | false | null | undefined;
  const h1 = (i: number) =>
    new Promise<number>((resolve, reject) => {
      https
        .get({ host: 'localhost', port: g.tlsPort, path: `/pets/v1/one/${i}`, agent }, (res) => {
          alpn = (res.socket as import('node:tls').TLSSocket).alpnProtocol;
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        })
        .on('error', reject);
    });
  const both = await Promise.all([
    ...Array.from({ length: 20 }, (_, i) => h1(i)),
    ...Array.from({ length: 20 }, (_, i) => h2Request(s, { ':method': 'GET', ':path': `/pets/v1/two/${i}` }).then((a) => a.status)),
  ]);
  t.same(both, Array(40).fill(200));
  t.equal(alpn, false, 'the HTTPS client offered no ALPN and was served HTTP/1.1');
  t.equal(s.alpnProtocol, 'h2');
});

t.test('h2c with prior knowledge on the plain listener; HTTP/1.1 on it unchanged', async (t) => {
  const { g } = await setup(t);
  const s = http2.connect(`http://127.0.0.1:${g.plainPort}`);
  s.on('error', () => undefined);
  t.teardown(() => s.close());
  const r = await h2Request(s, { ':method': 'GET', ':path': '/pets/v1/clear' });
  t.equal(r.status, 200);
  t.equal(r.json().url, '/clear');
  const raw = r.json().headers as string[];
  t.equal(raw[raw.findIndex((x, i) => i % 2 === 0 && x.toLowerCase() === 'x-forwarded-proto') + 1], 'http', 'not secure');
  const h1 = await new Promise<number>((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port: g.plainPort, path: '/pets/v1/plain', agent: false }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      })
      .on('error', reject);
  });
  t.equal(h1, 200, 'HTTP/1.1 on the same plain port');
});

t.test('curl --http2 against the HTTPS listener', async (t) => {
  const { g } = await setup(t);
  const out = await new Promise<{ code: number | null; stdout: string; stderr: string } | undefined>((resolve) => {
    execFile(
      'curl',
      [
        '-sS',
        '--http2',
        '--cacert',
        g.pki.write('ca.pem', g.pki.ca.certPem),
        '-o',
        '/dev/null',
        '-w',
        '%{http_version} %{http_code}',
        `https://localhost:${g.tlsPort}/pets/v1/curl`,
      ],
      (err, stdout, stderr) => {
        if (err !== null && (err as NodeJS.ErrnoException).code === 'ENOENT') resolve(undefined);
        else resolve({ code: err === null ? 0 : 1, stdout, stderr });
      },
    );
  });
  if (out === undefined) {
    console.log('# skipping curl --http2: curl is not installed');
    t.pass('skipped: curl is not installed');
    return;
  }
  t.equal(out.stdout, '2 200', `curl spoke HTTP/2 and got 200 (${out.stderr})`);
});
