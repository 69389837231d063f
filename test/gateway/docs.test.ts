/**
 * docs/faults.md and docs/apis.md are generated from the tables the gateway runs (scripts/gen-gateway-docs.ts):
 * a stale page fails, and so does any code, field, phase or diagnostic missing from it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { DOCS, renderApisDoc, renderFaultsDoc } from '../../scripts/gen-gateway-docs';
import { GATEWAY_FAULTS } from '../../lib/faults';
import { FAULT_KINDS } from '../../lib/transport/codes';
import { API_FIELDS, type FieldDef } from '../../lib/gateway/apis';
import { PHASES } from '../../lib/gateway/phases';
import { API_DIAGNOSTIC_CODES } from '../../lib/gateway/diagnostics';

const docs = join(__dirname, '..', '..', '..', 'docs');

t.test('the committed pages are what the generator writes', async (t) => {
  for (const d of DOCS)
    t.equal(readFileSync(join(docs, d.file), 'utf8'), d.render(), `docs/${d.file} is stale: run node dist/scripts/gen-gateway-docs.js`);
});

t.test('every fault code is documented with its status', async (t) => {
  const doc = renderFaultsDoc();
  for (const f of GATEWAY_FAULTS) t.match(doc, `| ${f.code} | ${f.httpStatus} | ${f.message.replace(/\|/g, '\\|')} |`, String(f.code));
  for (const [reason, k] of Object.entries(FAULT_KINDS)) {
    if (k.addsState) t.match(doc, `| \`${reason}\` | ${k.base} |`, reason);
    else t.match(doc, `| ${k.base} | ${k.httpStatus} |`, reason);
  }
});

t.test('every API field, phase and diagnostic code is documented', async (t) => {
  const doc = renderApisDoc();
  const walk = (fields: readonly FieldDef[], prefix: string): void => {
    for (const f of fields) {
      t.match(doc, `| \`${prefix}${f.key}\` |`, `${prefix}${f.key}`);
      if (f.type === 'endpoint') walk(f.fields ?? [], 'endpoints.<name>.');
      else if (f.fields !== undefined) walk(f.fields, f.type === 'tables' ? `${prefix}${f.key}[].` : `${prefix}${f.key}.`);
    }
  };
  walk(API_FIELDS, '');
  for (const p of PHASES) t.match(doc, `| ${p.name} | ${p.enforced ? 'enforced' : '**not yet enforced**'} |`, p.name);
  for (const code of Object.keys(API_DIAGNOSTIC_CODES)) t.match(doc, `| ${code} |`, code);
});
