/**
 * The shell blocks of docs/security.md, docs/key-manager.md, docs/admin-api.md, docs/throttling.md and
 * docs/migrating.md run for real against one node (`node dist/lib/cli.js start` on a temporary copy of conf/,
 * server.offset moving every port), as npm-start.test.ts does for the README and docs/quickstart.md. Their
 * shapes (commands, flags, routes) are checked statically by test/unit/docs-samples.test.ts; here they must
 * also work. Each page uses its own application name (MyApp renamed) so the pages do not depend on each
 * other. Two forms are filled in here as a reader would: admin-api.md's `$A` (defined on the block's first
 * line) and throttling.md's `<id>` (printed by the `blocking add` before it).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import t from 'tap';
import { until } from './helpers';
import { runDocCommand, shCommands, type DocRun } from './doc-commands';
import { startConfCopy } from '../conf-node';

const root = path.join(__dirname, '..', '..', '..');

t.test('the shell blocks of the key manager, security, admin API, throttling and migrating pages run', async (t) => {
  const node = await startConfCopy(t, 'throughway-docs-pages-');
  const { dir, offset, child, exited } = node;
  t.ok(await until(() => node.out.includes('Try:'), 90_000), `started:\n${node.out}\n${node.err}`);

  const pages: Array<[string, string]> = [
    ['security.md', 'SecApp'],
    ['key-manager.md', 'KmApp'],
    ['admin-api.md', 'AdminApp'],
    ['throttling.md', 'ThrApp'],
    ['migrating.md', 'MigApp'],
  ];
  for (const [page, app] of pages) {
    const md = fs.readFileSync(path.join(root, 'docs', page), 'utf8');
    const commands = shCommands(md);
    t.ok(commands.length >= 1, `${page}: ${commands.length} commands`);
    const r: DocRun = { cwd: dir, offset, values: new Map() };
    let a = '';
    let blockingId: string | undefined;
    for (const c of commands) {
      const def = /^A='([^']*)'$/.exec(c.line);
      if (def !== null) {
        a = def[1] ?? '';
        continue;
      }
      let line = c.line.replace(/\bMyApp\b/g, app).replace(/\$A\b/g, a);
      if (line.includes('<id>')) {
        t.ok(blockingId !== undefined, `${page}: the id printed by blocking add`);
        line = line.replace('<id>', blockingId ?? '');
      }
      const res = await runDocCommand({ line, status: c.status }, r);
      if (res.kind === 'curl')
        t.ok(res.status === 200 || res.status === 201, `${page}: ${c.line} -> ${res.status} ${res.output.slice(0, 100)}`);
      else t.pass(`${page}: ${c.line}`);
      if (line.includes('blocking add')) blockingId = /^blocking condition (\S+) added: IP 203\.0\.113\.7$/m.exec(res.output)?.[1];
      if (line.includes('blocking list') && blockingId !== undefined)
        t.match(res.output, blockingId, `${page}: the new condition is listed`);
      if (line.includes('blocking remove')) t.match(res.output, `blocking condition ${blockingId ?? ''} removed`, `${page}: removed`);
      if (line.includes('config check'))
        t.match(
          res.output,
          /deployment\.toml: valid \((0 warnings|1 warning)\)/,
          `${page}: config check passes (with admin/admin, its one warning)`,
        );
    }
    if (page === 'security.md') t.ok(r.values.has('access token'), "security.md: a token got with the page's keys");
  }
  child.kill('SIGTERM');
  t.equal(await exited, 0, 'SIGTERM: clean exit');
  t.notMatch(node.err, /"level":"(error|fatal)"/, 'nothing logged as an error');
});
