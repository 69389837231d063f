/**
 * The types of the files users write beside deployment.toml are current: lib/gateway/api-file.generated.ts
 * (from API_FIELDS) and lib/throttle/policies-file.generated.ts (from POLICY_FIELDS) are regenerated in
 * memory and compared with the committed files; `npm run file-types` (or `npm run docs`) rewrites them.
 * The readers take their checked tables in these types (DocumentReader.read, lib/config/document.ts).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import t from 'tap';
import { DocumentReader, typedFields, type FieldDef } from '../../lib/config/document';
import { API_CODES, API_FIELDS } from '../../lib/gateway/apis';
import type { ApiFile } from '../../lib/gateway/api-file.generated';
import { FILE_TYPES, present, renderFileTypes } from '../../scripts/gen-file-types';
import { REPO } from './helpers';

for (const spec of FILE_TYPES) {
  t.test(`${spec.file} is current`, async (t) => {
    const committed = fs.readFileSync(path.join(REPO, spec.file), 'utf8');
    t.ok(
      committed === renderFileTypes(spec),
      `the generated types differ from ${spec.source}: run \`npm run file-types\` (or node dist/scripts/gen-file-types.js), rebuild and commit`,
    );
  });
}

t.test('a field added to a table changes the generated file (so the staleness test can fail)', async (t) => {
  const spec = FILE_TYPES[0] as (typeof FILE_TYPES)[number];
  const committed = fs.readFileSync(path.join(REPO, spec.file), 'utf8');
  const extra: FieldDef = { key: 'owner', type: 'string', allowed: ['a', 'b'], meaning: 'Who owns it.' };
  const changed = renderFileTypes({ ...spec, fields: [...spec.fields, extra] });
  t.not(changed, committed);
  t.match(changed, '  readonly owner?: "a" | "b";\n');
});

t.test('presence follows the reader: required or defaulted fields are present, others and onlyWith ones optional', async (t) => {
  t.equal(present({ key: 'a', type: 'string', required: true, meaning: '' }), true);
  t.equal(present({ key: 'a', type: 'integer', default: 1, meaning: '' }), true);
  t.equal(present({ key: 'a', type: 'integer', meaning: '' }), false);
  t.equal(present({ key: 'a', type: 'integer', default: 1, onlyWith: ['b'], meaning: '' }), false);
  const types = renderFileTypes(FILE_TYPES[1] as (typeof FILE_TYPES)[number]);
  t.match(types, '  readonly subscription?: readonly PoliciesFileSubscription[];\n');
  t.match(types, '  readonly unit_time?: number;\n');
  t.match(types, '  readonly fail: "open" | "closed";\n');
  t.match(types, 'export interface PoliciesFileConditionGroup extends PoliciesFileQuota {', 'a shared run of fields is a base interface');
  t.match(types, 'export interface PoliciesFileNamed extends PoliciesFileQuota {');
  t.match(types, 'export type PoliciesFileApplication = PoliciesFileNamed;', 'a table that is one base is that base');
  t.match(types, '/** [[api.condition_group.condition]]: ');
  const api = renderFileTypes(FILE_TYPES[0] as (typeof FILE_TYPES)[number]);
  t.match(api, '  readonly production?: ApiFileEndpoint;\n  /** Sandbox endpoint. */\n  readonly sandbox?: ApiFileEndpoint;\n');
  t.match(api, '  readonly suspend_duration: number;\n');
});

t.test('the typed reader gives the checked table in the generated shape, and reports with file and line', async (t) => {
  const r = new DocumentReader('orders.toml', undefined, API_CODES);
  const raw = { name: 'Orders', context: '/orders', version: '1', endpoints: { production: 'http://127.0.0.1:9000' } };
  const checked = r.read(typedFields<ApiFile>(API_FIELDS), raw, []);
  t.same(r.diagnostics, []);
  t.equal(checked?.endpoints.production?.url, 'http://127.0.0.1:9000');
  t.equal(checked?.endpoints.production?.suspend_duration, 30000);
  t.same(checked?.labels, ['Default']);
  t.equal(checked?.state, 'PUBLISHED');
  const bad = new DocumentReader('orders.toml', undefined, API_CODES);
  t.equal(bad.read(typedFields<ApiFile>(API_FIELDS), { ...raw, version: 2 }, []), undefined);
  t.match(bad.diagnostics, [
    { level: 'error', code: 'API_TYPE', file: 'orders.toml', field: 'version', message: 'expected a string, got an integer' },
  ]);
});
