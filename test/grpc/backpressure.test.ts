/**
 * gRPC relay backpressure (docs/grpc.md, "What a call goes through": the client's stream is read only as
 * fast as the backend's takes it): a client streams 32 MiB of messages to a raw node:http2 backend that reads
 * nothing for a while. The gateway must not take the client's bytes faster than the backend takes them:
 * while the backend stalls, what the client got written stays within the flow-control windows on the way
 * (the gateway's initial_window_size, 1 MiB, plus the backend's 64 KiB and the relay's stream buffers), far
 * below the 32 MiB a gateway that read everything would have taken. Once the backend reads, every byte
 * arrives in order (its SHA-256 digest, sent back as a trailer) and the call ends with status 0.
 */
import * as crypto from 'node:crypto';
import * as http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { grpcNode } from './helpers';

const TOTAL = 32 * 1024 * 1024;
const CHUNK = 64 * 1024;
/** What may sit in windows and buffers between client and backend while the backend stalls. */
const STALL_BOUND = 4 * 1024 * 1024;

t.test('a stalled backend holds the client back; once it reads, all 32 MiB arrive', async (t) => {
  // The raw backend: paused until `release`, then reads the call whole and answers with its digest.
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let backendGot = 0;
  let calls = 0;
  const backend = http2.createServer();
  backend.on('stream', (stream) => {
    stream.on('error', () => undefined);
    calls++;
    stream.pause();
    const hash = crypto.createHash('sha256');
    void released.then(() => {
      stream.on('data', (c: Buffer) => {
        backendGot += c.length;
        hash.update(c);
      });
      stream.resume();
    });
    stream.on('end', () => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.once('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0', 'x-digest': hash.digest('hex') }));
      stream.end(Buffer.from([0, 0, 0, 0, 0]));
    });
  });
  await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
  t.teardown(() => backend.close());
  const backendPort = (backend.address() as AddressInfo).port;

  const g = await grpcNode((proto) => [
    {
      name: 'stream',
      context: '/stream',
      version: '1',
      type: 'GRPC',
      auth: 'none',
      grpc: { proto: [proto] },
      endpoints: { production: `http://127.0.0.1:${backendPort}` },
      resources: [{ path: '/routeguide.RouteGuide/RecordRoute' }],
    },
  ]);
  t.teardown(() => g.close());

  const session = http2.connect(`http://127.0.0.1:${g.plainPort}`);
  t.teardown(() => session.close());
  const call = session.request({
    ':method': 'POST',
    ':path': '/routeguide.RouteGuide/RecordRoute',
    'content-type': 'application/grpc',
    te: 'trailers',
  });
  const sent = crypto.createHash('sha256');
  let written = 0;
  const answer = new Promise<{ status: number; trailers: http2.IncomingHttpHeaders }>((resolve, reject) => {
    let status = 0;
    call.on('response', (h) => (status = Number(h[':status'])));
    call.on('trailers', (tr) => resolve({ status, trailers: tr }));
    call.on('error', reject);
    call.on('data', () => undefined);
  });
  // Writes as fast as the stream takes them, counting what was flushed (each write's callback).
  let offset = 0;
  const pump = (): void => {
    while (offset < TOTAL) {
      const body = crypto.randomBytes(CHUNK);
      const frame = Buffer.concat([Buffer.from([0, 0, 0, 0, 0]), body]);
      frame.writeUInt32BE(CHUNK, 1);
      sent.update(frame);
      offset += CHUNK;
      const more = call.write(frame, () => (written += frame.length));
      if (!more) {
        call.once('drain', pump);
        return;
      }
    }
    call.end();
  };
  pump();

  // The backend reads nothing for 1.5 s: the client is held back by the windows.
  await new Promise((r) => setTimeout(r, 1500));
  t.equal(calls, 1, 'the call reached the backend');
  t.equal(backendGot, 0, 'the backend has read nothing yet');
  t.ok(written > 0, `the client could start (${written} bytes written)`);
  t.ok(
    written <= STALL_BOUND,
    `while the backend stalls the client has written ${written} of ${TOTAL + (TOTAL / CHUNK) * 5} bytes (at most ${STALL_BOUND})`,
  );

  release();
  const a = await answer;
  t.equal(a.status, 200);
  t.equal(a.trailers['grpc-status'], '0', 'the call ends with status 0');
  t.equal(backendGot, TOTAL + (TOTAL / CHUNK) * 5, 'every byte reached the backend');
  t.equal(a.trailers['x-digest'], sent.digest('hex'), 'in order, unchanged (SHA-256)');
});
