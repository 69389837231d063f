/**
 * Message builders and formatters for scripts (spec 001 [message_builders] / [message_formatters]): a
 * form, multipart, text or binary request body reaches onRequest as a useful value, and the value the
 * script returns is written back in the same framing (multipart boundary kept, Content-Length right).
 * Malformed multipart is 103070 (400). Real requests through the gateway (node's fetch and FormData build
 * the multipart bodies); the parser's edge cases (RFC 2046 §5.1.1) directly.
 */
import t from 'tap';
import { BASE_TOML, apiToml, echoBackend, rawRequest, startGateway, type EchoBackend, type Seen } from '../gateway/helpers';
import { MAX_PARTS, MAX_PART_HEADER_BYTES, boundaryOf, parseMultipart, writeMultipart } from '../../lib/mediation/multipart';
import { readValue, writeValue } from '../../lib/mediation/payload';

const TOML = `${BASE_TOML}[mediation]\nengine.core_threads = 1\nengine.max_threads = 2\n[throughway.mediation]\nthread_cap = 2\nscript_timeout = "2s"\n`;

function api(be: EchoBackend, script: string): Record<string, string> {
  return {
    b: apiToml({
      context: '/b',
      endpoint: `http://127.0.0.1:${be.port}`,
      resources: [['/*', ['POST']]],
      extra: `[mediation]\nscript = "${script}"`,
    }),
  };
}

function field(seen: Seen | undefined, lower: string): string | undefined {
  const raw = seen?.headers ?? [];
  const i = raw.findIndex((h, k) => k % 2 === 0 && h.toLowerCase() === lower);
  return i < 0 ? undefined : raw[i + 1];
}

const SCRIPTS: Record<string, string> = {
  // Reports what it saw (as a new part), changes a text field and replaces the file's bytes.
  'scripts/multipart.js': `
    module.exports.onRequest = (m) => {
      const parts = m.body;
      const seen = parts.map((p) => ({ name: p.name, filename: p.filename, contentType: p.contentType, body: p.body }));
      const out = parts.map((p) => p.name === 'greeting' ? { ...p, body: p.body.toUpperCase() } : p.name === 'blob' ? { ...p, body: { base64: 'AAEC/w==' } } : p);
      out.push({ name: 'seen', contentType: 'application/json', body: JSON.stringify(seen) });
      return { body: out };
    };`,
  // Puts the message's own delimiter inside a part: the formatter must choose a new boundary.
  'scripts/clash.js': `
    module.exports.onRequest = (m) => {
      const b = /boundary=(.+)$/.exec(m.headers['content-type'])[1];
      return { body: [{ name: 'x', body: 'a\\r\\n--' + b + '\\r\\nb' }] };
    };`,
  'scripts/form.js': `
    module.exports.onRequest = (m) => ({ headers: { 'X-Seen': JSON.stringify(m.body) }, body: { ...m.body, a: Number(m.body.a) + 1, added: 'x y&z' } });`,
  'scripts/binary.js': `
    module.exports.onRequest = (m) => ({ headers: { 'X-Seen': m.body.base64 }, body: { base64: 'AAEC/w==' } });`,
  'scripts/text.js': `
    module.exports.onRequest = (m) => ({ headers: { 'X-Type': typeof m.body }, body: m.body.split('').reverse().join('') });`,
  'scripts/passthrough.js': `module.exports.onRequest = (m) => ({ body: m.body });`,
  'scripts/unwritable.js': `module.exports.onRequest = () => ({ body: [{ name: 'n', body: 42 }] });`,
  'scripts/response-parts.js': `module.exports.onResponse = (m) => ({ headers: { 'X-Parts': String(m.body.length) }, body: m.body.concat([{ name: 'added', body: 'z' }]) });`,
};

t.test(
  'multipart: the script sees names, file names, types, text as strings and binary as base64; the backend gets the changes with the boundary kept',
  async (t) => {
    const be = await echoBackend();
    t.teardown(() => be.close());
    const g = await startGateway(TOML, api(be, '../scripts/multipart.js'), SCRIPTS);
    t.teardown(() => g.close());
    const fd = new FormData();
    fd.append('greeting', 'héllo');
    fd.append('blob', new Blob([new Uint8Array([0xff, 0xfe, 0x00, 0x80])], { type: 'application/octet-stream' }), 'raw.bin');
    fd.append('note', new Blob(['plain text file'], { type: 'text/plain' }), 'note.txt');
    const res = await fetch(`http://127.0.0.1:${g.port}/b/1.0.0/upload`, { method: 'POST', body: fd });
    t.equal(res.status, 200);
    await res.arrayBuffer();
    const seen = be.seen[0];
    const contentType = field(seen, 'content-type') ?? '';
    const boundary = boundaryOf(contentType);
    t.ok(boundary, `multipart Content-Type with a boundary: ${contentType}`);
    const body = Buffer.from(seen?.body ?? '', 'latin1');
    t.equal(Number(field(seen, 'content-length')), body.length, 'Content-Length of the new body');
    t.ok(body.subarray(0, 2 + (boundary ?? '').length).equals(Buffer.from(`--${boundary}`)), 'the body opens with the same boundary');
    t.ok(
      body
        .subarray(body.length - 8 - (boundary ?? '').length)
        .toString('latin1')
        .endsWith(`--${boundary}--\r\n`),
      'and closes with it',
    );
    const parts = parseMultipart(body, boundary ?? '');
    t.same(
      parts.map((p) => p.name),
      ['greeting', 'blob', 'note', 'seen'],
    );
    t.equal(parts[0]?.body, 'HÉLLO', 'the changed text field (UTF-8)');
    t.same(parts[1]?.body, { base64: 'AAEC/w==' }, 'the replaced file bytes');
    t.equal(parts[1]?.filename, 'raw.bin', 'the file name kept');
    t.equal(parts[1]?.contentType, 'application/octet-stream');
    const saw = JSON.parse(parts[3]?.body as string) as unknown[];
    t.same(saw, [
      { name: 'greeting', body: 'héllo' },
      {
        name: 'blob',
        filename: 'raw.bin',
        contentType: 'application/octet-stream',
        body: { base64: Buffer.from([0xff, 0xfe, 0x00, 0x80]).toString('base64') },
      },
      { name: 'note', filename: 'note.txt', contentType: 'text/plain', body: 'plain text file' },
    ]);
  },
);

t.test('multipart: a part containing the delimiter gets a new boundary, and the Content-Type says so', async (t) => {
  const be = await echoBackend();
  t.teardown(() => be.close());
  const g = await startGateway(TOML, api(be, '../scripts/clash.js'), SCRIPTS);
  t.teardown(() => g.close());
  const fd = new FormData();
  fd.append('x', '1');
  const res = await fetch(`http://127.0.0.1:${g.port}/b/1.0.0/u`, { method: 'POST', body: fd });
  t.equal(res.status, 200);
  await res.arrayBuffer();
  const seen = be.seen[0];
  const boundary = boundaryOf(field(seen, 'content-type'));
  t.match(boundary, /^throughway-[0-9a-f]{24}$/);
  const parts = parseMultipart(Buffer.from(seen?.body ?? '', 'latin1'), boundary ?? '');
  t.equal(parts.length, 1);
  t.match(parts[0]?.body, /^a\r\n--.+\r\nb$/, 'the part kept its bytes');
});

function multipartRequest(port: number, contentType: string, body: string): ReturnType<typeof rawRequest> {
  return rawRequest(
    port,
    `POST /b/1.0.0/u HTTP/1.1\r\nHost: x\r\nContent-Type: ${contentType}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

t.test('malformed multipart is 103070 (400) naming what is wrong, and never reaches the backend', async (t) => {
  const be = await echoBackend();
  t.teardown(() => be.close());
  const g = await startGateway(TOML, api(be, '../scripts/passthrough.js'), SCRIPTS);
  t.teardown(() => g.close());
  const cases: [string, string, string, RegExp][] = [
    [
      'no closing boundary',
      'multipart/form-data; boundary=XyZ',
      '--XyZ\r\nContent-Disposition: form-data; name="a"\r\n\r\nvalue',
      /no closing boundary/,
    ],
    ['no boundary parameter', 'multipart/form-data', '--XyZ\r\n\r\nv\r\n--XyZ--\r\n', /no boundary parameter/],
    ['boundary absent from the body', 'multipart/form-data; boundary=XyZ', 'just text', /no boundary "XyZ"/],
    [
      'a header line without a colon',
      'multipart/form-data; boundary=XyZ',
      '--XyZ\r\nnot a field\r\n\r\nv\r\n--XyZ--\r\n',
      /field line without a name/,
    ],
    ['a boundary line without CRLF', 'multipart/form-data; boundary=XyZ', '--XyZjunk\r\n\r\nv\r\n--XyZ--\r\n', /not followed by CRLF/],
    [
      'too many parts',
      'multipart/form-data; boundary=XyZ',
      `${'--XyZ\r\n\r\nv\r\n'.repeat(MAX_PARTS + 1)}--XyZ--\r\n`,
      new RegExp(`more than ${MAX_PARTS} parts`),
    ],
    [
      'a header block too large',
      'multipart/form-data; boundary=XyZ',
      `--XyZ\r\nX-Big: ${'a'.repeat(MAX_PART_HEADER_BYTES)}\r\n\r\nv\r\n--XyZ--\r\n`,
      /header block exceeds 8192 bytes/,
    ],
  ];
  for (const [what, type, body, why] of cases) {
    const res = await multipartRequest(g.port, type, body);
    t.equal(res.status, 400, `${what}: 400`);
    const f = (res.json() as { fault: { code: number; description: string } }).fault;
    t.equal(f.code, 103070, `${what}: 103070`);
    t.match(f.description, why, `${what}: ${f.description}`);
  }
  t.equal(be.seen.length, 0, 'nothing forwarded');
  const ok = await multipartRequest(
    g.port,
    'multipart/form-data; boundary="a b"',
    'preamble\r\n--a b  \r\nContent-Disposition: form-data; name=plain\r\n\r\nv\r\n--a b--\r\nepilogue',
  );
  t.equal(ok.status, 200, 'a quoted boundary, a preamble, padding after the boundary and an epilogue are accepted');
  t.equal(
    be.seen[0]?.body,
    '--a b\r\nContent-Disposition: form-data; name="plain"\r\n\r\nv\r\n--a b--\r\n',
    'written back canonically with the same boundary',
  );
});

t.test('form-urlencoded: fields as an object (repeated names as arrays, UTF-8 decoded), written back encoded', async (t) => {
  const be = await echoBackend();
  t.teardown(() => be.close());
  const g = await startGateway(TOML, api(be, '../scripts/form.js'), SCRIPTS);
  t.teardown(() => g.close());
  const res = await fetch(`http://127.0.0.1:${g.port}/b/1.0.0/f`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: 'a=1&b=x&b=y&c=%C3%A9+%26',
  });
  t.equal(res.status, 200);
  await res.arrayBuffer();
  const seen = be.seen[0];
  t.same(JSON.parse(field(seen, 'x-seen') ?? 'null'), { a: '1', b: ['x', 'y'], c: 'é &' });
  t.equal(seen?.body, 'a=2&b=x&b=y&c=%C3%A9+%26&added=x+y%26z');
  t.equal(Number(field(seen, 'content-length')), seen?.body.length);
  t.equal(field(seen, 'content-type'), 'application/x-www-form-urlencoded', 'the Content-Type kept');
});

t.test('binary: the script sees { base64 } and may return bytes the same way; text: a string', async (t) => {
  const be = await echoBackend();
  t.teardown(() => be.close());
  const g = await startGateway(
    TOML,
    {
      ...api(be, '../scripts/binary.js'),
      t: apiToml({
        context: '/txt',
        endpoint: `http://127.0.0.1:${be.port}`,
        resources: [['/*', ['POST']]],
        extra: '[mediation]\nscript = "../scripts/text.js"',
      }),
    },
    SCRIPTS,
  );
  t.teardown(() => g.close());
  const input = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x00, 0xff]);
  const res = await fetch(`http://127.0.0.1:${g.port}/b/1.0.0/bin`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/octet-stream' },
    body: input,
  });
  t.equal(res.status, 200);
  await res.arrayBuffer();
  t.equal(field(be.seen[0], 'x-seen'), Buffer.from(input).toString('base64'));
  t.same([...Buffer.from(be.seen[0]?.body ?? '', 'latin1')], [0x00, 0x01, 0x02, 0xff], 'the bytes the script gave');
  t.equal(field(be.seen[0], 'content-length'), '4');
  const unknown = await fetch(`http://127.0.0.1:${g.port}/b/1.0.0/bin`, {
    method: 'POST',
    headers: { 'Content-Type': 'image/png' },
    body: input,
  });
  await unknown.arrayBuffer();
  t.equal(field(be.seen[1], 'x-seen'), Buffer.from(input).toString('base64'), 'an unmapped type is binary');
  const txt = await fetch(`http://127.0.0.1:${g.port}/txt/1.0.0/x`, {
    method: 'POST',
    headers: { 'Content-Type': 'text/plain; charset=utf-8' },
    body: 'abc€',
  });
  t.equal(txt.status, 200);
  await txt.arrayBuffer();
  t.equal(field(be.seen[2], 'x-type'), 'string');
  t.equal(Buffer.from(be.seen[2]?.body ?? '', 'latin1').toString('utf8'), '€cba');
});

t.test('the builders and formatters directly: round trips and RFC 2046 framing', async (t) => {
  t.equal(boundaryOf('multipart/form-data; charset=x; boundary="q\\"t"'), 'q"t', 'quoted boundary with an escape');
  t.equal(boundaryOf('multipart/form-data; boundary=' + 'x'.repeat(71)), undefined, 'over 70 characters');
  const body = Buffer.from('--B\r\n\r\n\r\n--B\r\nContent-Disposition: form-data; name="e"\r\n\r\n\r\n--B--');
  t.same(parseMultipart(body, 'B'), [{ body: '' }, { name: 'e', body: '' }], 'a part without fields and an empty part');
  const parts = [
    { name: 'a"b\r\n', body: 'x' },
    { name: 'f', filename: 'r.bin', contentType: 'application/octet-stream', headers: { 'x-extra': '1' }, body: { base64: 'AP8=' } },
  ];
  const w = writeMultipart(parts, 'B');
  t.equal(w.changed, false);
  t.match(w.body.toString('latin1'), /name="a%22b%0D%0A"/, 'a quote, CR and LF in a name are percent-encoded (RFC 7578 §4.2)');
  t.same(parseMultipart(w.body, 'B')[1], parts[1], 'a file part round-trips');
  t.throws(() => writeMultipart({ not: 'an array' }, 'B'), /array of parts/);
  t.throws(() => writeMultipart([{ name: 'x', body: 5 }], 'B'), /body must be a string or \{ base64 \}/);
  t.equal(readValue('form', Buffer.alloc(0)), undefined, 'an empty body is undefined');
  t.same(writeValue('text', { base64: 'AP8=' }).body, Buffer.from('{"base64":"AP8="}'), '{ base64 } is bytes only for binary bodies');
  t.same(writeValue('binary', { base64: 'AP8=' }).body, Buffer.from([0, 255]));
});

t.test(
  'a multipart body the formatter cannot write is 103065; a malformed multipart response under onResponse is 103071 (502)',
  async (t) => {
    const be = await echoBackend((req, res) => {
      const bad = (req.url ?? '').endsWith('/bad');
      const body = bad ? '--R\r\n\r\nunterminated' : '--R\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n--R--\r\n';
      res.writeHead(200, { 'Content-Type': 'multipart/form-data; boundary=R', 'Content-Length': Buffer.byteLength(body) });
      res.end(body);
      return true;
    });
    t.teardown(() => be.close());
    const endpoint = `http://127.0.0.1:${be.port}`;
    const g = await startGateway(
      TOML,
      {
        ...api(be, '../scripts/unwritable.js'),
        r: apiToml({
          context: '/r',
          endpoint,
          resources: [['/*', ['GET']]],
          extra: '[mediation]\nscript = "../scripts/response-parts.js"',
        }),
      },
      SCRIPTS,
    );
    t.teardown(() => g.close());
    const fd = new FormData();
    fd.append('x', '1');
    const res = await fetch(`http://127.0.0.1:${g.port}/b/1.0.0/u`, { method: 'POST', body: fd });
    t.equal(res.status, 500);
    const f = ((await res.json()) as { fault: { code: number; description: string } }).fault;
    t.equal(f.code, 103065);
    t.match(f.description, /the body cannot be written as multipart: part 1: body must be a string or \{ base64 \}/);
    t.equal(be.seen.length, 0, 'nothing forwarded');
    const ok = await fetch(`http://127.0.0.1:${g.port}/r/1.0.0/good`);
    t.equal(ok.status, 200);
    t.equal(ok.headers.get('x-parts'), '1', 'onResponse sees the response parts');
    t.equal(
      await ok.text(),
      '--R\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n--R\r\nContent-Disposition: form-data; name="added"\r\n\r\nz\r\n--R--\r\n',
      "written back with the response's boundary",
    );
    const bad = await fetch(`http://127.0.0.1:${g.port}/r/1.0.0/bad`);
    t.equal(bad.status, 502);
    const bf = ((await bad.json()) as { fault: { code: number; description: string } }).fault;
    t.equal(bf.code, 103071);
    t.match(bf.description, /Malformed multipart payload: part 1 has no closing boundary/);
  },
);
