/**
 * HTTP/2 defences (docs/http2.md, "Defences"), each attack sent with hand-written frames (frames.ts) on a
 * TLS connection that chose h2: rapid reset (CVE-2023-44487), CONTINUATION flood (CVE-2024-27316), an
 * HPACK bomb, SETTINGS and PING floods, a zero-window stall, the idle timeout.
 */
import t, { type Test } from 'tap';
import * as http from 'node:http';
import * as http2 from 'node:http2';
import { api, connect, echoBackend, h2Gateway, h2Request, HOST } from './helpers';
import { until } from '../gateway/helpers';
import { FLAG, FRAME, frame, getBlock, indexed, indexedLiteral, literal, rawH2, type Got } from './frames';
import type { Http2Settings } from '../../lib/http2';

const C = http2.constants;
const held: http.ServerResponse[] = [];

async function setup(t: Test, over: Partial<Http2Settings>) {
  const backend = await echoBackend((req, res) => {
    if (req.url === '/download') {
      res.end(Buffer.alloc(4 * 1024 * 1024, 'd'));
      return true;
    }
    if (req.url === '/wait') {
      held.push(res);
      return true;
    }
    return false;
  });
  const g = await h2Gateway([api('Pets', '/pets', `http://${HOST}:${backend.port}`)], over);
  t.teardown(async () => {
    for (const r of held.splice(0)) r.destroy();
    await g.close();
    await backend.close();
  });
  return g;
}

const responses = (frames: readonly Got[]): number => frames.filter((f) => f.type === FRAME.HEADERS).length;
const get = (id: number, path = '/pets/v1/x'): Buffer => frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, id, getBlock(path));
const rst = (id: number, code: number = C.NGHTTP2_CANCEL): Buffer => {
  const p = Buffer.alloc(4);
  p.writeUInt32BE(code);
  return frame(FRAME.RST_STREAM, 0, id, p);
};

t.test('rapid reset: streams opened and reset past reset_burst end the connection with GOAWAY', async (t) => {
  const g = await setup(t, { resetBurst: 20, resetRate: 1 });
  const c = await rawH2(g.tlsPort, g.pki.ca.certPem);
  t.teardown(() => c.destroy());
  const burst: Buffer[] = [];
  for (let i = 0; i < 200; i++) burst.push(get(2 * i + 1, '/pets/v1/wait'), rst(2 * i + 1));
  c.send(Buffer.concat(burst));
  t.ok(await c.until(() => c.goaway() !== undefined), 'GOAWAY sent');
  t.ok(await c.closed(), 'the connection closed');
  t.equal(g.handover.refused.rapid_reset, 1, 'counted as a rapid reset');
  t.ok(await until(() => g.gw.transport.connections().inFlight === 0), 'no exchange left in flight');
});

t.test('the same resets under the default burst (1000) are served on', async (t) => {
  const g = await setup(t, {});
  const c = await rawH2(g.tlsPort, g.pki.ca.certPem);
  t.teardown(() => c.destroy());
  const burst: Buffer[] = [];
  for (let i = 0; i < 50; i++) burst.push(get(2 * i + 1, '/pets/v1/wait'), rst(2 * i + 1));
  c.send(Buffer.concat(burst));
  c.send(get(101));
  t.ok(await c.until((f) => f.some((x) => x.type === FRAME.HEADERS && x.stream === 101)), 'a later stream is answered');
  t.equal(c.goaway(), undefined, 'no GOAWAY');
});

t.test('CONTINUATION flood: a header block that never ends is cut off, nothing is answered', async (t) => {
  const g = await setup(t, {});
  const c = await rawH2(g.tlsPort, g.pki.ca.certPem);
  t.teardown(() => c.destroy());
  const flood: Buffer[] = [frame(FRAME.HEADERS, FLAG.END_STREAM, 1, getBlock('/pets/v1/x'))];
  for (let i = 0; i < 2000; i++) flood.push(frame(FRAME.CONTINUATION, 0, 1, literal(`x-c${i}`, 'v')));
  c.send(Buffer.concat(flood));
  // nghttp2 ends the connection; its GOAWAY may or may not reach the client before the close.
  t.ok(await c.closed(), 'the connection closed');
  t.equal(responses(c.frames), 0, 'no response');
});

t.test('HPACK bomb: one 4000-byte field indexed 100 times is refused by max_header_list_size', async (t) => {
  const g = await setup(t, {});
  const c = await rawH2(g.tlsPort, g.pki.ca.certPem);
  t.teardown(() => c.destroy());
  const refs = Array.from({ length: 100 }, () => indexed(62));
  const block = Buffer.concat([getBlock('/pets/v1/x'), indexedLiteral('x-bomb', 'a'.repeat(4000)), ...refs]);
  t.ok(block.length < 16384, `the block is small on the wire (${block.length} bytes, ~400 KB decoded)`);
  c.send(frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, 1, block));
  t.ok(
    await c.until((f) => f.some((x) => (x.type === FRAME.RST_STREAM && x.stream === 1) || x.type === FRAME.GOAWAY)),
    'the stream is reset or the connection ended',
  );
  t.equal(responses(c.frames), 0, 'no response');
  const r = c.frames.find((x) => x.type === FRAME.RST_STREAM);
  if (r !== undefined) t.equal(r.payload.readUInt32BE(0), C.NGHTTP2_ENHANCE_YOUR_CALM, 'ENHANCE_YOUR_CALM');
});

t.test('PING flood: past max_control_frames, GOAWAY ENHANCE_YOUR_CALM', async (t) => {
  const g = await setup(t, { maxControlFrames: 20 });
  const c = await rawH2(g.tlsPort, g.pki.ca.certPem);
  t.teardown(() => c.destroy());
  c.send(Buffer.concat(Array.from({ length: 50 }, (_, i) => frame(FRAME.PING, 0, 0, Buffer.alloc(8, i)))));
  t.ok(await c.until(() => c.goaway() !== undefined), 'GOAWAY');
  t.equal(c.goaway()?.code, C.NGHTTP2_ENHANCE_YOUR_CALM);
  t.ok(await c.closed(), 'closed');
  t.equal(g.handover.refused.control_frames, 1, 'counted');
});

t.test('SETTINGS flood: past max_control_frames, GOAWAY ENHANCE_YOUR_CALM; fewer are fine', async (t) => {
  const g = await setup(t, { maxControlFrames: 20 });
  const ok = await rawH2(g.tlsPort, g.pki.ca.certPem);
  t.teardown(() => ok.destroy());
  ok.send(Buffer.concat(Array.from({ length: 10 }, () => frame(FRAME.SETTINGS, 0, 0))));
  ok.send(get(1));
  t.ok(await ok.until((f) => f.some((x) => x.type === FRAME.HEADERS && x.stream === 1)), '11 SETTINGS: served');
  const c = await rawH2(g.tlsPort, g.pki.ca.certPem);
  t.teardown(() => c.destroy());
  c.send(Buffer.concat(Array.from({ length: 50 }, () => frame(FRAME.SETTINGS, 0, 0))));
  t.ok(await c.until(() => c.goaway() !== undefined), 'GOAWAY');
  t.equal(c.goaway()?.code, C.NGHTTP2_ENHANCE_YOUR_CALM);
});

t.test('zero-window stall: a response the client grants no window is reset after stall_timeout, its backend released', async (t) => {
  const g = await setup(t, { stallTimeout: 300 });
  // SETTINGS_INITIAL_WINDOW_SIZE (0x4) = 0: the server may send no DATA on any stream.
  const zero = Buffer.alloc(6);
  zero.writeUInt16BE(0x4, 0);
  zero.writeUInt32BE(0, 2);
  const c = await rawH2(g.tlsPort, g.pki.ca.certPem, zero);
  t.teardown(() => c.destroy());
  c.send(get(1, '/pets/v1/download'));
  t.ok(await c.until((f) => f.some((x) => x.type === FRAME.HEADERS && x.stream === 1)), 'the response head came');
  t.ok(await c.until((f) => f.some((x) => x.type === FRAME.RST_STREAM && x.stream === 1), 5000), 'then the stream was reset');
  t.equal(c.frames.find((x) => x.type === FRAME.RST_STREAM)?.payload.readUInt32BE(0), C.NGHTTP2_CANCEL, 'CANCEL');
  t.ok(await until(() => g.gw.transport.connections().inFlight === 0), 'the exchange ended');
});

t.test('idle_timeout: a connection without streams gets GOAWAY NO_ERROR and is closed', async (t) => {
  const g = await setup(t, { idleTimeout: 300 });
  const c = await rawH2(g.tlsPort, g.pki.ca.certPem);
  t.teardown(() => c.destroy());
  t.ok(await c.closed(5000), 'closed');
  t.equal(c.goaway()?.code, C.NGHTTP2_NO_ERROR);
});

t.test('max_concurrent_streams: announced in SETTINGS; a stream past it never reaches a backend, the node serves on', async (t) => {
  const g = await setup(t, { maxConcurrentStreams: 2 });
  const c = await rawH2(g.tlsPort, g.pki.ca.certPem);
  t.teardown(() => c.destroy());
  t.ok(await c.until((f) => f.some((x) => x.type === FRAME.SETTINGS && (x.flags & FLAG.ACK) === 0)), "the server's SETTINGS came");
  const settings = c.frames.find((x) => x.type === FRAME.SETTINGS && (x.flags & FLAG.ACK) === 0) as Got;
  let announced: number | undefined;
  for (let i = 0; i + 6 <= settings.payload.length; i += 6)
    if (settings.payload.readUInt16BE(i) === 0x3) announced = settings.payload.readUInt32BE(i + 2);
  t.equal(announced, 2, 'SETTINGS_MAX_CONCURRENT_STREAMS = 2 (RFC 9113 §6.5.2)');
  t.ok(await c.until((f) => f.some((x) => x.type === FRAME.SETTINGS && (x.flags & FLAG.ACK) !== 0)), 'our SETTINGS acknowledged');
  // Past the limit is a protocol error (RFC 9113 §5.1.2) that ends the connection's streams: Node.js 22.23 and
  // 26.10 send GOAWAY PROTOCOL_ERROR, Node.js 20 resets the open streams (RST_STREAM) first.
  c.send(Buffer.concat([get(1, '/pets/v1/wait'), get(3, '/pets/v1/wait'), get(5, '/pets/v1/x')]));
  t.ok(
    await c.until((f) => f.some((x) => x.type === FRAME.GOAWAY || x.type === FRAME.RST_STREAM), 15_000),
    'the connection is ended (GOAWAY) or its streams reset (RST_STREAM)',
  );
  const code = c.goaway()?.code;
  if (code !== undefined) t.equal(code, C.NGHTTP2_PROTOCOL_ERROR, 'GOAWAY PROTOCOL_ERROR');
  await new Promise((r) => setTimeout(r, 300));
  t.notOk(
    c.frames.some((x) => x.type === FRAME.HEADERS && x.stream === 5),
    'the stream past the limit is not answered',
  );
  t.ok(held.length <= 2, `at most 2 exchanges reached the backend (${held.length})`);
  t.ok(await until(() => g.gw.transport.connections().inFlight === 0), 'the reset streams ended their exchanges');
  const s = connect(g);
  t.teardown(() => s.close());
  t.equal((await h2Request(s, { ':method': 'GET', ':path': '/pets/v1/after' })).status, 200, 'another connection is served');
});
