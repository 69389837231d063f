/**
 * Payload validation ([passthru_http] force_json_validation / force_xml_validation, docs/mediation.md): JSON and
 * XML request bodies are parsed before they are forwarded, inline when small and in the worker pool when
 * large (both paths exercised at several sizes); a malformed one is 103062 / 103063 (400) naming its line
 * and column and never reaches the backend; a body above the mediation limit is 103061 (413). Without
 * validation nothing is gathered and no worker thread starts.
 */
import t from 'tap';
import { BASE_TOML, apiToml, echoBackend, rawRequest, request, startGateway, type EchoBackend } from '../gateway/helpers';

const VALIDATE = `${BASE_TOML}[passthru_http]\nforce_json_validation = true\nforce_xml_validation = true\n[mediation]\nengine.core_threads = 1\nengine.max_threads = 2\n`;

function api(be: EchoBackend): Record<string, string> {
  return { v: apiToml({ context: '/v', endpoint: `http://127.0.0.1:${be.port}`, resources: [['/*', ['POST', 'PUT', 'GET']]] }) };
}

/** A valid JSON document of about `size` bytes. */
function jsonOf(size: number): string {
  const items: string[] = [];
  let n = 2;
  for (let i = 0; n < size; i++) {
    const item = `{"id":${i},"name":"item ${i}","ok":true}`;
    items.push(item);
    n += item.length + 1;
  }
  return `[${items.join(',')}]`;
}

function xmlOf(size: number): string {
  let s = '<?xml version="1.0"?><items>';
  for (let i = 0; s.length < size; i++) s += `<item id="${i}"><name>item ${i}</name></item>`;
  return s + '</items>';
}

const KiB = 1024;

t.test('valid JSON and XML at several sizes, inline and pooled, reach the backend byte for byte', async (t) => {
  const be = await echoBackend();
  t.teardown(() => be.close());
  const g = await startGateway(`${VALIDATE}[throughway.mediation]\ninline_limit = 4096\n`, api(be));
  t.teardown(() => g.close());
  t.equal(g.gw.mediation.pool.started, false, 'no worker thread before a body needs one');
  let i = 0;
  for (const size of [100, 3 * KiB, 20 * KiB, 300 * KiB]) {
    for (const [type, body] of [
      ['application/json', jsonOf(size)],
      ['application/xml; charset=utf-8', xmlOf(size)],
    ] as const) {
      const res = await request(g.port, '/v/1.0.0/x', { method: 'POST', headers: { 'Content-Type': type }, body });
      t.equal(res.status, 200, `${type} ${size} B accepted`);
      const seen = be.seen[i++];
      t.equal(seen?.body, body, `${type} ${size} B forwarded unchanged`);
    }
  }
  t.equal(g.gw.mediation.pool.started, true, 'large bodies went to the pool');
});

t.test('malformed JSON: 103062, 400, the description names line and column; nothing forwarded', async (t) => {
  const be = await echoBackend();
  t.teardown(() => be.close());
  const g = await startGateway(`${VALIDATE}[throughway.mediation]\ninline_limit = 4096\n`, api(be));
  t.teardown(() => g.close());
  const small = '{\n  "a": 1,\n  "b": }';
  const r1 = await request(g.port, '/v/1.0.0/x', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: small });
  t.equal(r1.status, 400);
  t.equal(r1.json().fault.code, 103062);
  t.equal(r1.json().fault.message, 'Malformed JSON payload');
  t.match(r1.json().fault.description, /line 3, column 8/, 'inline path: position of the "}"');
  // Pooled: a large body with the error near its end.
  const big = jsonOf(64 * KiB);
  const broken = big.slice(0, -1) + ',}';
  const r2 = await request(g.port, '/v/1.0.0/x', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: broken });
  t.equal(r2.status, 400);
  t.equal(r2.json().fault.code, 103062);
  t.match(r2.json().fault.description, new RegExp(`line 1, column ${broken.length}\\b`), 'pooled path: position of the last character');
  const r3 = await request(g.port, '/v/1.0.0/x', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"a": [1, 2' });
  t.match(r3.json().fault.description, /end of JSON input/);
  t.equal(be.seen.length, 0, 'no malformed body reached the backend');
});

t.test('malformed XML: 103063, 400, with line and column, inline and pooled', async (t) => {
  const be = await echoBackend();
  t.teardown(() => be.close());
  const g = await startGateway(`${VALIDATE}[throughway.mediation]\ninline_limit = 4096\n`, api(be));
  t.teardown(() => g.close());
  const r1 = await request(g.port, '/v/1.0.0/x', { method: 'POST', headers: { 'Content-Type': 'text/xml' }, body: '<a>\n<b></c>\n</a>' });
  t.equal(r1.status, 400);
  t.equal(r1.json().fault.code, 103063);
  t.match(r1.json().fault.description, /line 2, column \d+/);
  const big = xmlOf(50 * KiB).replace('</items>', '</itemz>');
  const r2 = await request(g.port, '/v/1.0.0/x', { method: 'POST', headers: { 'Content-Type': 'application/xml' }, body: big });
  t.equal(r2.status, 400);
  t.equal(r2.json().fault.code, 103063);
  t.match(r2.json().fault.description, /Malformed XML payload at line 1, column \d+/);
  t.equal(be.seen.length, 0);
});

t.test('chunked JSON bodies are validated too and forwarded with a Content-Length', async (t) => {
  const be = await echoBackend();
  t.teardown(() => be.close());
  const g = await startGateway(VALIDATE, api(be));
  t.teardown(() => g.close());
  const ok = await rawRequest(
    g.port,
    'POST /v/1.0.0/x HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{"a":\r\n2\r\n1}\r\n0\r\n\r\n',
  );
  t.equal(ok.status, 200);
  t.equal(be.seen[0]?.body, '{"a":1}');
  const raw = be.seen[0]?.headers ?? [];
  const cl = raw.findIndex((h, i) => i % 2 === 0 && h.toLowerCase() === 'content-length');
  t.equal(raw[cl + 1], '7', 'Content-Length of the gathered body');
  const bad = await rawRequest(
    g.port,
    'POST /v/1.0.0/x HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{"a\r\n0\r\n\r\n',
  );
  t.equal(bad.status, 400);
  t.equal(bad.json().fault.code, 103062);
});

t.test('other content types, and validation off, are not gathered: streamed as before, no worker thread', async (t) => {
  const be = await echoBackend();
  t.teardown(() => be.close());
  const g = await startGateway(`${BASE_TOML}[throughway.mediation]\ninline_limit = 0\n`, api(be));
  t.teardown(() => g.close());
  const r1 = await request(g.port, '/v/1.0.0/x', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{not json' });
  t.equal(r1.status, 200, 'validation off: forwarded as is');
  t.equal(be.seen[0]?.body, '{not json');
  t.equal(g.gw.mediation.pool.started, false, 'validation off: the pool never starts');
  const g2 = await startGateway(VALIDATE, api(be));
  t.teardown(() => g2.close());
  const r2 = await request(g2.port, '/v/1.0.0/x', { method: 'POST', headers: { 'Content-Type': 'text/plain' }, body: '{not json' });
  t.equal(r2.status, 200, 'text/plain is not validated');
  t.equal(g2.gw.mediation.pool.started, false);
});

t.test('+json and +xml media types (RFC 6838 structured suffixes) are validated as JSON and XML', async (t) => {
  const be = await echoBackend();
  t.teardown(() => be.close());
  const g = await startGateway(VALIDATE, api(be));
  t.teardown(() => g.close());
  const r1 = await request(g.port, '/v/1.0.0/x', { method: 'POST', headers: { 'Content-Type': 'application/problem+json' }, body: '{' });
  t.equal(r1.json().fault.code, 103062);
  const r2 = await request(g.port, '/v/1.0.0/x', { method: 'POST', headers: { 'Content-Type': 'application/atom+xml' }, body: '<a>' });
  t.equal(r2.json().fault.code, 103063);
});

t.test('body above throughway.mediation.max_body: 103061 (413), the connection closes, nothing forwarded', async (t) => {
  const be = await echoBackend();
  t.teardown(() => be.close());
  const g = await startGateway(`${VALIDATE}[throughway.mediation]\nmax_body = 1000\n`, api(be));
  t.teardown(() => g.close());
  const body = jsonOf(2000);
  const res = await rawRequest(
    g.port,
    `POST /v/1.0.0/x HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
  );
  t.equal(res.status, 413);
  t.equal(res.json().fault.code, 103061);
  t.equal(res.headers['connection'], 'close');
  const chunked = await rawRequest(
    g.port,
    `POST /v/1.0.0/x HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`,
  );
  t.equal(chunked.status, 413, 'chunked: found while gathering');
  t.equal(chunked.json().fault.code, 103061);
  const ok = await request(g.port, '/v/1.0.0/x', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: jsonOf(900) });
  t.equal(ok.status, 200, 'a body within the limit passes');
  t.equal(be.seen.length, 1);
});

t.test('statistics: flow.statistics.enable logs per-mediation timings; collect_payloads the payloads', async (t) => {
  const be = await echoBackend();
  t.teardown(() => be.close());
  const g = await startGateway(`${VALIDATE}flow.statistics.enable = true\nstat.tracer.collect_payloads = true\n`, api(be));
  t.teardown(() => g.close());
  await request(g.port, '/v/1.0.0/x', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"a":1}' });
  const line = g.logger.lines.find((l) => l.event === 'mediation_statistics');
  t.ok(line, 'a statistics line');
  t.equal(line?.bytesIn, 7);
  t.equal(line?.pooled, false);
  t.type(line?.validateMs, 'number');
  t.type(line?.totalMs, 'number');
  const trace = g.logger.lines.find((l) => l.event === 'mediation_trace');
  t.equal(trace?.payloadIn, '{"a":1}');
  t.equal(trace?.payloadOut, '{"a":1}');
});

t.test('a large chunked JSON body arriving in many reads is gathered whole, validated in the pool, forwarded intact', async (t) => {
  const be = await echoBackend();
  t.teardown(() => be.close());
  const g = await startGateway(VALIDATE, api(be));
  t.teardown(() => g.close());
  const body = jsonOf(200 * KiB);
  const pieces: string[] = [];
  for (let i = 0; i < body.length; i += 7000) pieces.push(body.slice(i, i + 7000));
  const net = await import('node:net');
  const sock = net.connect(g.port, '127.0.0.1');
  await new Promise<void>((r) => sock.once('connect', () => r()));
  let got = '';
  sock.on('data', (c: Buffer) => (got += c.toString('latin1')));
  sock.write('POST /v/1.0.0/x HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n');
  for (const p of pieces) {
    sock.write(`${Buffer.byteLength(p).toString(16)}\r\n${p}\r\n`);
    await new Promise((r) => setTimeout(r, 2));
  }
  sock.write('0\r\n\r\n');
  for (let i = 0; i < 500 && !got.includes('\r\n\r\n'); i++) await new Promise((r) => setTimeout(r, 10));
  sock.destroy();
  t.match(got, /^HTTP\/1\.1 200 /);
  t.equal(be.seen[0]?.body.length, body.length);
  t.equal(be.seen[0]?.body, body, 'byte for byte');
  t.equal(g.gw.mediation.pool.started, true, 'above the inline limit: validated in the pool');
});

t.test('a validation fault keeps the connection: the next request on it is served', async (t) => {
  const be = await echoBackend();
  t.teardown(() => be.close());
  const g = await startGateway(VALIDATE, api(be));
  t.teardown(() => g.close());
  const http = await import('node:http');
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  t.teardown(() => agent.destroy());
  const bad = await request(g.port, '/v/1.0.0/x', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{', agent });
  t.equal(bad.status, 400);
  t.notOk(/close/i.test(bad.headers['connection'] ?? ''), 'not closed');
  const ok = await request(g.port, '/v/1.0.0/x', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: '{"a":1}',
    agent,
  });
  t.equal(ok.status, 200);
  t.equal(be.seen.length, 1);
});
