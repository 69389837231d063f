/**
 * multipart/form-data bodies as the publisher's .proto forms read them (lib/portal/multipart.ts, RFC 7578):
 * fields and files, a preamble, browsers' %22 escapes in names, an empty file input left out, and each
 * malformed body refused with its reason.
 */
import t from 'tap';
import { boundaryOf, MAX_PARTS, parseMultipart } from '../../lib/portal/multipart';

const B = '----tw7MA4YWxkTrZu0gW';
const part = (headers: string, body: string): string => `--${B}\r\n${headers}\r\n\r\n${body}\r\n`;
const body = (...parts: string[]): Buffer => Buffer.from(`${parts.join('')}--${B}--\r\n`);

t.test('the boundary of a Content-Type', async (t) => {
  t.equal(boundaryOf(`multipart/form-data; boundary=${B}`), B);
  t.equal(boundaryOf('multipart/form-data; boundary="a b"; charset=x'), 'a b', 'quoted');
  t.equal(boundaryOf('multipart/form-data'), undefined, 'none');
  t.equal(boundaryOf(`multipart/form-data; boundary=${'x'.repeat(71)}`), undefined, 'longer than 70 characters (RFC 2046 §5.1.1)');
});

t.test('fields and files', async (t) => {
  const m = parseMultipart(
    Buffer.concat([
      Buffer.from('a preamble\r\n'),
      body(
        part('Content-Disposition: form-data; name="csrf"', 'tok'),
        part('Content-Disposition: form-data; name="proto_text"', 'line 1\r\nline 2'),
        part(
          'Content-Disposition: form-data; name="proto_files"; filename="a.proto"\r\nContent-Type: application/octet-stream',
          'syntax = "proto3";\r\n',
        ),
        part('content-disposition: form-data; name="proto_files"; filename="b %22q%22.proto"', ''),
        part('Content-Disposition: form-data; name="proto_files"; filename=""\r\nContent-Type: application/octet-stream', ''),
      ),
    ]),
    B,
  );
  if (typeof m === 'string') return t.fail(m);
  t.equal(m.fields.get('csrf'), 'tok');
  t.equal(m.fields.get('proto_text'), 'line 1\r\nline 2', 'a value as it came');
  t.same(
    m.files.map((f) => [f.field, f.filename, f.data.toString()]),
    [
      ['proto_files', 'a.proto', 'syntax = "proto3";\r\n'],
      ['proto_files', 'b "q".proto', ''],
    ],
    'the files, a quote unescaped; the empty file input left out',
  );
});

t.test('malformed bodies are refused with the reason', async (t) => {
  t.equal(parseMultipart(Buffer.from('nothing here'), B), 'no multipart boundary in the body');
  t.equal(parseMultipart(Buffer.from(`x--${B}\r\n`), B), 'no multipart boundary in the body', 'a delimiter not at a line start');
  t.equal(parseMultipart(Buffer.from(`--${B}xx`), B), 'a multipart delimiter is not followed by CRLF');
  t.equal(parseMultipart(Buffer.from(`--${B}\r\nContent-Disposition: form-data; name="a"`), B), 'a part without its header block');
  t.equal(
    parseMultipart(Buffer.from(`--${B}\r\nContent-Disposition: form-data; name="a"\r\n\r\nvalue`), B),
    'the body ends before its closing delimiter',
  );
  t.equal(parseMultipart(body(part('Content-Type: text/plain', 'x')), B), 'a part without Content-Disposition: form-data and a name');
  t.equal(
    parseMultipart(body(part('Content-Disposition: attachment; name="a"', 'x')), B),
    'a part without Content-Disposition: form-data and a name',
  );
  const many = body(...Array.from({ length: MAX_PARTS + 1 }, (_, i) => part(`Content-Disposition: form-data; name="f${i}"`, '')));
  t.equal(parseMultipart(many, B), `more than ${MAX_PARTS} parts`);
  const most = body(...Array.from({ length: MAX_PARTS }, (_, i) => part(`Content-Disposition: form-data; name="f${i}"`, '')));
  t.type(parseMultipart(most, B), 'object', `${MAX_PARTS} parts are read`);
});
