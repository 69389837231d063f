/**
 * The key scanner (lib/config/locate.ts): every dotted key path, [[entry]] index, quoted key and inline
 * table member maps to the line and column where it is written.
 */
import t from 'tap';
import { locateKeys, nearest } from '../../lib/config/locate';

const TEXT = [
  '# comment',
  '[server]',
  'hostname = "localhost" # trailing',
  '',
  '[[apim.gateway.environment]]',
  'name = "A"',
  '[apim.gateway.environment.virtual_host]',
  '  https_endpoint = "https://a"',
  '[[apim.gateway.environment]]',
  'name = "B"',
  '[passthru_http]',
  "'http.socket.timeout' = 1",
  'http.headers.preserve = [',
  '  "Content-Type", # the only one',
  '  "Date",',
  ']',
  'text = """',
  'name = "not a key"',
  '"""',
  'inline = { a = 1, b = { c = 2 } }',
  '"quoted key" = 3',
  '[[x]]',
  '[[x.y]]',
  'z = 1',
  '[[x]]',
  '[[x.y]]',
  'z = 2',
  '',
].join('\n');

t.test('paths map to lines and columns', async (t) => {
  const map = locateKeys(TEXT);
  const line = (p: string): number | undefined => map.entries.get(p)?.line;
  t.equal(line('server'), 2);
  t.equal(line('server.hostname'), 3);
  t.equal(line('apim.gateway.environment[0]'), 5);
  t.equal(line('apim.gateway.environment[0].name'), 6);
  t.equal(line('apim.gateway.environment[0].virtual_host.https_endpoint'), 8);
  t.equal(map.entries.get('apim.gateway.environment[0].virtual_host.https_endpoint')?.column, 3);
  t.equal(line('apim.gateway.environment[1].name'), 10);
  t.equal(line('passthru_http.http.socket.timeout'), 12, 'a quoted dotted key is split');
  t.equal(line('passthru_http.http.headers.preserve'), 13);
  t.equal(map.entries.get('passthru_http.http.headers.preserve')?.endLine, 16, 'a multi-line array ends on its ]');
  t.equal(line('passthru_http.http.headers.preserve[1]'), 15, 'array elements');
  t.equal(line('passthru_http.text'), 17);
  t.equal(line('passthru_http.name'), undefined, 'text inside a multi-line string is no key');
  t.equal(line('passthru_http.inline.b.c'), 20, 'inline tables, nested');
  t.equal(map.entries.get('passthru_http.inline.b.c')?.column, 25);
  t.equal(line('passthru_http.quoted key'), 21);
  t.equal(line('x[0].y[0].z'), 24, 'nested arrays of tables');
  t.equal(line('x[1].y[0].z'), 27);
  t.same(map.duplicates, []);
});

t.test('nearest falls back to the written ancestor', async (t) => {
  const map = locateKeys(TEXT);
  t.equal(nearest(map, ['server', 'offset'])?.line, 2, 'a missing key points at its table');
  t.equal(nearest(map, ['nothing', 'here']), undefined);
});

t.test('duplicates, including a quoted dotted key and its nested form', async (t) => {
  const map = locateKeys("[a]\nx = 1\n'b.c' = 2\nb.c = 3\n[a]\n");
  t.same(
    map.duplicates.map((d) => [d.path, d.first.line, d.again.line]),
    [
      ['a.b.c', 3, 4],
      ['a', 1, 5],
    ],
  );
});

t.test('never throws on broken text', async (t) => {
  for (const text of ['[a', 'x = [1, 2', 'x = """never closed', '= 1', '[[', 'a = {', '\u0000\u0001', "'", 'a.b. = 1']) {
    t.doesNotThrow(() => locateKeys(text), JSON.stringify(text));
  }
});
