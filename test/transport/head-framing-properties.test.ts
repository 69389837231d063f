/**
 * Property tests (fast-check) of the head rewriting (lib/transport/headers.ts): for random field sets and
 * Connection token lists, the forwarded message is framed exactly as the received one: the same framing
 * kind (Content-Length, chunked, or neither: no body for a request, delimited by the close for a
 * response) and the same body length (docs/security.md, "Request smuggling").
 *
 * Three levels: the request and response heads the builders make, read back by the tests' own reader
 * (test/helpers/wire.ts, not the transport's parser); a router's replacement field list put through
 * withFramingOf; and whole exchanges through a real transport, where a raw backend reads each request and
 * a raw client each response. The suite runs a fixed seed (test/helpers/fc-seed.ts).
 */
import * as net from 'node:net';
import t from 'tap';
import fc from 'fast-check';
import { buildRequestHead, buildResponseHead, sameFraming, withFramingOf } from '../../lib/transport/headers';
import { DEFAULT_TRANSPORT_SETTINGS, resolveSettings, type TransportSettings } from '../../lib/transport/settings';
import { HOST, RawClient } from '../helpers/client';
import { MessageReader, parseHead, type Head, type Message } from '../helpers/wire';
import { checkTransitions, startTransport } from '../helpers/transport';
import { fcParams } from '../helpers/fc-seed';

type Kind = 'length' | 'chunked' | 'none';

/** Framing of a message: what a recipient reads its body by (RFC 9112 §6.3). */
interface Framing {
  readonly kind: Kind;
  /** Content-Length's value (kind 'length'). */
  readonly length: number;
}

const TCHAR = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-';

/** A name in random letter case. */
const cased = (name: string): fc.Arbitrary<string> =>
  fc
    .array(fc.boolean(), { minLength: name.length, maxLength: name.length })
    .map((up) => [...name].map((c, i) => (up[i] === true ? c.toUpperCase() : c)).join(''));

/** Tokens a Connection field may list: the framing fields above all, hop-by-hop names and inventions. */
const CONNECTION_TOKENS = [
  'content-length',
  'transfer-encoding',
  'host',
  'keep-alive',
  'close',
  'te',
  'trailer',
  'via',
  'server',
  'user-agent',
  'x-a',
  'x-b',
  'expect',
  'date',
];
const connectionToken = fc.oneof(
  fc.constantFrom(...CONNECTION_TOKENS).chain(cased),
  fc.string({ unit: fc.constantFrom(...TCHAR), minLength: 1, maxLength: 8 }),
);
/** Separators with optional whitespace (RFC 9110 §5.6.1), empty list elements included. */
const separator = fc.constantFrom(',', ', ', ' ,', ' , ', ',\t', '\t,\t', ', ,', ',,');
const ows = fc.constantFrom('', ' ', '\t', '  ');
const connectionValue = fc
  .tuple(ows, fc.array(fc.tuple(connectionToken, separator), { minLength: 1, maxLength: 5 }), connectionToken, ows)
  .map(([lead, pairs, last, trail]) => lead + pairs.map(([tok, sep]) => tok + sep).join('') + last + trail);
/** Values as the strict parser hands them over: no outer whitespace. */
const connectionField = fc.tuple(cased('connection'), connectionValue).map(([n, v]) => [n, v.trim()] as const);

/** Other fields: ordinary ones and the hop-by-hop ones the builders drop. */
const ORDINARY = [
  'Accept',
  'Cache-Control',
  'X-Request-Id',
  'Content-Type',
  'X-A',
  'X-B',
  'Trailer',
  'Date',
  'Via',
  'Server',
  'User-Agent',
  'Keep-Alive',
  'TE',
  'Proxy-Connection',
  'X-Forwarded-For',
];
const otherField = fc.tuple(
  fc.constantFrom(...ORDINARY).chain(cased),
  fc.string({ unit: fc.constantFrom(...TCHAR, ' ', '=', ';'), minLength: 1, maxLength: 12 }).map((v) => v.trim() || 'v'),
);

/** A message's framing fields for a framing, the name's case random. */
function framingFields(f: Framing, teValue: string): fc.Arbitrary<(readonly [string, string])[]> {
  if (f.kind === 'length') return cased('content-length').map((n) => [[n, String(f.length)] as const]);
  if (f.kind === 'chunked') return cased('transfer-encoding').map((n) => [[n, teValue] as const]);
  return fc.constant([]);
}

const framing = (kinds: readonly Kind[]): fc.Arbitrary<Framing> =>
  fc.record({ kind: fc.constantFrom(...kinds), length: fc.integer({ min: 0, max: 1 << 20 }) });

/** Fields in a random order: the framing fields, 0-3 Connection fields and 0-8 others. */
function fieldSet(f: Framing, teValues: readonly string[]): fc.Arbitrary<string[]> {
  return fc
    .constantFrom(...teValues)
    .chain((te) => fc.tuple(framingFields(f, te), fc.array(connectionField, { maxLength: 3 }), fc.array(otherField, { maxLength: 8 })))
    .chain(([fr, conns, others]) =>
      fc.shuffledSubarray([...fr, ...conns, ...others], { minLength: fr.length + conns.length + others.length }),
    )
    .map((pairs) => pairs.flatMap(([n, v]) => [n, v]));
}

/** The framing a head declares, read as a recipient would (the test reader's parse, RFC 9112 §6.3). */
function declared(head: Head): { framing: Framing; contentLengths: number; transferEncodings: number } {
  let contentLengths = 0;
  let transferEncodings = 0;
  let length = -1;
  let lastCoding = '';
  for (const [name, value] of head.rawHeaders) {
    const n = name.toLowerCase();
    if (n === 'content-length') {
      contentLengths++;
      length = Number(value);
    } else if (n === 'transfer-encoding') {
      transferEncodings++;
      lastCoding = (value.split(',').pop() ?? '').trim().toLowerCase();
    }
  }
  const kind: Kind = transferEncodings > 0 ? (lastCoding === 'chunked' ? 'chunked' : 'none') : contentLengths > 0 ? 'length' : 'none';
  return { framing: { kind, length: kind === 'length' ? length : 0 }, contentLengths, transferEncodings };
}

function sameAs(got: Framing, want: Framing): boolean {
  return got.kind === want.kind && (want.kind !== 'length' || got.length === want.length);
}

/** Settings the builders read: the default, and ones that keep or add fields. */
const SETTINGS: readonly TransportSettings[] = [
  DEFAULT_TRANSPORT_SETTINGS,
  resolveSettings({ preserveHeaders: ['content-length', 'transfer-encoding', 'host'], via: '', xForwarded: false }),
  resolveSettings({ preserveUserAgent: false, preserveServer: false }),
];

t.test('request heads: framed exactly as received, whatever the fields and Connection tokens', async (t) => {
  fc.assert(
    fc.property(
      framing(['length', 'chunked', 'none']).chain((f) => fc.tuple(fc.constant(f), fieldSet(f, ['chunked', 'Chunked', ' chunked']))),
      fc.constantFrom(...SETTINGS),
      fc.boolean(),
      fc.boolean(),
      ([f, headers], settings, trustedPeer, close) => {
        const head = buildRequestHead(
          { method: 'POST', path: '/p', headers, hostHeader: 'backend:8080', remoteAddress: '10.0.0.1', trustedPeer, proto: 'http', close },
          settings,
        );
        const d = declared(parseHead(Buffer.from(head, 'latin1'), 'request'));
        return (
          sameAs(d.framing, f) &&
          d.contentLengths === (f.kind === 'length' ? 1 : 0) &&
          d.transferEncodings === (f.kind === 'chunked' ? 1 : 0)
        );
      },
    ),
    fcParams(2000),
  );
  t.pass('2000 random request heads kept their framing');
});

t.test('response heads: framed exactly as received, router fields and Connection tokens whatever they say', async (t) => {
  // A response may carry codings before chunked (RFC 9112 §6.1); the builder combines repeated fields.
  const routerField = fc.tuple(
    fc.constantFrom('Content-Length', 'transfer-encoding', 'Connection', 'X-Added', 'Keep-Alive').chain(cased),
    fc.constantFrom('0', '7', 'chunked', 'content-length', 'close'),
  );
  fc.assert(
    fc.property(
      framing(['length', 'chunked', 'none']).chain((f) => fc.tuple(fc.constant(f), fieldSet(f, ['chunked', 'gzip, chunked', 'CHUNKED']))),
      fc.array(routerField, { maxLength: 3 }),
      fc.constantFrom('', 'keep-alive', 'close'),
      fc.constantFrom(...SETTINGS),
      ([f, headers], extra, connection, settings) => {
        const head = buildResponseHead(
          {
            statusCode: 200,
            statusText: 'OK',
            headers,
            connection: connection as '' | 'keep-alive' | 'close',
            dechunk: false,
            extra: extra.flatMap(([n, v]) => [n, v]),
          },
          settings,
        );
        const d = declared(parseHead(Buffer.from(head, 'latin1'), 'response'));
        return (
          sameAs(d.framing, f) &&
          d.contentLengths === (f.kind === 'length' ? 1 : 0) &&
          d.transferEncodings === (f.kind === 'chunked' ? 1 : 0)
        );
      },
    ),
    fcParams(2000),
  );
  t.pass('2000 random response heads kept their framing');
});

t.test("a router's replacement fields: withFramingOf gives them the received framing, sameFraming agrees", async (t) => {
  fc.assert(
    fc.property(
      framing(['length', 'chunked', 'none']).chain((f) => fieldSet(f, ['chunked'])),
      framing(['length', 'chunked', 'none']).chain((f) => fieldSet(f, ['chunked', 'gzip'])),
      (received, router) => {
        const out = withFramingOf(router, received);
        const head = (h: readonly string[]): Framing =>
          declared(
            parseHead(
              Buffer.from(
                buildRequestHead(
                  { method: 'PUT', path: '/', headers: h, hostHeader: 'b', remoteAddress: '10.0.0.1', proto: 'http', close: false },
                  DEFAULT_TRANSPORT_SETTINGS,
                ),
                'latin1',
              ),
              'request',
            ),
          ).framing;
        return sameFraming(out, received) && sameAs(head(out), head(received)) && out.length <= router.length + 2;
      },
    ),
    fcParams(1000),
  );
  t.pass('1000 random router lists took the received framing');
});

// ---- end to end ---------------------------------------------------------------------------------------

interface Exchange {
  /** Request framing and payload. */
  readonly request: Kind;
  readonly requestBody: string;
  readonly requestConnection: readonly (readonly [string, string])[];
  readonly response: Kind;
  readonly responseBody: string;
  readonly responseConnection: readonly (readonly [string, string])[];
}

const payload = fc.string({ unit: fc.constantFrom(...TCHAR, '\r', '\n', ' ', ':'), maxLength: 200 });
/** End-to-end Connection fields never say close to the gateway's client side: each run uses one connection anyway. */
const e2eConnection = fc.array(connectionField, { maxLength: 2 });

/** A body framed by `kind`: chunked in random cuts, the field lines to go with it. */
function frame(kind: Kind, body: string, cuts: number): { fields: string; wire: string } {
  if (kind === 'length') return { fields: `Content-Length: ${body.length}\r\n`, wire: body };
  if (kind === 'chunked') {
    const size = Math.max(1, Math.ceil(body.length / Math.max(1, cuts)));
    let wire = '';
    for (let i = 0; i < body.length; i += size) {
      const piece = body.slice(i, i + size);
      wire += `${piece.length.toString(16)}\r\n${piece}\r\n`;
    }
    return { fields: 'Transfer-Encoding: chunked\r\n', wire: wire + '0\r\n\r\n' };
  }
  return { fields: '', wire: body };
}

function lines(fields: readonly (readonly [string, string])[]): string {
  return fields.map(([n, v]) => `${n}: ${v}\r\n`).join('');
}

t.test('whole exchanges through a transport: the backend and the client read each body as sent', async (t) => {
  const runs = new Map<string, Exchange>();
  const seen: Message[] = [];
  const server = net.createServer((socket) => {
    socket.on('error', () => {});
    const reader = new MessageReader('request');
    socket.on('data', (chunk: Buffer) => {
      try {
        reader.push(chunk);
      } catch {
        socket.destroy();
        return;
      }
      for (const req of reader.messages.splice(0)) {
        seen.push(req);
        const ex = runs.get(req.url);
        if (ex === undefined) {
          socket.destroy();
          return;
        }
        const f = frame(ex.response, ex.responseBody, 3);
        socket.write(`HTTP/1.1 200 OK\r\n${lines(ex.responseConnection)}${f.fields}\r\n${f.wire}`, 'latin1');
        // A body delimited by the close ends with it (RFC 9112 §6.3 rule 8).
        if (ex.response === 'none') socket.end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen({ port: 0, host: HOST }, resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const h = await startTransport(t, `http://${HOST}:${(server.address() as net.AddressInfo).port}`);
  let n = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.record({
        request: fc.constantFrom<Kind>('length', 'chunked', 'none'),
        requestBody: payload,
        requestConnection: e2eConnection,
        response: fc.constantFrom<Kind>('length', 'chunked', 'none'),
        responseBody: payload,
        responseConnection: e2eConnection,
      }),
      fc.integer({ min: 1, max: 4 }),
      async (ex, cuts) => {
        const url = `/run-${++n}`;
        const body = ex.request === 'none' ? '' : ex.requestBody;
        runs.set(url, { ...ex, requestBody: body });
        const requestConnection = ex.requestConnection.filter(([, v]) => !/(^|[\s,])close($|[\s,])/i.test(v));
        const f = frame(ex.request, body, cuts);
        const c = await RawClient.connect(h.port);
        try {
          await c.write(`POST ${url} HTTP/1.1\r\nHost: a\r\n${lines(requestConnection)}${f.fields}\r\n${f.wire}`);
          const res = await c.message(1, 5000);
          const req = seen.find((r) => r.url === url);
          if (req === undefined) return false;
          const reqOk =
            req.body.toString('latin1') === body &&
            req.chunked === (ex.request === 'chunked') &&
            (ex.request !== 'length' || req.headers['content-length'] === String(body.length));
          const d = declared(res);
          const want: Framing = { kind: ex.response, length: ex.responseBody.length };
          const resOk = res.complete && res.body.toString('latin1') === ex.responseBody && sameAs(d.framing, want);
          // A close-delimited body is only delimited if the connection closes after it.
          const closeOk = ex.response !== 'none' || (await c.waitClose(3000));
          return reqOk && resOk && closeOk && seen.filter((r) => r.url === url).length === 1;
        } finally {
          c.destroy();
        }
      },
    ),
    fcParams(60),
  );
  t.equal(seen.length, n, 'the backend read one request per run, no more');
  t.equal(h.faults.length, 0, 'no fault');
});

checkTransitions(t);
