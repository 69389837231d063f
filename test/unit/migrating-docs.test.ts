/**
 * docs/migrating.md: its generated section is the schema's current word on which sections run and which
 * are accepted but inactive, and on each key's status (lib/config/key-status.ts); it agrees with what
 * the loader (and so `config check`) reports for a file that writes them.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SECTIONS } from '../../lib/config/schema';
import { loadConfig } from '../../lib/config/load';
import { STATUS_WORDS, countStatuses, isSpecSection, keyStatus } from '../../lib/config/key-status';
import { BEGIN, END, renderMigratingPage } from '../../scripts/gen-migrating';

const root = join(__dirname, '..', '..', '..');
const page = readFileSync(join(root, 'docs', 'migrating.md'), 'utf8');

t.test('the generated section is up to date (npm run docs)', async (t) => {
  t.ok(page.includes(BEGIN) && page.includes(END), 'markers present');
  t.equal(renderMigratingPage(page), page);
});

t.test('every spec section is listed once, under the heading its schema marker says', async (t) => {
  const runs = page.slice(page.indexOf('### Sections that run'), page.indexOf('### Sections accepted but inactive'));
  const idle = page.slice(page.indexOf('### Sections accepted but inactive'), page.indexOf("### throughway's own settings"));
  for (const s of SECTIONS) {
    if (s.source === 'throughway' || s.path === '') continue;
    const name = `\`${s.repeatable === true ? `[[${s.path}]]` : `[${s.path}]`}\``;
    t.equal((s.runs ? runs : idle).includes(`| ${name} |`), true, `${s.path}: ${s.runs ? 'runs' : 'inactive'}`);
    t.equal((s.runs ? idle : runs).includes(`| ${name} |`), false, `${s.path}: not under the other heading`);
  }
});

t.test('what config check reports as inactive is what the page lists as inactive', async (t) => {
  const idle = SECTIONS.filter(
    (s) => !s.runs && s.source !== 'throughway' && !s.path.includes('<') && s.path !== '' && s.repeatable !== true,
  ).slice(0, 5);
  t.ok(idle.length > 0);
  const text = idle.map((s) => `[${s.path}]\n`).join('');
  const loaded = loadConfig({ text, file: '/nonexistent/deployment.toml' });
  t.equal(loaded.ok, true);
  for (const s of idle) {
    t.ok(loaded.inactive.includes(s.path), `config check: ${s.path} accepted but inactive`);
    t.ok(page.includes(`| \`[${s.path}]\` |`), `page: ${s.path}`);
  }
});

t.test('every spec key has one row with the status its schema marks give, and the why where it differs', async (t) => {
  const table = page.slice(page.indexOf('### Every key and its status'), page.indexOf(END));
  const rows = table.split('\n').filter((l) => l.startsWith('| `'));
  const spec = SECTIONS.filter(isSpecSection);
  t.equal(
    rows.length,
    spec.reduce((n, s) => n + s.keys.length, 0),
    'one row per key',
  );
  for (const s of spec) {
    const name = s.path === '' ? '' : `\`${s.repeatable === true ? `[[${s.path}]]` : `[${s.path}]`}\` `;
    for (const k of s.keys) {
      const status = keyStatus(s, k);
      const row = rows.find((r) => r.startsWith(`| ${name}\`${k.key}\` |`));
      if (row === undefined) {
        t.fail(`no row for [${s.path}] ${k.key}`);
        continue;
      }
      t.ok(row.includes(`| ${STATUS_WORDS[status]} |`), `[${s.path}] ${k.key}: ${status}`);
      if (status === 'differs') t.ok(row.includes(String(k.differs).replace(/\|/g, '\\|')), `[${s.path}] ${k.key}: why`);
    }
  }
  const n = countStatuses(spec);
  t.ok(page.includes(`${n.acts} act as the spec describes, ${n.differs} act differently`), 'the counts in the introduction');
});
