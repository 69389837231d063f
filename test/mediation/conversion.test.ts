/**
 * Message builders and formatters, and JSON <-> XML conversion: class names of the reference map to
 * built-in formats (an unknown one is a configuration error naming the alternatives); custom builders
 * bring new content types under validation; an API's request_format converts bodies under the [mediation]
 * switches (preserve_namespace_on_xml_to_json, json_out_auto_array, enable_auto_primitive); JSON -> XML ->
 * JSON round trips give the JSON back. Plus the JSON error positions validation reports.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import t from 'tap';
import { loadConfig } from '../../lib/config/load';
import { createGateway } from '../../lib/embed';
import { FormatConfigError, mediationSettingsFrom } from '../../lib/mediation';
import { jsonErrorOffset, jsonToXml, validateJson, xmlToJson, type ConversionOptions } from '../../lib/mediation/payload';
import { BASE_TOML, apiToml, echoBackend, request, startGateway } from '../gateway/helpers';

const PLAIN: ConversionOptions = { preserveNamespace: false, autoArray: false, autoPrimitive: true };

function loaded(extra: string): ReturnType<typeof loadConfig> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'throughway-med-'));
  fs.writeFileSync(path.join(dir, 'deployment.toml'), BASE_TOML + extra);
  const l = loadConfig({ file: path.join(dir, 'deployment.toml') });
  fs.rmSync(dir, { recursive: true, force: true });
  return l;
}

t.test('JSON -> XML -> JSON round trips give the same JSON (objects, arrays, several roots, numbers, booleans)', async (t) => {
  const docs: unknown[] = [
    {
      order: {
        id: 7,
        items: [
          { name: 'a', qty: 2 },
          { name: 'b', qty: 1 },
        ],
        paid: true,
        note: 'x & <y>',
      },
    },
    [1, 2, { a: 'b' }],
    { a: 1, b: [true, false], c: { d: 'e' } },
    { root: { nested: { deeper: { value: 3.5 } } } },
  ];
  for (const d of docs) {
    const xml = jsonToXml(Buffer.from(JSON.stringify(d)));
    t.match(xml.toString(), /^<\?xml version="1.0" encoding="UTF-8"\?></, 'an XML document');
    t.same(JSON.parse(xmlToJson(xml, PLAIN).toString()), d, `round trip of ${JSON.stringify(d)}`);
  }
  t.match(
    jsonToXml(Buffer.from('[1]')).toString(),
    /<jsonArray><jsonElement>1<\/jsonElement><\/jsonArray>/,
    "the reference's names for a top-level array",
  );
  t.match(jsonToXml(Buffer.from('{"a":1,"b":2}')).toString(), /<jsonObject><a>1<\/a><b>2<\/b><\/jsonObject>/);
  t.match(jsonToXml(Buffer.from('{"a":"x & <y>"}')).toString(), /<a>x &amp; &lt;y&gt;<\/a>/, 'text escaped');
});

t.test('XML -> JSON honours enable_auto_primitive, preserve_namespace_on_xml_to_json and json_out_auto_array', async (t) => {
  const xml = Buffer.from(
    '<?xml version="1.0"?><ns:order xmlns:ns="urn:shop" ns:id="7"><ns:qty>2</ns:qty><ns:paid>true</ns:paid></ns:order>',
  );
  t.same(
    JSON.parse(xmlToJson(xml, PLAIN).toString()),
    { order: { qty: 2, paid: true, '@id': 7 } },
    'prefixes and xmlns dropped; primitives',
  );
  t.same(
    JSON.parse(xmlToJson(xml, { ...PLAIN, autoPrimitive: false }).toString()),
    { order: { qty: '2', paid: 'true', '@id': '7' } },
    'auto primitive off: strings',
  );
  t.same(
    JSON.parse(xmlToJson(xml, { ...PLAIN, preserveNamespace: true }).toString()),
    { 'ns:order': { 'ns:qty': 2, 'ns:paid': true, '@xmlns:ns': 'urn:shop', '@ns:id': 7 } },
    'namespaces kept',
  );
  const list = Buffer.from('<list><item>1</item><other><x>a</x></other></list>');
  t.same(
    JSON.parse(xmlToJson(list, PLAIN).toString()),
    { list: { item: 1, other: { x: 'a' } } },
    'auto array off: an array only when repeated',
  );
  t.same(
    JSON.parse(xmlToJson(list, { ...PLAIN, autoArray: true }).toString()),
    { list: { item: [1], other: [{ x: ['a'] }] } },
    'auto array on: every element below the root',
  );
});

t.test('enable_xml_nil, build_valid_nc_name, enable_namespace_declaration, disable_auto_primitive_regex', async (t) => {
  // xsi:nil: JSON null <-> <x xsi:nil="true"/>; off, null is an empty element (read back as "").
  const nil = Buffer.from('{"order":{"note":null,"id":1}}');
  t.match(
    jsonToXml(nil, { xmlNil: true }).toString(),
    /<note xmlns:xsi="http:\/\/www\.w3\.org\/2001\/XMLSchema-instance" xsi:nil="true"(><\/note>|\/>)/,
    'null written as xsi:nil',
  );
  t.same(
    JSON.parse(xmlToJson(jsonToXml(nil, { xmlNil: true }), { ...PLAIN, xmlNil: true }).toString()),
    { order: { note: null, id: 1 } },
    'and read back as null',
  );
  t.same(
    JSON.parse(xmlToJson(jsonToXml(nil), PLAIN).toString()),
    { order: { note: '', id: 1 } },
    'switch off: an empty element, read as ""',
  );
  const prefixed = Buffer.from('<a xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><b xsi:nil="true"/><c>x</c></a>');
  t.same(
    JSON.parse(xmlToJson(prefixed, { ...PLAIN, xmlNil: true, preserveNamespace: true }).toString()),
    { a: { b: null, c: 'x', '@xmlns:xsi': 'http://www.w3.org/2001/XMLSchema-instance' } },
    'with prefixes kept too',
  );

  // NCNames: keys an XML name cannot hold are encoded, and decoded on the way back.
  const odd = { order: { '1st item': 'a', price$: 2, ok_name: true, _x0041_: 'looks encoded' } };
  const xml = jsonToXml(Buffer.from(JSON.stringify(odd)), { validNcNames: true }).toString();
  t.match(xml, /<_x0031_st_x0020_item>a<\/_x0031_st_x0020_item>/, 'a leading digit and a space encoded');
  t.match(xml, /<price_x0024_>2<\/price_x0024_>/);
  t.match(xml, /<ok_name>true<\/ok_name>/, 'a valid name unchanged');
  t.match(xml, /<_x005F_x0041_>/, 'an underscore that would read as an escape is escaped itself');
  t.same(JSON.parse(xmlToJson(Buffer.from(xml), { ...PLAIN, validNcNames: true }).toString()), odd, 'round trip');
  t.throws(
    () => xmlToJson(jsonToXml(Buffer.from('{"1st":1}')), PLAIN),
    'switch off: the key is written as it is, and the XML is not well-formed',
  );

  // Namespace declarations kept while prefixes are removed.
  const ns = Buffer.from('<ns:order xmlns:ns="urn:shop"><ns:qty>2</ns:qty></ns:order>');
  t.same(JSON.parse(xmlToJson(ns, PLAIN).toString()), { order: { qty: 2 } }, 'off: declarations dropped with the prefixes');
  t.same(
    JSON.parse(xmlToJson(ns, { ...PLAIN, namespaceDeclarations: true }).toString()),
    { order: { qty: 2, '@xmlns:ns': 'urn:shop' } },
    'on: the declaration stays',
  );

  // Exemptions from primitive conversion: a matching value stays a string.
  const ids = Buffer.from('<r><zip>01234</zip><code>0042</code><qty>7</qty><flag>true</flag><big>1e3</big></r>');
  t.same(
    JSON.parse(xmlToJson(ids, { ...PLAIN, primitiveExempt: '^0\\d+$' }).toString()),
    { r: { zip: '01234', code: '0042', qty: 7, flag: true, big: 1000 } },
    'leading-zero values exempt, the rest converted',
  );
  t.same(
    JSON.parse(xmlToJson(ids, { ...PLAIN, primitiveExempt: '^(true|7)$' }).toString()).r,
    { zip: '01234', code: '0042', qty: '7', flag: 'true', big: 1000 },
    'another expression',
  );
});

t.test('disable_auto_primitive_regex must be a regular expression: the key, file and line are named', async (t) => {
  const bad = loaded('[mediation]\nengine.disable_auto_primitive_regex = "(unclosed"\n');
  t.equal(bad.ok, false);
  const d = bad.diagnostics.find((x) => x.key === 'mediation.engine.disable_auto_primitive_regex');
  t.ok(d, JSON.stringify(bad.diagnostics));
  t.equal(d?.code, 'CONFIG_TYPE');
  t.match(d?.message ?? '', /not a regular expression/);
  t.ok((d?.line ?? 0) > 0, 'with its line');
  const good = loaded('[mediation]\nengine.disable_auto_primitive_regex = "^0\\\\d+$"\nengine.enable_xml_nil = true\n');
  t.equal(good.ok, true, JSON.stringify(good.diagnostics.filter((x) => x.level === 'error')));
  t.notOk(
    good.inactiveKeys.some((k) => /enable_xml_nil|disable_auto_primitive_regex/.test(k)),
    `no longer listed as inactive: ${good.inactiveKeys.join(', ')}`,
  );
});

t.test('request_format converts request bodies; Content-Type and Content-Length follow', async (t) => {
  const be = await echoBackend();
  t.teardown(() => be.close());
  const api = (ctx: string, format: string): string =>
    apiToml({
      context: ctx,
      endpoint: `http://127.0.0.1:${be.port}`,
      resources: [['/*', ['POST']]],
      extra: `[mediation]\nrequest_format = "${format}"`,
    });
  const g = await startGateway(
    `${BASE_TOML}[mediation]\nengine.core_threads = 1\nengine.max_threads = 1\nengine.enable_auto_primitive = true\n[throughway.mediation]\ninline_limit = 64\n`,
    { x: api('/toxml', 'xml'), j: api('/tojson', 'json') },
  );
  t.teardown(() => g.close());
  const field = (i: number, name: string): string | undefined => {
    const raw = be.seen[i]?.headers ?? [];
    const k = raw.findIndex((h, n) => n % 2 === 0 && h.toLowerCase() === name);
    return k < 0 ? undefined : raw[k + 1];
  };
  const r1 = await request(g.port, '/toxml/1.0.0/o', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: '{"order":{"id":7}}',
  });
  t.equal(r1.status, 200);
  t.equal(be.seen[0]?.body, '<?xml version="1.0" encoding="UTF-8"?><order><id>7</id></order>');
  t.equal(field(0, 'content-type'), 'application/xml');
  t.equal(Number(field(0, 'content-length')), be.seen[0]?.body.length);
  // A large one goes through the pool (inline_limit 64).
  const big = { order: { items: Array.from({ length: 50 }, (_, i) => ({ n: i })) } };
  const r2 = await request(g.port, '/tojson/1.0.0/o', {
    method: 'POST',
    headers: { 'Content-Type': 'text/xml' },
    body: jsonToXml(Buffer.from(JSON.stringify(big))).toString(),
  });
  t.equal(r2.status, 200);
  t.same(JSON.parse(be.seen[1]?.body ?? 'null'), big, 'XML -> JSON in the pool');
  t.equal(field(1, 'content-type'), 'application/json');
  t.equal(g.gw.mediation.pool.started, true);
  const bad = await request(g.port, '/toxml/1.0.0/o', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: '{"order":',
  });
  t.equal(bad.status, 400, 'an unconvertible body: the malformed-payload fault with its position');
  t.equal(bad.json().fault.code, 103062);
  const same = await request(g.port, '/tojson/1.0.0/o', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: '{"a":1}',
  });
  t.equal(same.status, 200);
  t.equal(be.seen[2]?.body, '{"a":1}', 'already in the format: untouched');
});

t.test("builders and formatters: the reference's classes and built-in names map; custom content types join", async (t) => {
  const l = loaded(
    `[message_builders]\napplication_json = "org.apache.synapse.commons.json.JsonStreamBuilder"\ntext_plain = "json"\n[message_formatters]\napplication_xml = "org.apache.axis2.transport.http.ApplicationXMLFormatter"\n[[custom_message_builders]]\ncontent_type = "application/vnd.shop"\nclass = "org.apache.axis2.builder.ApplicationXMLBuilder"\n`,
  );
  t.ok(l.ok);
  if (!l.ok) return;
  const s = mediationSettingsFrom(l.config);
  t.equal(s.builders.of('application/json; charset=utf-8'), 'json');
  t.equal(s.builders.of('text/plain'), 'json', 'a built-in name written directly');
  t.equal(s.builders.of('application/vnd.shop'), 'xml', 'a custom builder');
  t.equal(s.builders.of('Application/VND.Shop; q=1'), 'xml', 'media types compare without case and parameters');
  t.equal(s.builders.of('application/x-www-form-urlencoded'), 'form');
  t.equal(s.builders.of('multipart/form-data; boundary=x'), 'multipart');
  t.equal(s.builders.of('image/png'), 'binary');
  t.equal(s.builders.of(undefined), 'binary');
  t.equal(s.formatters.of('application/xml'), 'xml');
});

t.test('an unknown class is a configuration error naming the key and the alternatives; the gateway does not start', async (t) => {
  const l = loaded(`[message_formatters]\napplication_json = "com.example.MyJsonFormatter"\n`);
  t.ok(l.ok, 'the file itself is valid TOML for the schema');
  if (!l.ok) return;
  t.throws(() => mediationSettingsFrom(l.config), FormatConfigError);
  let err: FormatConfigError | undefined;
  try {
    createGateway({ config: l.config, apis: [] });
  } catch (e) {
    err = e as FormatConfigError;
  }
  t.ok(err instanceof FormatConfigError, 'createGateway refuses it');
  t.equal(err?.code, 'MEDIATION_UNKNOWN_CLASS');
  t.equal(err?.key, 'message_formatters.application_json');
  t.match(err?.message ?? '', /json, xml, form, multipart, text, binary/);
  t.match(err?.message ?? '', /org\.apache\.synapse\.commons\.json\.JsonStreamFormatter/);
  const custom = loaded(`[[blocking.custom_message_builders]]\ncontent_type = "a/b"\nclass = "nope"\n`);
  let twin: FormatConfigError | undefined;
  try {
    if (custom.ok) mediationSettingsFrom(custom.config);
  } catch (e) {
    twin = e as FormatConfigError;
  }
  t.equal(twin?.key, 'blocking.custom_message_builders[0].class', 'blocking twins are checked too');
});

t.test('custom builders bring a content type under validation', async (t) => {
  const be = await echoBackend();
  t.teardown(() => be.close());
  const g = await startGateway(
    `${BASE_TOML}[passthru_http]\nforce_json_validation = true\n[[custom_message_builders]]\ncontent_type = "application/vnd.order"\nclass = "org.apache.synapse.commons.json.JsonStreamBuilder"\n`,
    { v: apiToml({ context: '/v', endpoint: `http://127.0.0.1:${be.port}`, resources: [['/*', ['POST']]] }) },
  );
  t.teardown(() => g.close());
  const res = await request(g.port, '/v/1.0.0/x', { method: 'POST', headers: { 'Content-Type': 'application/vnd.order' }, body: '{"a":' });
  t.equal(res.status, 400);
  t.equal(res.json().fault.code, 103062);
});

t.test('JSON error positions: the first offending character, or the end for a truncated text', async (t) => {
  const cases: [string, number][] = [
    ['{"a":1}', -1],
    ['[1, 2, 3]', -1],
    ['  "x"  ', -1],
    ['{"a":}', 5],
    ['{"a" 1}', 5],
    ['[1,]', 3],
    ['[01]', 2],
    ['{"a":tru}', 8],
    ['"\\x"', 2],
    ['"a\nb"', 2],
    ['{"a":1', 6],
    ['1 2', 2],
    ['', 0],
    ['-', 1],
    ['1.', 2],
    ['{"a":"\\u12G4"}', 10],
  ];
  for (const [text, at] of cases) t.equal(jsonErrorOffset(text), at, JSON.stringify(text));
  let threw = true;
  try {
    jsonErrorOffset('['.repeat(200_000));
    threw = false;
  } catch {
    threw = true;
  }
  t.notOk(threw, 'deep nesting does not overflow the stack');
  t.same(validateJson(Buffer.from('{\n "a": [1,\n  2,,\n]}')), { format: 'json', message: "unexpected character ','", line: 3, column: 5 });
  t.equal(validateJson(Buffer.from('\ufeff{"a":1}')), undefined, 'a BOM is ignored (RFC 8259 §8.1)');
});

t.test(
  "response_format converts the backend's response; a malformed body it cannot convert is 103071 (502, an invalid upstream response)",
  async (t) => {
    const be = await echoBackend((req, res) => {
      if ((req.url ?? '').endsWith('/bad')) {
        res.writeHead(200, { 'Content-Type': 'application/xml' });
        res.end('<a><b></a>');
        return true;
      }
      const xml =
        '<?xml version="1.0"?><menu><item><name>Margherita</name><price>9.5</price></item><item><name>Diavola</name><price>11</price></item></menu>';
      res.writeHead(200, { 'Content-Type': 'text/xml; charset=utf-8', 'Transfer-Encoding': 'chunked' });
      res.write(xml.slice(0, 40));
      res.end(xml.slice(40));
      return true;
    });
    t.teardown(() => be.close());
    const api = apiToml({
      context: '/m',
      endpoint: `http://127.0.0.1:${be.port}`,
      resources: [['/*', ['GET']]],
      extra: '[mediation]\nresponse_format = "json"',
    });
    const g = await startGateway(
      `${BASE_TOML}[mediation]\nengine.enable_auto_primitive = true\nengine.core_threads = 1\nengine.max_threads = 1\n`,
      { m: api },
    );
    t.teardown(() => g.close());
    const res = await request(g.port, '/m/1.0.0/menu');
    t.equal(res.status, 200);
    t.equal(res.headers['content-type'], 'application/json');
    t.same(res.json(), {
      menu: {
        item: [
          { name: 'Margherita', price: 9.5 },
          { name: 'Diavola', price: 11 },
        ],
      },
    });
    t.equal(res.headers['transfer-encoding'], undefined);
    t.equal(res.headers['content-length'], String(Buffer.byteLength(res.body)));
    const bad = await request(g.port, '/m/1.0.0/bad');
    t.equal(bad.status, 502);
    t.equal(bad.json().fault.code, 103071);
    t.match(bad.json().fault.description, /backend response is malformed: Malformed XML payload at line 1, column 7/);
  },
);
