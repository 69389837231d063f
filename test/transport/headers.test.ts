/**
 * Header handling, checked on the bytes each side receives: names keep their case and values their
 * bytes (obs-text included: 0xE9 in latin1 arrives as 0xE9); hop-by-hop fields (RFC 9110 §7.6.1:
 * Connection and every name it lists, Keep-Alive, TE, Upgrade, Proxy-Connection) are removed both
 * ways; X-Forwarded-For from a peer that is not a trusted proxy is replaced, X-Forwarded-Proto/-Host are set; Via is added both ways; Host
 * is the target's host:port; and the preserve settings ('http.user.agent.preserve',
 * 'http.server.preserve', 'http.headers.preserve') do what they say.
 */
import t, { type Test } from 'tap';
import { rawBackend, type RawBackend } from '../helpers/backend';
import { RawClient, rawRequest } from '../helpers/client';
import { checkTransitions, startTransport, type StartOptions } from '../helpers/transport';
import type { Message } from '../helpers/wire';
import { targetFromUrl } from '../../lib/transport';
import { buildRequestHead, buildResponseHead, sameLower, withBodyLength } from '../../lib/transport/headers';
import { DEFAULT_TRANSPORT_SETTINGS, resolveSettings } from '../../lib/transport/settings';

const REQUEST = Buffer.concat([
  Buffer.from('GET /h?q=1 HTTP/1.1\r\n' + 'Host: client.example:8080\r\n' + 'X-CaSe-Test: MiXeD vAlUe\r\n' + 'X-Latin: caf', 'latin1'),
  Buffer.from([0xe9]),
  Buffer.from(
    '\r\n' +
      'Connection: keep-alive, X-Hop-Custom\r\n' +
      'X-Hop-Custom: secret\r\n' +
      'Keep-Alive: timeout=5\r\n' +
      'TE: trailers\r\n' +
      'Upgrade: websocket\r\n' +
      'Proxy-Connection: keep-alive\r\n' +
      'X-Forwarded-For: 10.0.0.1\r\n' +
      'X-Forwarded-Proto: https\r\n' +
      'X-Forwarded-Host: forged.example\r\n' +
      'Via: 1.0 client-proxy\r\n' +
      'User-Agent: test-agent/1.0\r\n' +
      'accept: */*\r\n' +
      '\r\n',
    'latin1',
  ),
]);

const RESPONSE = Buffer.concat([
  Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-MiXeD-Resp: V', 'latin1'),
  Buffer.from([0xe9]),
  Buffer.from('rit', 'latin1'),
  Buffer.from([0xe9]),
  Buffer.from(
    '\r\n' +
      'Connection: X-Resp-Hop\r\n' +
      'X-Resp-Hop: 1\r\n' +
      'Keep-Alive: timeout=5\r\n' +
      'Proxy-Connection: keep-alive\r\n' +
      'Upgrade: h2c\r\n' +
      'TE: trailers\r\n' +
      'Via: 1.1 upstream\r\n' +
      'Server: backend/1\r\n' +
      'Set-Cookie: a=1\r\n' +
      'Set-Cookie: b=2\r\n' +
      '\r\nok',
    'latin1',
  ),
]);

interface Seen {
  readonly backend: RawBackend;
  /** The request as the backend received it. */
  readonly req: Message;
  /** The response as the client received it. */
  readonly res: Message;
  readonly raw: Buffer;
}

async function roundTrip(
  t: Test,
  options: StartOptions = {},
  route?: (url: string) => Parameters<typeof startTransport>[1],
): Promise<Seen> {
  const backend = await rawBackend({ onRequest: (c) => c.write(RESPONSE) });
  t.teardown(() => backend.close());
  const h = await startTransport(t, route === undefined ? backend.url : route(backend.url), options);
  const result = await rawRequest(h.port, REQUEST);
  const req = backend.conns[0]?.requests[0];
  if (req === undefined) throw new Error('the backend got no request');
  t.equal(h.faults.length, 0, 'no fault');
  return { backend, req, res: result.response, raw: result.raw };
}

/** Values of a field in received order, matching the name case-insensitively. */
function values(m: Message, name: string): string[] {
  return m.rawHeaders.filter(([n]) => n.toLowerCase() === name.toLowerCase()).map(([, v]) => v);
}

function names(m: Message): string[] {
  return m.rawHeaders.map(([n]) => n);
}

t.test('request: hop-by-hop fields removed, case and bytes kept, forwarding fields set', async (t) => {
  const { backend, req } = await roundTrip(t);
  t.equal(req.startLine, 'GET /h?q=1 HTTP/1.1', 'request line: method and target as sent, HTTP/1.1');
  for (const hop of ['Connection-listed X-Hop-Custom', 'Keep-Alive', 'TE', 'Upgrade', 'Proxy-Connection']) {
    const name = hop.replace('Connection-listed ', '');
    t.same(values(req, name), [], `${name} removed`);
  }
  t.same(values(req, 'Connection'), ['keep-alive'], "the proxy's own Connection field only");
  t.same(values(req, 'X-CaSe-Test'), ['MiXeD vAlUe']);
  t.ok(names(req).includes('X-CaSe-Test'), 'field name case kept');
  t.ok(names(req).includes('accept'), 'lower-case name kept lower-case');
  const raw = backend.conns[0]?.raw ?? Buffer.alloc(0);
  t.ok(
    raw.includes(Buffer.from([0x58, 0x2d, 0x4c, 0x61, 0x74, 0x69, 0x6e, 0x3a, 0x20, 0x63, 0x61, 0x66, 0xe9, 0x0d, 0x0a])),
    'X-Latin: caf<0xE9> arrives byte for byte',
  );
  t.same(values(req, 'Host'), [`127.0.0.1:${backend.port}`], "Host is the target's host:port, once");
  t.same(values(req, 'X-Forwarded-For'), ['127.0.0.1'], 'X-Forwarded-For replaced by the peer address (no trusted proxies)');
  t.same(values(req, 'X-Forwarded-Proto'), ['http'], "X-Forwarded-Proto is the proxy's (a client cannot forge it)");
  t.same(values(req, 'X-Forwarded-Host'), ['client.example:8080'], "X-Forwarded-Host is the client's Host");
  t.same(values(req, 'Via'), ['1.0 client-proxy, 1.1 throughway'], 'Via appended');
  t.same(values(req, 'User-Agent'), ['test-agent/1.0'], 'User-Agent preserved by default');
  // The client's own fields keep their relative order.
  const order = names(req).filter((n) => ['X-CaSe-Test', 'X-Latin', 'User-Agent', 'accept'].includes(n));
  t.same(order, ['X-CaSe-Test', 'X-Latin', 'User-Agent', 'accept']);
});

t.test('response: hop-by-hop fields removed, case and bytes kept, Via added, repeated fields kept apart', async (t) => {
  const { res, raw } = await roundTrip(t);
  t.equal(res.status, 200);
  t.equal(res.body.toString(), 'ok');
  for (const name of ['X-Resp-Hop', 'Keep-Alive', 'Proxy-Connection', 'Upgrade', 'TE', 'Connection'])
    t.same(values(res, name), [], `${name} removed`);
  t.ok(
    raw.includes(
      Buffer.concat([Buffer.from('X-MiXeD-Resp: V'), Buffer.from([0xe9]), Buffer.from('rit'), Buffer.from([0xe9]), Buffer.from('\r\n')]),
    ),
    'X-MiXeD-Resp name case and 0xE9 bytes arrive unchanged',
  );
  t.same(values(res, 'Via'), ['1.1 upstream, 1.1 throughway'], 'Via appended');
  t.same(values(res, 'Server'), ['backend/1'], 'Server preserved by default');
  t.same(values(res, 'Set-Cookie'), ['a=1', 'b=2'], 'two Set-Cookie fields, not joined');
  t.same(values(res, 'Content-Length'), ['2']);
});

t.test('preserveUserAgent false: User-Agent replaced by the product token', async (t) => {
  const { req } = await roundTrip(t, { settings: { preserveUserAgent: false } });
  t.same(values(req, 'User-Agent'), ['throughway']);
});

t.test("preserveServer false: the backend's Server replaced", async (t) => {
  const { res } = await roundTrip(t, { settings: { preserveServer: false } });
  t.same(values(res, 'Server'), ['throughway']);
});

t.test('preserveHeaders: listed fields keep their incoming value instead of the one the proxy would set', async (t) => {
  const { req } = await roundTrip(t, {
    settings: { preserveHeaders: ['Host', 'x-forwarded-proto', 'user-agent'], preserveUserAgent: false },
  });
  t.same(values(req, 'Host'), ['client.example:8080'], "Host: the client's");
  t.same(values(req, 'X-Forwarded-Proto'), ['https'], "X-Forwarded-Proto: the client's");
  t.same(values(req, 'User-Agent'), ['test-agent/1.0'], "User-Agent: the client's although preserveUserAgent is false");
  t.same(values(req, 'X-Forwarded-Host'), ['client.example:8080'], 'X-Forwarded-Host still set');
});

t.test('xForwarded false and via "": nothing added; an untrusted client\'s forwarding fields dropped', async (t) => {
  const { req } = await roundTrip(t, { settings: { xForwarded: false, via: '' } });
  t.same(values(req, 'X-Forwarded-For'), []);
  t.same(values(req, 'X-Forwarded-Proto'), []);
  t.same(values(req, 'X-Forwarded-Host'), []);
});

t.test('xForwarded false and via "" behind a trusted proxy: nothing added, its values passed through', async (t) => {
  const { req, res } = await roundTrip(t, { settings: { xForwarded: false, via: '', trustedProxies: ['127.0.0.1'] } });
  t.same(values(req, 'X-Forwarded-For'), ['10.0.0.1']);
  t.same(values(req, 'X-Forwarded-Proto'), ['https']);
  t.same(values(req, 'X-Forwarded-Host'), ['forged.example']);
  t.same(values(req, 'Via'), ['1.0 client-proxy']);
  t.same(values(res, 'Via'), ['1.1 upstream']);
});

t.test('route decisions: response fields added and dropped, request path and fields replaced', async (t) => {
  const { backend, req, res } = await roundTrip(t, {}, (url) => {
    const target = targetFromUrl(url);
    return () => ({
      target,
      path: '/rewritten',
      headers: ['X-Only', 'this', 'Host', 'ignored.example'],
      responseHeaders: ['Access-Control-Allow-Origin', '*'],
      dropResponseHeaders: ['set-cookie'],
    });
  });
  t.equal(req.url, '/rewritten');
  t.same(values(req, 'X-Only'), ['this']);
  t.same(values(req, 'X-CaSe-Test'), [], "the router's field list replaced the client's");
  t.same(values(req, 'Host'), [`127.0.0.1:${backend.port}`], "Host is still the target's");
  t.same(values(res, 'Access-Control-Allow-Origin'), ['*']);
  t.same(values(res, 'Set-Cookie'), [], 'dropped');
});

t.test('sameLower: field names compared ignoring ASCII case only', async (t) => {
  t.ok(sameLower('Host', 'host'));
  t.ok(sameLower('HOST', 'host'));
  t.ok(sameLower('x-Forwarded-FOR', 'x-forwarded-for'));
  t.notOk(sameLower('Hosts', 'host'), 'another length');
  t.notOk(sameLower('Hist', 'host'));
  // Characters that differ from the wanted one by 0x20 without being letters are not folded.
  t.notOk(sameLower('ho\rt', 'ho-t'), 'CR (0x0d) is not "-" (0x2d)');
  t.notOk(sameLower('[', '{'), '"[" (0x5b) is not "{" (0x7b)');
  t.notOk(sameLower('@', '`'), '"@" (0x40) is not "`" (0x60)');
  t.notOk(sameLower('hOst', 'HOST'), 'the second argument is lower-case by contract: upper case there never matches');
});

t.test('withBodyLength: the framing fields and Expect dropped in any case, one Content-Length for the new body', async (t) => {
  const input = [
    'Host',
    'h',
    'content-LENGTH',
    '3',
    'Transfer-Encoding',
    'chunked',
    'EXPECT',
    '100-continue',
    'X-Expected',
    'kept',
    'Content-Type',
    'text/plain',
  ];
  t.strictSame(withBodyLength(input, 42), ['Host', 'h', 'X-Expected', 'kept', 'Content-Type', 'text/plain', 'Content-Length', '42']);
  t.equal(input.length, 12, 'the input is not edited');
});

checkTransitions(t);

t.test('fields a Connection field names are dropped wherever they stand, before it or after, in any letter case', async (t) => {
  const fieldNames = (head: string): string[] =>
    head
      .split('\r\n')
      .slice(1)
      .filter((l) => l !== '')
      .map((l) => l.slice(0, l.indexOf(':')));
  const request = (headers: string[]): string[] =>
    fieldNames(
      buildRequestHead(
        { method: 'GET', path: '/', headers, hostHeader: 'b:1', remoteAddress: '10.0.0.1', proto: 'http', close: false },
        DEFAULT_TRANSPORT_SETTINGS,
      ),
    );
  const response = (headers: string[]): string[] =>
    fieldNames(
      buildResponseHead(
        { statusCode: 200, statusText: 'OK', headers, connection: '', dechunk: false, extra: [] },
        DEFAULT_TRANSPORT_SETTINGS,
      ),
    ).filter((n) => n !== 'Via');
  const fields = ['X-Early', '1', 'Connection', 'keep-alive', 'X-Mid', '2', 'Connection', 'x-EARLY, X-Late', 'X-Late', '3', 'X-Kept', '4'];
  const req = request(fields);
  t.notOk(req.includes('X-Early'), 'a field before the Connection field naming it is dropped');
  t.notOk(req.includes('X-Late'), 'and one after it');
  t.ok(req.includes('X-Mid') && req.includes('X-Kept'), 'the others stay');
  t.same(
    req.filter((n) => n.startsWith('X-') && n !== 'X-Forwarded-For' && n !== 'X-Forwarded-Proto'),
    ['X-Mid', 'X-Kept'],
    'in their order, once each',
  );
  t.same(response(fields), ['X-Mid', 'X-Kept'], 'the same in a response');
  for (const usual of ['Keep-Alive', 'CLOSE', 'upgrade', 'keep-alive, Upgrade']) {
    t.same(
      response(['X-Early', '1', 'Connection', usual, 'X-Kept', '2']),
      ['X-Early', 'X-Kept'],
      `Connection: ${usual} drops nothing else`,
    );
  }
});

t.test('heads built in turn for transports with other preserve lists each follow their own list', async (t) => {
  const keepAll = resolveSettings({ preserveHeaders: ['Host', 'User-Agent', 'server'], preserveUserAgent: false, preserveServer: false });
  const keepNone = resolveSettings({ preserveHeaders: ['content-type'], preserveUserAgent: false, preserveServer: false });
  const request = (s: typeof keepAll): string =>
    buildRequestHead(
      {
        method: 'GET',
        path: '/',
        headers: ['Host', 'client.example', 'User-Agent', 'curl/8'],
        hostHeader: 'backend:1',
        remoteAddress: '10.0.0.1',
        proto: 'http',
        close: false,
      },
      s,
    );
  const response = (s: typeof keepAll): string =>
    buildResponseHead(
      { statusCode: 200, statusText: 'OK', headers: ['Server', 'backend/1'], connection: '', dechunk: false, extra: [] },
      s,
    );
  const hostOnly = resolveSettings({ preserveHeaders: ['HOST'], preserveUserAgent: false, preserveServer: false });
  const flagsOnly = resolveSettings({ preserveHeaders: [], preserveUserAgent: true, preserveServer: true });
  const turns = [
    [keepAll, true, true, true],
    [keepNone, false, false, false],
    [hostOnly, true, false, false],
    [keepAll, true, true, true],
    [flagsOnly, false, true, true],
    [keepNone, false, false, false],
  ] as const;
  for (let i = 0; i < 3; i++) {
    for (const [s, host, agent, server] of turns) {
      const req = request(s);
      const res = response(s);
      t.equal(req.includes('\r\nHost: client.example\r\n'), host, `Host kept: ${host}`);
      t.equal(req.includes('\r\nHost: backend:1\r\n'), !host, "else the backend's");
      t.equal(req.includes('\r\nUser-Agent: curl/8\r\n'), agent, `User-Agent kept: ${agent}`);
      t.equal(req.includes(`\r\nUser-Agent: ${s.productToken}\r\n`), !agent);
      t.equal(res.includes('\r\nServer: backend/1\r\n'), server, `Server kept: ${server}`);
      t.equal(res.includes(`\r\nServer: ${s.productToken}\r\n`), !server);
    }
  }
  const noServer = buildResponseHead(
    { statusCode: 200, statusText: 'OK', headers: ['Content-Length', '0'], connection: '', dechunk: false, extra: [] },
    keepNone,
  );
  t.notOk(noServer.includes('Server:'), 'no Server field when the backend sent none');
});

t.test('forwarding lines kept per connection: every head the same as one built afresh, whatever changes between requests', async (t) => {
  const plain = resolveSettings({});
  const noForwarding = resolveSettings({ xForwarded: false, via: '' });
  const keepHostAndAgent = resolveSettings({ preserveHeaders: ['host', 'user-agent'], preserveUserAgent: false });
  const closing = resolveSettings({ disableKeepAlive: true });
  type In = Parameters<typeof buildRequestHead>[0];
  const base: In = {
    method: 'GET',
    path: '/a',
    headers: ['Host', 'client.example', 'Accept', '*/*'],
    hostHeader: 'backend:1',
    remoteAddress: '10.0.0.1',
    proto: 'http',
    close: false,
  };
  // Each variant differs from `base` in one thing and comes right after it: a key part left out of the
  // comparison would hand the variant the base's lines.
  const turns: [In, typeof plain][] = [
    [base, plain],
    [base, plain],
    [{ ...base, headers: ['Host', 'other.example', 'Accept', '*/*'] }, plain],
    [base, plain],
    [{ ...base, headers: ['Accept', '*/*'] }, plain],
    [base, plain],
    [{ ...base, hostHeader: 'backend:2' }, plain],
    [base, plain],
    [{ ...base, remoteAddress: '10.0.0.2' }, plain],
    [base, plain],
    [{ ...base, proto: 'https' }, plain],
    [base, plain],
    [{ ...base, close: true }, plain],
    [base, plain],
    [{ ...base, close: true }, closing],
    [base, noForwarding],
    [base, keepHostAndAgent],
    [{ ...base, headers: ['Host', 'client.example', 'User-Agent', 'curl/8'] }, keepHostAndAgent],
    [{ ...base, headers: ['Host', 'client.example', 'Via', '1.0 p'] }, plain],
    [{ ...base, headers: ['Host', 'client.example', 'X-Forwarded-For', '192.0.2.1'], trustedPeer: true }, plain],
    [{ ...base, headers: ['Host', 'client.example', 'X-Forwarded-Proto', 'https'], trustedPeer: true }, plain],
    [{ ...base, headers: ['Host', 'client.example', 'X-Forwarded-Host', 'edge.example'], trustedPeer: true }, plain],
    [{ ...base, upgrade: 'websocket' }, plain],
    [{ ...base, extraLines: 'Proxy-Authorization: Basic eDp5\r\n' }, plain],
    [base, plain],
  ];
  const holder = { requestTail: null };
  for (const [i, [input, settings]] of turns.entries()) {
    const fresh = buildRequestHead(input, settings);
    t.equal(buildRequestHead({ ...input, tails: holder }, settings), fresh, `turn ${i}: the same head as one built afresh`);
    t.equal(buildRequestHead({ ...input, tails: holder }, settings), fresh, `turn ${i}: and again with the lines kept`);
  }
  t.match(
    buildRequestHead({ ...base, tails: holder }, plain),
    /\r\nX-Forwarded-Host: client\.example\r\nVia: 1\.1 throughway\r\nConnection: keep-alive\r\n\r\n$/,
    'the forwarding lines end the head',
  );
});

t.test('forwarding lines on the wire: a keep-alive client changing its Host, then sending its own Via', async (t) => {
  const backend = await rawBackend({ onRequest: (conn) => conn.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok') });
  t.teardown(() => backend.close());
  const h = await startTransport(t, backend.url);
  const c = await RawClient.connect(h.port);
  t.teardown(() => c.destroy());
  const hosts = ['a.example', 'a.example', 'b.example:81', 'a.example'];
  for (const [i, host] of hosts.entries()) {
    await c.write(`GET /n${i} HTTP/1.1\r\nHost: ${host}\r\n${i === 3 ? 'Via: 1.0 edge\r\n' : ''}\r\n`);
    t.equal((await c.finalResponse(5000, i)).status, 200, `request ${i} answered`);
  }
  const seen = backend.conns.flatMap((conn) => conn.requests);
  t.same(
    seen.map((m) => values(m, 'X-Forwarded-Host')),
    hosts.map((host) => [host]),
    "each request's own Host as X-Forwarded-Host",
  );
  t.same(
    seen.map((m) => values(m, 'Via')),
    [['1.1 throughway'], ['1.1 throughway'], ['1.1 throughway'], ['1.0 edge, 1.1 throughway']],
    'Via appended to the one the client sent',
  );
  t.same(
    seen.map((m) => values(m, 'Host')),
    hosts.map(() => [`127.0.0.1:${backend.port}`]),
    "Host is the target's on every request",
  );
  t.equal(h.faults.length, 0, 'no fault');
});

t.test("response heads built in turn: each status line and each settings object's Server and Via lines its own", async (t) => {
  const plain = resolveSettings({ preserveServer: false });
  const quiet = resolveSettings({ via: '', preserveServer: true });
  const renamed = resolveSettings({ via: '1.1 edge-gw', productToken: 'edge', preserveServer: false });
  const head = (code: number, text: string, s: typeof plain, headers: string[] = ['Server', 'backend/1']): string =>
    buildResponseHead({ statusCode: code, statusText: text, headers, connection: '', dechunk: false, extra: [] }, s);
  const turns: [number, string, typeof plain, string][] = [
    [200, 'OK', plain, 'HTTP/1.1 200 OK\r\nServer: throughway\r\nVia: 1.1 throughway\r\n\r\n'],
    [200, 'OK', plain, 'HTTP/1.1 200 OK\r\nServer: throughway\r\nVia: 1.1 throughway\r\n\r\n'],
    [200, 'Fine', plain, 'HTTP/1.1 200 Fine\r\nServer: throughway\r\nVia: 1.1 throughway\r\n\r\n'],
    [404, 'Fine', quiet, 'HTTP/1.1 404 Fine\r\nServer: backend/1\r\n\r\n'],
    [404, 'Not Found', renamed, 'HTTP/1.1 404 Not Found\r\nServer: edge\r\nVia: 1.1 edge-gw\r\n\r\n'],
    [200, 'OK', quiet, 'HTTP/1.1 200 OK\r\nServer: backend/1\r\n\r\n'],
    [200, 'OK', plain, 'HTTP/1.1 200 OK\r\nServer: throughway\r\nVia: 1.1 throughway\r\n\r\n'],
  ];
  for (const [i, [code, text, s, expected]] of turns.entries()) t.equal(head(code, text, s), expected, `turn ${i}: ${code} ${text}`);
  t.equal(
    head(200, 'OK', plain, ['Via', '1.0 up']),
    'HTTP/1.1 200 OK\r\nVia: 1.0 up, 1.1 throughway\r\n\r\n',
    "the backend's Via kept, the gateway's appended",
  );
  t.equal(head(200, 'OK', quiet, ['Via', '1.0 up']), 'HTTP/1.1 200 OK\r\nVia: 1.0 up\r\n\r\n', "with via '' the backend's alone");
  t.equal(head(200, 'OK', renamed, []), 'HTTP/1.1 200 OK\r\nVia: 1.1 edge-gw\r\n\r\n', 'no Server field when the backend sent none');
  for (const [connection, line] of [
    ['keep-alive', 'Connection: keep-alive\r\n'],
    ['close', 'Connection: close\r\n'],
    ['', ''],
  ] as const) {
    t.equal(
      buildResponseHead({ statusCode: 204, statusText: 'No Content', headers: [], connection, dechunk: false, extra: [] }, quiet),
      `HTTP/1.1 204 No Content\r\n${line}\r\n`,
      `connection '${connection}'`,
    );
  }
});
