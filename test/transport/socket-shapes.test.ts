/**
 * The transport adds no property to the sockets it reads (lib/transport/read-buffers.ts,
 * sourceReadCallback): an adopted client socket and a backend socket keep the hidden class net gives every
 * new socket, so Node's read callback and timer refresh, which serve every socket of the process through
 * one inline cache each, see one class from the transport instead of one per kind of socket (with an
 * exporter's HTTP client beside them, more than V8's four made every read pay a megamorphic lookup:
 * docs/performance.md). Hidden classes are only visible to V8's natives syntax, so the sockets are
 * compared in a child process started with --allow-natives-syntax.
 */
import t from 'tap';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';

const LIB = path.join(__dirname, '..', '..', 'lib', 'transport', 'index.js');

/**
 * The child: a raw keep-alive backend, a transport in front of it, one raw client making three small
 * exchanges, a POST of 300 KB and a 100 KB answer (the connections' own large read buffers); then the
 * adopted socket (made by `new net.Socket`, caught by wrapping it), the backend socket (net.connect
 * publishes it on diagnostics_channel) and a fresh socket compared with %HaveSameMap.
 */
const CHILD = `
const net = require('node:net');
const dc = require('node:diagnostics_channel');
const { createTransport, targetFromUrl } = require(${JSON.stringify(LIB)});
const Made = net.Socket;
const adopted = [];
net.Socket = function Socket(options) { const s = new Made(options); adopted.push(s); return s; };
const connected = [];
dc.subscribe('net.client.socket', (m) => connected.push(m.socket));
const small = 'HTTP/1.1 200 OK\\r\\nContent-Length: 2\\r\\n\\r\\nok';
const large = 'HTTP/1.1 200 OK\\r\\nContent-Length: 102400\\r\\n\\r\\n' + 'b'.repeat(102400);
const backend = net.createServer((s) => {
  let seen = '';
  s.on('data', (d) => {
    seen += d.toString('latin1');
    for (;;) {
      const end = seen.indexOf('\\r\\n\\r\\n');
      if (end < 0) return;
      const m = /content-length: (\\d+)/i.exec(seen.slice(0, end));
      const total = end + 4 + (m ? Number(m[1]) : 0);
      if (seen.length < total) return;
      const big = seen.startsWith('GET /large');
      seen = seen.slice(total);
      s.write(big ? large : small);
    }
  });
});
backend.listen(0, '127.0.0.1', async () => {
  const target = targetFromUrl('http://127.0.0.1:' + backend.address().port);
  const transport = createTransport({ route: () => ({ target }) });
  const { port } = await transport.listen({ port: 0, host: '127.0.0.1' });
  const client = net.connect(port, '127.0.0.1');
  let got = '';
  const answer = (bytes) => new Promise((resolve) => {
    const on = (d) => { got += d.toString('latin1'); if (got.length >= bytes) { client.off('data', on); got = got.slice(bytes); resolve(); } };
    client.on('data', on);
  });
  const smallBytes = small.length, largeBytes = large.length;
  for (let i = 0; i < 3; i++) { client.write('GET /s' + i + ' HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n'); await answer(smallBytes); }
  client.write('POST /up HTTP/1.1\\r\\nHost: x\\r\\nContent-Length: 307200\\r\\n\\r\\n' + 'a'.repeat(307200)); await answer(smallBytes);
  client.write('GET /large HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n'); await answer(largeBytes);
  const source = adopted[0];
  const backendSocket = connected.find((s) => s !== client);
  const fresh = new Made();
  const keys = (s) => Reflect.ownKeys(s).map(String);
  process.stdout.write(JSON.stringify({
    found: source !== undefined && backendSocket !== undefined,
    sourceBackend: %HaveSameMap(source, backendSocket),
    sourceFresh: %HaveSameMap(source, fresh),
    backendFresh: %HaveSameMap(backendSocket, fresh),
    sourceKeys: keys(source), backendKeys: keys(backendSocket), freshKeys: keys(fresh),
  }));
  fresh.destroy();
  client.destroy();
  await transport.close();
  backend.close();
  process.exit(0);
});
`;

t.test('an adopted client socket and a backend socket keep the hidden class of a new net.Socket', async (t) => {
  const r = spawnSync(process.execPath, ['--allow-natives-syntax', '-e', CHILD], { encoding: 'utf8', timeout: 30_000 });
  t.equal(r.status, 0, `the child ran (stderr: ${r.stderr.slice(0, 500)})`);
  const out = JSON.parse(r.stdout) as {
    found: boolean;
    sourceBackend: boolean;
    sourceFresh: boolean;
    backendFresh: boolean;
    sourceKeys: string[];
    backendKeys: string[];
    freshKeys: string[];
  };
  t.ok(out.found, 'the adopted socket and the backend socket were both caught');
  const extra = (keys: string[]): string[] => keys.filter((k) => !out.freshKeys.includes(k));
  t.ok(
    out.sourceBackend,
    `client and backend sockets share one hidden class (client's own keys: ${extra(out.sourceKeys).join(', ') || 'none'}; backend's: ${extra(out.backendKeys).join(', ') || 'none'})`,
  );
  t.ok(
    out.sourceFresh,
    `the client socket has the class of a new net.Socket (keys it adds: ${extra(out.sourceKeys).join(', ') || 'none'})`,
  );
  t.ok(
    out.backendFresh,
    `the backend socket has the class of a new net.Socket (keys it adds: ${extra(out.backendKeys).join(', ') || 'none'})`,
  );
  t.same(extra(out.sourceKeys), [], 'the transport added no property to the client socket');
  t.same(extra(out.backendKeys), [], 'nor to the backend socket');
});
