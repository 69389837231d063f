/**
 * The docs hold together: every relative link of README.md and docs/*.md resolves (file and #anchor), every
 * file they name (docs/x.md, docs/examples/x.js, lib/, test/, bench/ sources) exists, the README's index
 * lists every page of docs/ once and its layout every lib/ folder, and docs/architecture.md's layout names
 * every file of lib/ under its folder. A page renamed, a file moved or a folder added fails here.
 */
import t from 'tap';
import * as fs from 'node:fs';
import * as path from 'node:path';

const root = path.join(__dirname, '..', '..', '..');
const docsDir = path.join(root, 'docs');
const pages = [
  'README.md',
  ...fs
    .readdirSync(docsDir)
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`),
];
const read = (rel: string): string => fs.readFileSync(path.join(root, rel), 'utf8');

/** GitHub's heading anchors: lower case, punctuation dropped, spaces as '-'. */
function anchors(markdown: string): Set<string> {
  const out = new Set<string>();
  for (const m of markdown.matchAll(/^#{1,6}\s+(.+)$/gm)) {
    out.add(
      (m[1] as string)
        .trim()
        .toLowerCase()
        .replace(/[^\p{L}\p{N}\s_-]/gu, '')
        .replace(/\s/g, '-'),
    );
  }
  for (const m of markdown.matchAll(/\b(?:id|name)="([^"]+)"/g)) out.add(m[1] as string);
  return out;
}

t.test('relative links resolve, anchors included', async (t) => {
  let links = 0;
  for (const page of pages) {
    const text = read(page);
    for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = m[1] as string;
      if (/^[a-z]+:/.test(target)) continue;
      links++;
      const [file, anchor] = target.split('#') as [string, string | undefined];
      const rel = file === '' ? page : path.posix.normalize(path.posix.join(path.posix.dirname(page), file));
      t.ok(fs.existsSync(path.join(root, rel)), `${page}: (${target}) -> ${rel} exists`);
      if (anchor !== undefined && rel.endsWith('.md') && fs.existsSync(path.join(root, rel))) {
        t.ok(anchors(read(rel)).has(anchor), `${page}: (${target}) -> #${anchor} is a heading of ${rel}`);
      }
    }
  }
  t.ok(links > 5, `links checked: ${links}`);
});

t.test('every file a page names exists', async (t) => {
  let named = 0;
  for (const page of pages) {
    const text = read(page);
    // docs pages and examples, and sources (a .js name is the compiled form of a .ts source).
    for (const m of text.matchAll(/(?<![\w./-])((?:docs|lib|test|bench)\/[\w./-]*\.(?:md|ts|js))\b/g)) {
      const rel = m[1] as string;
      named++;
      const ok =
        fs.existsSync(path.join(root, rel)) ||
        (rel.endsWith('.js') && !rel.startsWith('docs/') && fs.existsSync(path.join(root, rel.replace(/\.js$/, '.ts'))));
      t.ok(ok, `${page}: ${rel} exists`);
    }
  }
  t.ok(named > 50, `names checked: ${named}`);
});

t.test('the README lists every page of docs/ once, and every lib/ folder', async (t) => {
  const readme = read('README.md');
  const index = readme.slice(readme.indexOf('## Documentation'), readme.indexOf('## Layout'));
  const entries = [...index.matchAll(/^\| `(docs\/[^`]+)` \|/gm)].map((m) => m[1] as string);
  const expected = [
    ...fs
      .readdirSync(docsDir)
      .filter((f) => f.endsWith('.md'))
      .map((f) => `docs/${f}`),
    'docs/examples/',
  ];
  t.same([...entries].sort(), expected.sort(), 'the docs index: each page once, none missing, none extra');
  const layout = readme.slice(readme.indexOf('## Layout'));
  for (const d of fs.readdirSync(path.join(root, 'lib'), { withFileTypes: true })) {
    const name = d.isDirectory() ? `lib/${d.name}/` : `lib/${d.name}`;
    t.match(layout, new RegExp(`^${name.replace(/[.]/g, '\\.')}\\s`, 'm'), `README layout: ${name}`);
  }
});

t.test("docs/architecture.md's layout names every file of lib/ under its folder", async (t) => {
  const page = read('docs/architecture.md');
  const block = page.slice(page.indexOf('## Layout'));
  const code = block.slice(block.indexOf('```'), block.indexOf('```', block.indexOf('```') + 3));
  const lines = code.split('\n');
  /** The lines under `folder/` (more deeply indented than it, up to the next line at its depth). */
  const under = (folder: string): string => {
    const i = lines.findIndex((l) => l.trimStart().startsWith(`${folder}/`));
    if (i < 0) return '';
    const depth = (lines[i] as string).length - (lines[i] as string).trimStart().length;
    const out: string[] = [lines[i] as string];
    for (let j = i + 1; j < lines.length; j++) {
      const l = lines[j] as string;
      const d = l.length - l.trimStart().length;
      if (l.trim() !== '' && d <= depth) break;
      out.push(l);
    }
    return out.join('\n');
  };
  const walk = (dir: string, parts: string[]): void => {
    for (const d of fs.readdirSync(dir, { withFileTypes: true })) {
      if (d.isDirectory()) walk(path.join(dir, d.name), [...parts, d.name]);
      else if (d.name.endsWith('.ts')) {
        const scope = parts.length === 0 ? code : under(parts[parts.length - 1] as string);
        t.ok(new RegExp(`(^|[\\s,/])${d.name.replace(/[.]/g, '\\.')}\\b`).test(scope), `lib/${[...parts, d.name].join('/')}`);
      }
    }
  };
  walk(path.join(root, 'lib'), []);
});
