/**
 * Files generated from the schema are current: docs/configuration.md and
 * lib/config/deployment-config.generated.ts. Both are regenerated in memory and compared with the
 * committed files; `npm run docs` rewrites them.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import t from 'tap';
import { SECTIONS } from '../../lib/config/schema';
import { renderDocs } from '../../scripts/gen-config-docs';
import { renderTypes } from '../../scripts/gen-config-types';
import { DIAGNOSTIC_CODES } from '../../lib/config/diagnostics';
import { REPO } from './helpers';

t.test('docs/configuration.md is current', async (t) => {
  const committed = fs.readFileSync(path.join(REPO, 'docs', 'configuration.md'), 'utf8');
  t.ok(committed === renderDocs(), 'docs/configuration.md differs from the schema: run `npm run docs` and commit it');
});

t.test('lib/config/deployment-config.generated.ts is current', async (t) => {
  const committed = fs.readFileSync(path.join(REPO, 'lib', 'config', 'deployment-config.generated.ts'), 'utf8');
  t.ok(
    committed === renderTypes(),
    'the generated config types differ from the schema: run `npm run docs` (or node dist/scripts/gen-config-types.js), rebuild and commit',
  );
});

t.test('the docs list every section, every key, and every diagnostic code', async (t) => {
  const docs = renderDocs();
  for (const s of SECTIONS) {
    const heading = s.path === '' ? '### Top level' : `### \`${s.repeatable === true ? `[[${s.path}]]` : `[${s.path}]`}\``;
    t.ok(docs.includes(`\n${heading}\n`), `section ${s.path || '(top level)'}`);
    for (const k of s.keys) t.ok(docs.includes(`| \`${k.key.replace(/\|/g, '\\|')}\` |`), `${s.path}.${k.key}`);
  }
  for (const code of Object.keys(DIAGNOSTIC_CODES)) t.ok(docs.includes(`\`${code}\``), code);
  for (const topic of [
    '$env{NAME}',
    '$sys{name}',
    '$ref{section.key}',
    '$conf{section.key}',
    'server.offset',
    '--strict',
    '[throughway]',
    'milliseconds',
    'accepted but inactive',
  ]) {
    t.ok(docs.includes(topic), `the introduction explains ${topic}`);
  }
});

t.test('the generated types name every plain section', async (t) => {
  const types = renderTypes();
  t.match(types, 'export interface DeploymentConfig');
  t.match(types, 'readonly server: ServerSection;');
  t.match(types, /readonly environment: readonly ApimGatewayEnvironmentSection\[\];/);
});
