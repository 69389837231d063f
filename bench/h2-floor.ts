/**
 * The floor of `npm run bench -- --h2` (bench/h2.ts): a bare `node:http2` secure server that answers every
 * request itself with the 96 bytes of bench/backend.ts's /small, proxying nothing. What Node.js's own HTTP/2
 * (nghttp2 and its JavaScript binding) costs per request on this machine, under any gateway built on it.
 *
 *   PORT=8443 PEM=key-then-cert.pem node dist/bench/h2-floor.js
 */
import * as fs from 'node:fs';
import * as http2 from 'node:http2';

const pem = fs.readFileSync(process.env.PEM ?? '', 'utf8');
const at = pem.indexOf('-----BEGIN CERTIFICATE-----');
const body = Buffer.from(`{"ok":true,"pad":"${'x'.repeat(96 - 20)}"}`);
const headers = { ':status': 200, 'content-type': 'application/json', 'content-length': body.length };
const server = http2.createSecureServer({ key: pem.slice(0, at), cert: pem.slice(at), settings: { maxConcurrentStreams: 128 } });
server.on('stream', (stream) => {
  stream.on('error', () => undefined);
  stream.respond(headers);
  stream.end(body);
});
server.on('sessionError', () => undefined);
const port = Number(process.env.PORT ?? 8443);
server.listen(port, '127.0.0.1', () => process.stdout.write(`node:http2 floor on 127.0.0.1:${port} pid=${process.pid}\n`));
for (const sig of ['SIGTERM', 'SIGINT'] as const) process.once(sig, () => server.close(() => process.exit(0)));
