/**
 * The benchmark backend: one node:http process, the same responses as ../shared/peers/backend.js so the
 * figures of `npm run bench` and of the peers harness describe the same work.
 *   GET  /small   96-byte JSON with Content-Length
 *   GET  /64k     65536 bytes with Content-Length
 *   POST /upload  reads the whole body, answers {"bytes":N}
 *   POST /api/v2/spans  a Zipkin v2 sink for the traced gateway scenario: reads the body, answers 202
 * Listens on 127.0.0.1:$PORT only; exits on SIGTERM/SIGINT.
 */
import * as http from 'node:http';

const port = Number(process.env.PORT ?? 8100);

const small = Buffer.from(
  JSON.stringify({ ok: true, id: 12345, service: 'anchor-backend', message: 'hello from the benchmark backend..' }),
);
const big = Buffer.alloc(65536, 0x61);
const smallHeaders = { 'content-type': 'application/json', 'content-length': small.length };
const bigHeaders = { 'content-type': 'application/octet-stream', 'content-length': big.length };

const server = http.createServer((req, res) => {
  const url = req.url;
  if (req.method === 'GET' && url === '/small') {
    res.writeHead(200, smallHeaders);
    res.end(small);
  } else if (req.method === 'GET' && url === '/64k') {
    res.writeHead(200, bigHeaders);
    res.end(big);
  } else if (req.method === 'POST' && url === '/upload') {
    let n = 0;
    req.on('data', (c: Buffer) => {
      n += c.length;
    });
    req.on('end', () => {
      const b = Buffer.from(`{"bytes":${n}}`);
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': b.length });
      res.end(b);
    });
  } else if (req.method === 'POST' && url === '/api/v2/spans') {
    req.resume();
    req.on('end', () => {
      res.writeHead(202, { 'content-length': 0 });
      res.end();
    });
  } else {
    req.resume();
    req.on('end', () => {
      res.writeHead(404, { 'content-length': 0 });
      res.end();
    });
  }
});

// Idle upstream keep-alives outlive the proxy's own pool timeout, as in the peers backend.
server.keepAliveTimeout = 65_000;
server.headersTimeout = 66_000;

server.listen(port, '127.0.0.1', () => {
  process.stdout.write(`backend listening on 127.0.0.1:${port} small=${small.length}B big=${big.length}B pid=${process.pid}\n`);
});

for (const sig of ['SIGTERM', 'SIGINT'] as const) process.on(sig, () => process.exit(0));
