/**
 * The gRPC backend of `npm run bench -- --h2` (bench/h2.ts): a bare `node:http2` server with prior knowledge
 * (h2c, RFC 9113 §3.3) answering the unary method `/bench.Echo/Get` of bench/h2.ts's proto with one
 * length-prefixed message (the gRPC framing of doc PROTOCOL-HTTP2: a flag byte, a 4-byte length, the
 * message) and the trailers `grpc-status: 0`. No protobuf is decoded: the backend's own cost stays small, so
 * the proxy in front of it is what a run measures. Anything else answers `grpc-status: 12` (UNIMPLEMENTED).
 *
 *   PORT=50051 node dist/bench/grpc-backend.js
 */
import * as http2 from 'node:http2';

/** The answer's message: field 1 (a string) of the Reply message, "ok", framed (uncompressed). */
const MESSAGE = Buffer.from([0x0a, 0x02, 0x6f, 0x6b]);
const FRAME = Buffer.concat([Buffer.from([0, 0, 0, 0, MESSAGE.length]), MESSAGE]);
const HEADERS = { ':status': 200, 'content-type': 'application/grpc' };

const server = http2.createServer({ settings: { maxConcurrentStreams: 1000 } });
server.on('stream', (stream, headers) => {
  stream.on('error', () => undefined);
  const ok = headers[':path'] === '/bench.Echo/Get';
  // The request's message is read and dropped; the answer goes once the client has ended its side.
  stream.on('data', () => undefined);
  stream.on('end', () => {
    if (stream.destroyed) return;
    if (!ok) {
      stream.respond({ ...HEADERS, 'grpc-status': '12', 'grpc-message': 'unknown method' }, { endStream: true });
      return;
    }
    stream.respond(HEADERS, { waitForTrailers: true });
    stream.once('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
    stream.end(FRAME);
  });
});
server.on('sessionError', () => undefined);
const port = Number(process.env.PORT ?? 50051);
server.listen(port, '127.0.0.1', () => {
  process.stdout.write(`grpc backend (h2c) on 127.0.0.1:${port} pid=${process.pid}\n`);
});
for (const sig of ['SIGTERM', 'SIGINT'] as const) process.once(sig, () => server.close(() => process.exit(0)));
