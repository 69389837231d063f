/**
 * TOML text edited in place (lib/portal/toml-edit.ts): changed values replaced on their lines, new keys
 * after their table's last key, new tables as sections, arrays of tables matched by identity and
 * written in the new order, comments kept; a result that would not read back exactly is refused.
 */
import t from 'tap';
import * as toml from 'toml';
import { editToml, pairEntries, sameValue } from '../../lib/portal/toml-edit';

const parse = (s: string): Record<string, unknown> => toml.parse(s) as Record<string, unknown>;
/** Every comment of a text, in order (the texts of these tests hold no # inside strings). */
const commentLines = (s: string): string[] => s.split(/\r?\n/).flatMap((l) => /#.*$/.exec(l)?.[0] ?? []);
const byPath = (p: readonly (string | number)[], e: Record<string, unknown>): string | undefined =>
  p[0] === 'resources' ? String(e.path) : undefined;

const FILE = `# An API file with comments everywhere.
name = "Shop"   # the name
version = "1"
labels = [
  "Default", # every gateway
  "edge",
]

# The backends.
[endpoints]
production = "http://h:1/v1" # live

# Reads.
[[resources]]
path = "/items"
methods = ["GET"]

# Writes: admins only.
[[resources]]
path = "/orders"
methods = ["POST"]
scopes = ["write"] # needs a role
`;

t.test('changed values are replaced on their lines; every comment stays', async (t) => {
  const old = parse(FILE);
  const next = { ...old, name: 'Store', labels: ['Default'], endpoints: { production: 'http://h:2/v1' } };
  const out = editToml(FILE, old, next);
  if (out === undefined) throw new Error('not edited');
  t.same(parse(out), next, 'reads back as the new document');
  t.same(commentLines(out), commentLines(FILE), 'every comment, in order');
  t.match(out, /^# every gateway\nlabels = \["Default"\]$/m, 'a comment inside a replaced multi-line value moves above its key');
  t.match(out, /^name = "Store" # the name$/m, 'the comment at the end of the line stays');
  t.match(out, /^production = "http:\/\/h:2\/v1" # live$/m);
  t.match(out, /^labels = \["Default"\]$/m, 'a multi-line value is one line again');
  t.equal(out.split('\n').length, FILE.split('\n').length - 2, 'nothing else moved');
});

t.test("new keys go after their table's last key; new tables are sections", async (t) => {
  const old = parse(FILE);
  const next = {
    ...old,
    description: 'd',
    cors: { enable: true },
    endpoints: { production: { url: 'http://h:1/v1', timeout: '5s' }, sandbox: 'http://s/' },
  };
  const out = editToml(FILE, old, next) ?? '';
  t.same(parse(out), next);
  t.same(
    commentLines(out),
    commentLines(FILE).filter((c) => c !== '# live'),
    'every comment but the one on the line of the URL, which moved into a section',
  );
  t.match(out, /\]\ndescription = "d"\n\n# The backends\./, 'after the last top-level key, before the comments of the next table');
  t.match(
    out,
    /\[endpoints\]\nsandbox = "http:\/\/s\/"\n\n\[endpoints\.production\]\nurl = "http:\/\/h:1\/v1"\ntimeout = "5s"\n/,
    "a URL that gains settings becomes its own section after its parent's",
  );
  t.match(out, /\n\[cors\]\nenable = true\n$/, 'a new top-level table goes last');
});

t.test('arrays of tables: matched by identity, reordered with their comments, removed with theirs', async (t) => {
  const old = parse(FILE);
  const resources = old.resources as Record<string, unknown>[];
  const next = {
    ...old,
    resources: [
      { ...resources[1], methods: ['POST', 'PUT'] },
      { path: '/new', methods: ['GET'], policy: 'Gold' },
    ],
  };
  const out = editToml(FILE, old, next, byPath) ?? '';
  t.same(parse(out), next);
  t.notMatch(out, /# Reads\./, 'a removed entry goes with the comment above its header');
  t.match(
    out,
    /# Writes: admins only\.\n\[\[resources\]\]\npath = "\/orders"\nmethods = \["POST", "PUT"\]\nscopes = \["write"\] # needs a role\n\n\[\[resources\]\]\npath = "\/new"/,
    'the kept entry edited in place, the new one after it',
  );
  const swapped = { ...old, resources: [resources[1], resources[0]] };
  const out2 = editToml(FILE, old, swapped, byPath) ?? '';
  t.same(parse(out2), swapped);
  t.same(
    commentLines(out2),
    commentLines(FILE).slice(0, 5).concat(['# Writes: admins only.', '# needs a role', '# Reads.']),
    'every comment kept',
  );
  t.match(
    out2,
    /# Writes: admins only\.\n\[\[resources\]\]\npath = "\/orders"[^]*# Reads\.\n\[\[resources\]\]\npath = "\/items"/,
    'comments travel with their entries',
  );
});

t.test('inline tables, dotted keys, CRLF and a byte order mark', async (t) => {
  const text = '\ufeffname = "A"\r\ncors = { enable = true } # inline\r\nendpoints.production = "http://a/"\r\n';
  const old = parse(text.slice(1));
  const next = { ...old, cors: { enable: false, allow_origins: ['*'] }, endpoints: { production: 'http://b/', sandbox: 'http://c/' } };
  const out = editToml(text, old, next) ?? '';
  t.same(parse(out.slice(1)), next);
  t.equal(out.charCodeAt(0), 0xfeff, 'the byte order mark stays');
  t.notMatch(out.replace(/\r\n/g, ''), /\n/, 'CRLF line ends stay');
  t.match(out, /cors = \{ enable = false, allow_origins = \["\*"\] \} # inline\r\n/, 'an inline table is rewritten inline');
  t.match(out, /endpoints\.production = "http:\/\/b\/"\r\nendpoints\.sandbox = "http:\/\/c\/"\r\n/, 'a dotted table gets dotted keys');
});

t.test('a multi-line value keeps the comments inside it, above the key', async (t) => {
  const text = 'codes = [\n  101503, # refused\n  101504,\n]\n';
  const out = editToml(text, parse(text), { codes: [101505] });
  t.equal(out, '# refused\ncodes = [101505]\n', "at the key's indentation");
});

t.test('what cannot be edited in place is refused, so the caller writes afresh', async (t) => {
  const text = '[[resources]]\npath = "/x"\n';
  t.equal(editToml(text, parse(text), { resources: [{ path: '/x', sub: { a: 1 } }] }), undefined, 'a new table inside an array entry');
  t.equal(editToml(text, parse(text), { resources: [{ path: '/x' }], cors: {} }), undefined, 'an empty table (no text reads back as it)');
  t.equal(editToml(text, parse(text), parse(text)), text, 'no change, same text');
});

t.test('pairing and equality', async (t) => {
  const key = (e: { id?: string }): string | undefined => e.id;
  t.same(
    pairEntries([{ id: 'a' }, { id: 'b' }, { id: 'a' }], [{ id: 'a' }, { id: 'a' }, { id: 'c' }, { id: 'b' }], key),
    [0, 2, undefined, 1],
    'repeated identities pair in order',
  );
  t.same(pairEntries([{}, {}], [{}, {}, {}], key), [0, 1, undefined], 'without identity: by index');
  t.ok(
    sameValue({ a: [1, { b: 2 }], c: undefined }, Object.assign(Object.create(null) as object, { a: [1, { b: 2 }] })),
    'key order, undefined keys and prototypes do not count',
  );
  t.notOk(sameValue({ a: [1] }, { a: [1, 2] }));
});
