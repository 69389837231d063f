/**
 * Field values an HTTP/2 client sends are bytes HPACK carries as they are (RFC 7541 §5.2); RFC 9113 §8.2.1
 * makes a field value with CR, LF or NUL, and a name with upper case, a space, a colon past the first
 * octet or a control octet, malformed. Nothing of such a field may reach the backend, whose HTTP/1.1 head
 * those octets would otherwise split (request smuggling). Each request is hand-written HPACK (frames.ts)
 * so no client library cleans it first.
 */
import t, { type Test } from 'tap';
import * as net from 'node:net';
import * as http2 from 'node:http2';
import { api, h2Gateway, HOST } from './helpers';
import { FLAG, FRAME, frame, indexed, literal, rawH2, type Got } from './frames';
import { until } from '../gateway/helpers';
import { MALFORMED, requestHead, TOO_LARGE } from '../../lib/http2/stream';

const C = http2.constants;

/** A raw backend that records every byte it is sent and answers each request 200 with a short body. */
async function rawBackend(t: Test): Promise<{ port: number; got: () => string }> {
  let got = '';
  const server = net.createServer((s) => {
    s.on('data', (d: Buffer) => {
      got += d.toString('latin1');
      if (got.includes('\r\n\r\n')) s.end('HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok');
    });
    s.on('error', () => undefined);
  });
  await new Promise<void>((r) => server.listen(0, HOST, r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  return { port: (server.address() as net.AddressInfo).port, got: () => got };
}

async function setup(t: Test) {
  const backend = await rawBackend(t);
  const g = await h2Gateway([api('Pets', '/pets', `http://${HOST}:${backend.port}`)]);
  t.teardown(() => g.close());
  const c = await rawH2(g.tlsPort, g.pki.ca.certPem);
  t.teardown(() => c.destroy());
  return { backend, c };
}

/** A GET whose block is :method GET, :scheme https (static table), then `fields` as literals in order. */
const get = (id: number, fields: readonly (readonly [string, string])[]): Buffer =>
  frame(
    FRAME.HEADERS,
    FLAG.END_HEADERS | FLAG.END_STREAM,
    id,
    Buffer.concat([indexed(2), indexed(7), ...fields.map(([n, v]) => literal(n, v))]),
  );

const on = (frames: readonly Got[], id: number) => frames.filter((f) => f.stream === id);
const rstCode = (frames: readonly Got[], id: number): number | undefined => {
  const r = on(frames, id).find((f) => f.type === FRAME.RST_STREAM);
  return r === undefined ? undefined : r.payload.readUInt32BE(0);
};

const base: readonly (readonly [string, string])[] = [
  [':path', '/pets/v1/x'],
  [':authority', 'localhost'],
];

t.test('a clean request is answered (the case the others differ from)', async (t) => {
  const { backend, c } = await setup(t);
  c.send(get(1, [...base, ['x-a', 'b']]));
  t.ok(await c.until((f) => on(f, 1).some((x) => x.type === FRAME.HEADERS)), 'stream 1 answered');
  t.match(backend.got(), /\r\nx-a: b\r\n/, 'the field reached the backend');
});

t.test('a value with octets past ASCII (obs-text, RFC 9110 §5.5) reaches the backend octet for octet', async (t) => {
  const { backend, c } = await setup(t);
  c.send(get(1, [...base, ['x-a', 'caf\u00e9 \u00ff']]));
  t.ok(await c.until((f) => on(f, 1).some((x) => x.type === FRAME.HEADERS)), 'stream 1 answered');
  t.match(backend.got(), /\r\nx-a: caf\u00e9 \u00ff\r\n/, 'the octets 0xE9 and 0xFF as sent');
});

/**
 * Regular fields nghttp2 finds malformed (its nghttp2_check_header_name/value) are dropped before the
 * stream reaches the gateway: the request is served without them. Pseudo-fields it cannot drop: the stream
 * is reset with PROTOCOL_ERROR, by nghttp2 or by requestHead (stream.ts).
 */
const dropped: readonly [string, readonly (readonly [string, string])[]][] = [
  ['CR LF in a value', [...base, ['x-a', 'b\r\ncontent-length: 5']]],
  ['LF alone in a value', [...base, ['x-a', 'b\ntransfer-encoding: chunked']]],
  ['CR alone in a value', [...base, ['x-a', 'b\rx-b: c']]],
  ['NUL in a value', [...base, ['x-a', 'b\0c']]],
  ['CR LF in a cookie', [...base, ['cookie', 'a=b\r\nx-b: c']]],
  ['a colon in a name', [...base, ['x:a', 'b']]],
  ['a space in a name', [...base, ['x a', 'b']]],
  ['CR LF in a name', [...base, ['x-a\r\nx-b', 'c']]],
];
const reset: readonly [string, readonly (readonly [string, string])[]][] = [
  [
    'CR LF in :authority',
    [
      [':path', '/pets/v1/x'],
      [':authority', 'localhost\r\nx-b: c'],
    ],
  ],
  ['CR LF in :method', [[':method', 'GET / HTTP/1.1\r\nx: y\r\n\r\nGET'], ...base]],
  [
    'a space in :path',
    [
      [':path', '/pets/v1/x HTTP/1.1\r\nx: y'],
      [':authority', 'localhost'],
    ],
  ],
  [
    'a space in :path, no line break',
    [
      [':path', '/pets/v1/x /y'],
      [':authority', 'localhost'],
    ],
  ],
  [
    'a tab in :path',
    [
      [':path', '/pets/v1/x\t/y'],
      [':authority', 'localhost'],
    ],
  ],
  ['upper case in a name', [...base, ['X-A', 'b']]],
];

/** The request heads the backend received, one string each. */
const heads = (got: string): string[] => got.split('\r\n\r\n').filter((h) => h !== '');

for (const [what, fields] of dropped) {
  t.test(`${what}: the field is dropped, the request is served without it`, async (t) => {
    const { backend, c } = await setup(t);
    c.send(get(1, [...fields, ['x-clean', 'yes']]));
    t.ok(await c.until((f) => rstCode(f, 1) !== undefined || on(f, 1).some((x) => x.type === FRAME.HEADERS)), 'stream 1 ended');
    t.equal(rstCode(c.frames, 1), undefined, 'no reset');
    t.ok(await until(() => heads(backend.got()).length === 1), 'one request reached the backend');
    const [head = ''] = heads(backend.got());
    t.match(head, /\r\nx-clean: yes(\r\n|$)/, 'the clean field after it is forwarded');
    t.notMatch(head, /x-a|x-b|content-length|transfer-encoding|cookie|\0/i, 'nothing of the malformed field is');
  });
}

for (const [what, fields] of reset) {
  t.test(`${what}: the stream is reset with PROTOCOL_ERROR, nothing reaches the backend`, async (t) => {
    const { backend, c } = await setup(t);
    c.send(get(1, fields));
    t.ok(await c.until((f) => rstCode(f, 1) !== undefined || on(f, 1).some((x) => x.type === FRAME.HEADERS)), 'stream 1 ended');
    t.equal(rstCode(c.frames, 1), C.NGHTTP2_PROTOCOL_ERROR, 'RST_STREAM PROTOCOL_ERROR');
    t.notOk(
      on(c.frames, 1).some((x) => x.type === FRAME.HEADERS),
      'no response on stream 1',
    );
    // The connection serves on: a malformed stream is a stream error (RFC 9113 §8.1.1).
    c.send(get(3, base));
    t.ok(await c.until((f) => on(f, 3).some((x) => x.type === FRAME.HEADERS)), 'a later clean stream is answered');
    t.equal(heads(backend.got()).length, 1, 'only the clean stream reached the backend');
    t.notMatch(backend.got(), /x-b|x: y|\/y/, 'no injected field or path reached the backend');
  });
}

t.test('requestHead refuses what would split the head, should nghttp2 pass it on', async (t) => {
  const ok = requestHead([':method', 'GET', ':path', '/a', ':authority', 'h', 'x-a', 'b'], false, 16384);
  t.same(ok, { method: 'GET', head: 'GET /a HTTP/1.1\r\nhost: h\r\nx-a: b\r\nconnection: close\r\n\r\n', chunked: false }, 'a clean head');
  for (const [what, raw] of [
    ['CR LF in a value', ['x-a', 'b\r\ncontent-length: 5']],
    ['LF in a value', ['x-a', 'b\nx: y']],
    ['CR in a value', ['x-a', 'b\rx: y']],
    ['NUL in a value', ['x-a', 'b\0']],
    ['CR LF in a name', ['x-a\r\nx', 'y']],
    ['CR LF in a cookie', ['cookie', 'a=b\r\nx: y']],
    ['CR LF in :authority', [':authority', 'h\r\nx: y']],
    ['a space in :path', [':path', '/a b']],
    ['a tab in :path', [':path', '/a\tb']],
  ] as const) {
    t.equal(requestHead([':method', 'GET', ':path', '/a', ...raw], false, 16384), MALFORMED, what);
  }
  t.equal(MALFORMED.refused, C.NGHTTP2_PROTOCOL_ERROR, 'MALFORMED resets with PROTOCOL_ERROR');
  t.equal(requestHead(['x-a', 'b'.repeat(20000)], false, 16384), TOO_LARGE, 'past the list size: TOO_LARGE');
  t.equal(TOO_LARGE.refused, C.NGHTTP2_ENHANCE_YOUR_CALM, 'TOO_LARGE resets with ENHANCE_YOUR_CALM');
});
