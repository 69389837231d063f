/**
 * gateway.handler: the (req, res) listener mounted in a node:http server. Bodies both ways (a chunked
 * upload re-framed, a large chunked download), fields, hop-by-hop fields dropped, the app's client
 * address, faults, and fault 103141 when the gateway cannot answer (closed).
 */
import t from 'tap';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHash } from 'node:crypto';
import { api, echoBackend, embedded, field, HOST } from './helpers';

interface Got {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

function call(
  port: number,
  path: string,
  o: { method?: string; headers?: http.OutgoingHttpHeaders; body?: Buffer | string; chunked?: boolean } = {},
): Promise<Got> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: HOST, port, path, method: o.method ?? 'GET', headers: o.headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    if (o.body !== undefined && o.chunked === true) {
      // Written in pieces with no Content-Length: node:http sends it chunked.
      const b = Buffer.from(o.body);
      for (let i = 0; i < b.length; i += 65536) req.write(b.subarray(i, i + 65536));
      req.end();
    } else req.end(o.body);
  });
}

async function appServer(handler: http.RequestListener): Promise<{ port: number; close(): Promise<void> }> {
  const server = http.createServer(handler);
  await new Promise<void>((r) => server.listen(0, HOST, () => r()));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}

t.test('requests through a node:http app reach the backend, responses come back whole', async (t) => {
  const backend = await echoBackend((req, res, body) => {
    if (req.url === '/download') {
      res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'X-Backend': 'yes' });
      res.end(Buffer.alloc(2 * 1024 * 1024 + 5, 'q'));
      return true;
    }
    if (req.url === '/upload') {
      res.end(
        `${createHash('sha256').update(Buffer.from(body, 'latin1')).digest('hex')} ${req.headers['transfer-encoding'] ?? 'length ' + req.headers['content-length']}`,
      );
      return true;
    }
    return false;
  });
  const { gw } = embedded([api('Files', '/files', `http://127.0.0.1:${backend.port}`)]);
  const app = await appServer(gw.handler);
  t.teardown(async () => {
    await app.close();
    await gw.close();
    await backend.close();
  });

  const get = await call(app.port, '/files/v1/items?x=1', {
    headers: { 'X-Trace': 't1', Connection: 'keep-alive, X-Hop', 'X-Hop': 'secret' },
  });
  t.equal(get.status, 200);
  const seen = JSON.parse(get.body.toString()) as { url: string; headers: string[] };
  t.equal(seen.url, '/items?x=1');
  t.equal(field(seen.headers, 'x-trace'), 't1');
  t.equal(field(seen.headers, 'x-hop'), undefined, 'a field the Connection field names is hop-by-hop: not forwarded');
  t.equal(field(seen.headers, 'x-forwarded-for'), '127.0.0.1', "the app's client address");

  const upload = Buffer.alloc(700_001);
  for (let i = 0; i < upload.length; i++) upload[i] = (i * 7) & 0xff;
  const up = await call(app.port, '/files/v1/upload', { method: 'POST', body: upload, chunked: true });
  t.equal(up.status, 200);
  t.equal(
    up.body.toString(),
    `${createHash('sha256').update(upload).digest('hex')} chunked`,
    'a chunked upload arrives intact, re-framed as chunked',
  );
  const up2 = await call(app.port, '/files/v1/upload', { method: 'PUT', body: upload });
  t.equal(
    up2.body.toString(),
    `${createHash('sha256').update(upload).digest('hex')} length 700001`,
    'a Content-Length upload keeps its length',
  );

  const down = await call(app.port, '/files/v1/download');
  t.equal(down.status, 200);
  t.equal(down.body.length, 2 * 1024 * 1024 + 5, 'a 2 MiB chunked download arrives whole');
  t.equal(down.headers['x-backend'], 'yes');
  t.equal(down.headers.via, '1.1 throughway');

  const fault = await call(app.port, '/nowhere/v1/x');
  t.equal(fault.status, 404);
  t.match(JSON.parse(fault.body.toString()), { fault: { code: 103005 } });
  t.equal(fault.headers['content-type'], 'application/json; charset=UTF-8');
});

t.test('a gateway that cannot answer gives fault 103141', async (t) => {
  const { gw } = embedded([]);
  const codes: number[] = [];
  gw.on('fault', (f) => codes.push(f.code));
  await gw.close(); // a closed gateway serves no connection
  const app = await appServer(gw.handler);
  t.teardown(() => app.close());
  const r = await call(app.port, '/any/v1/x');
  t.equal(r.status, 502);
  t.match(JSON.parse(r.body.toString()), { fault: { code: 103141, message: 'Incomplete response' } });
  t.same(codes, [103141], 'reported as a fault event');
});

t.test('a body an app already read (a body parser ran first) gives fault 103143, not a hung request', async (t) => {
  const backend = await echoBackend();
  const { gw } = embedded([api('Files', '/files', `http://127.0.0.1:${backend.port}`)]);
  const app = await appServer((req, res) => {
    // What express.json() does: read the whole body, then call the next handler.
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => gw.handler(req, res));
  });
  t.teardown(async () => {
    await app.close();
    await gw.close();
    await backend.close();
  });
  const r = await call(app.port, '/files/v1/upload', { method: 'POST', body: '{"a":1}', headers: { 'Content-Type': 'application/json' } });
  t.equal(r.status, 500);
  t.match(JSON.parse(r.body.toString()), { fault: { code: 103143, message: 'Request body already read' } });
  t.equal(backend.seen.length, 0, 'nothing half-sent to the backend');
  const get = await call(app.port, '/files/v1/list');
  t.equal(get.status, 200, 'a request without a body is served although the app read its (empty) stream');
});
