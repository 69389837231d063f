import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderTransportDoc } from '../../scripts/gen-transport-docs';
import { FAULT_KINDS } from '../../lib/transport/codes';
import { STATE_NAMES } from '../../lib/transport/states';

const docPath = join(__dirname, '..', '..', '..', 'docs', 'transport.md');

t.test('docs/transport.md is generated from the tables the transport runs', async (t) => {
  t.equal(readFileSync(docPath, 'utf8'), renderTransportDoc(), 'stale: run node dist/scripts/gen-transport-docs.js');
});

t.test('every fault reason and every state is documented', async (t) => {
  const doc = readFileSync(docPath, 'utf8');
  for (const reason of Object.keys(FAULT_KINDS)) t.match(doc, '`' + reason + '`', reason);
  STATE_NAMES.forEach((name, n) => t.match(doc, `| ${n} | ${name} |`, name));
});
