/**
 * Response-side validation and the trace line's properties. With [passthru_http] force_json_validation /
 * force_xml_validation on, a backend body the gateway gathers anyway (an onResponse script or a
 * response_format conversion) is validated: malformed is 103071, 502 (an invalid response from upstream,
 * RFC 9110 §15.6.3). A plain pass-through response is never gathered nor validated.
 * stat.tracer.collect_mediation_properties puts the message's properties in the mediation_trace line.
 */
import t from 'tap';
import { BASE_TOML, apiToml, echoBackend, request, startGateway, type EchoBackend } from '../gateway/helpers';

const VALIDATE = `${BASE_TOML}[passthru_http]\nforce_json_validation = true\nforce_xml_validation = true\n[mediation]\nengine.core_threads = 1\nengine.max_threads = 2\n`;

const SCRIPTS: Record<string, string> = {
  'scripts/response.js': `module.exports.onResponse = (m) => ({ headers: { 'X-Body-Type': typeof m.body } });`,
  'scripts/request.js': `module.exports.onRequest = (m) => ({ headers: { 'X-Added': 'yes', 'X-Gone': null }, body: { ...m.body, added: true } });`,
};

/** Answers /bad-json, /bad-xml, /good-json, /good-xml, /big-bad (a malformed 64 KiB JSON body: the pooled path). */
function backend(): Promise<EchoBackend> {
  return echoBackend((req, res) => {
    const path = (req.url ?? '').replace(/^.*\//, '');
    const bodies: Record<string, [string, string]> = {
      'bad-json': ['application/json', '{"a": [1, 2}'],
      'good-json': ['application/json', '{"a":[1,2]}'],
      'bad-xml': ['application/xml', '<a><b></a>'],
      'good-xml': ['application/xml', '<a><b>1</b></a>'],
      'big-bad': ['application/json', `{"pad":"${'x'.repeat(64 * 1024)}",}`],
    };
    const b = bodies[path];
    if (b === undefined) return false;
    res.writeHead(200, { 'Content-Type': b[0], 'Content-Length': Buffer.byteLength(b[1]) });
    res.end(b[1]);
    return true;
  });
}

function apis(be: EchoBackend): Record<string, string> {
  const endpoint = `http://127.0.0.1:${be.port}`;
  return {
    s: apiToml({ context: '/s', endpoint, resources: [['/*', ['GET', 'POST']]], extra: '[mediation]\nscript = "../scripts/response.js"' }),
    c: apiToml({ context: '/c', endpoint, resources: [['/*', ['GET']]], extra: '[mediation]\nresponse_format = "xml"' }),
    p: apiToml({ context: '/p', endpoint, resources: [['/*', ['GET']]] }),
  };
}

interface Fault {
  fault: { code: number; description: string };
}

t.test(
  'validation on: a malformed backend body gathered for onResponse or response_format is 103071 (502) naming the position',
  async (t) => {
    const be = await backend();
    t.teardown(() => be.close());
    const g = await startGateway(VALIDATE, apis(be), SCRIPTS);
    t.teardown(() => g.close());
    for (const [path, what] of [
      ['/s/1.0.0/bad-json', 'JSON under a script'],
      ['/s/1.0.0/bad-xml', 'XML under a script'],
      ['/c/1.0.0/bad-json', 'JSON under response_format'],
      ['/s/1.0.0/big-bad', 'a 64 KiB JSON body (pooled)'],
    ] as const) {
      const res = await request(g.port, path);
      t.equal(res.status, 502, `${what}: 502`);
      const f = (res.json() as Fault).fault;
      t.equal(f.code, 103071, `${what}: 103071`);
      t.match(
        f.description,
        /^The backend response is malformed: Malformed (JSON|XML) payload at line 1, column \d+/,
        `${what}: ${f.description.slice(0, 100)}`,
      );
    }
    const json = (await request(g.port, '/s/1.0.0/bad-json').then((r) => r.json())) as Fault;
    t.match(json.fault.description, /line 1, column 12: unexpected character '\}'/, 'the exact position');
    const good = await request(g.port, '/s/1.0.0/good-json');
    t.equal(good.status, 200, 'a valid body passes');
    t.equal(good.headers['x-body-type'], 'object');
    t.equal(good.body, '{"a":[1,2]}');
    const conv = await request(g.port, '/c/1.0.0/good-json');
    t.equal(conv.status, 200);
    t.match(conv.body, /<a>1<\/a><a>2<\/a>/, 'a valid body is still converted');
    const xml = await request(g.port, '/s/1.0.0/good-xml');
    t.equal(xml.status, 200);
    t.equal(xml.body, '<a><b>1</b></a>');
    const plain = await request(g.port, '/p/1.0.0/bad-json');
    t.equal(plain.status, 200, 'a pass-through API is not gathered, so not validated');
    t.equal(plain.body, '{"a": [1, 2}');
  },
);

t.test('validation off: the script gets the malformed body as text and the client gets it unchanged', async (t) => {
  const be = await backend();
  t.teardown(() => be.close());
  const g = await startGateway(`${BASE_TOML}[mediation]\nengine.core_threads = 1\nengine.max_threads = 1\n`, apis(be), SCRIPTS);
  t.teardown(() => g.close());
  const res = await request(g.port, '/s/1.0.0/bad-json');
  t.equal(res.status, 200);
  t.equal(res.headers['x-body-type'], 'string');
  t.equal(res.body, '{"a": [1, 2}');
});

t.test(
  'collect_mediation_properties: formats, outgoing fields, changes and timings in the trace line, request and response side',
  async (t) => {
    const be = await backend();
    t.teardown(() => be.close());
    const endpoint = `http://127.0.0.1:${be.port}`;
    const g = await startGateway(
      `${VALIDATE}stat.tracer.collect_mediation_properties = true\n`,
      {
        ...apis(be),
        r: apiToml({ context: '/r', endpoint, resources: [['/*', ['POST']]], extra: '[mediation]\nscript = "../scripts/request.js"' }),
      },
      SCRIPTS,
    );
    t.teardown(() => g.close());
    const res = await request(g.port, '/r/1.0.0/x', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-Gone': 'secret' },
      body: '{"a":1}',
    });
    t.equal(res.status, 200);
    // Two lines: the request side, and the response side (the script may have onResponse, so the echo is gathered).
    const traces = g.logger.lines.filter((l) => l.event === 'mediation_trace');
    t.same(
      traces.map((l) => l.direction),
      ['request', 'response'],
    );
    const line = traces[0] as Record<string, unknown>;
    t.equal(line.payloadIn, undefined, 'no payloads without collect_payloads');
    const p = line.properties as Record<string, unknown>;
    t.equal(p.api, 'Test:1.0.0');
    t.equal(p.method, 'POST');
    t.equal(p.format, 'json');
    t.equal(p.formatOut, 'json');
    t.equal(p.contentType, 'application/json');
    t.equal(p.validated, true);
    t.same(p.scriptChanged, ['body', 'headers']);
    t.equal(p.bytesOut, Buffer.byteLength('{"a":1,"added":true}'));
    const h = p.headers as Record<string, string>;
    t.equal(h['x-added'], 'yes', 'the fields as they leave mediation');
    t.equal(h['x-gone'], undefined);
    t.type(p.scriptMs, 'number');
    await request(g.port, '/s/1.0.0/bad-xml');
    t.equal(
      ((traces[1] as Record<string, unknown>).properties as Record<string, unknown>).validated,
      true,
      'the echo was validated on its way back',
    );
    const resp = g.logger.lines.filter((l) => l.event === 'mediation_trace').at(-1) as Record<string, unknown>;
    t.equal(resp.direction, 'response');
    const rp = resp.properties as Record<string, unknown>;
    t.equal(rp.backendStatus, 200);
    t.equal(rp.status, 502);
    t.match(rp.fault, /Malformed XML payload/);
  },
);

t.test('collect_payloads: bytes that are not UTF-8 are traced as base64, text as text', async (t) => {
  const be = await backend();
  t.teardown(() => be.close());
  const endpoint = `http://127.0.0.1:${be.port}`;
  const g = await startGateway(
    `${BASE_TOML}[mediation]\nengine.core_threads = 1\nengine.max_threads = 1\nstat.tracer.collect_payloads = true\n`,
    { r: apiToml({ context: '/r', endpoint, resources: [['/*', ['POST']]], extra: '[mediation]\nscript = "../scripts/request.js"' }) },
    { 'scripts/request.js': `module.exports.onRequest = (m) => ({ body: m.body.base64 === undefined ? m.body : { base64: 'aGk=' } });` },
  );
  t.teardown(() => g.close());
  const res = await fetch(`http://127.0.0.1:${g.port}/r/1.0.0/x`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/octet-stream' },
    body: new Uint8Array([0xff, 0x00, 0xfe]),
  });
  t.equal(res.status, 200);
  await res.arrayBuffer();
  const line = g.logger.lines.find((l) => l.event === 'mediation_trace' && l.direction === 'request');
  t.equal(line?.payloadIn, `base64:${Buffer.from([0xff, 0x00, 0xfe]).toString('base64')}`);
  t.equal(line?.payloadOut, 'hi', 'the script gave the bytes of "hi"');
  t.equal(line?.properties, undefined, 'no properties without collect_mediation_properties');
  t.equal(Buffer.from(be.seen[0]?.body ?? '', 'latin1').toString(), 'hi');
});
