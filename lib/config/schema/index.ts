/**
 * The declarative configuration schema: every section and key of spec documents 000 and 001 (part 2),
 * plus throughway's own [throughway] section. Order follows the spec: document 000, then 001, then
 * throughway's settings, so generated docs read in the spec's order.
 */
import type { SectionDef } from '../schema-types';

/** Bumped whenever a section or key is added, removed or changes meaning, so cached/generated outputs can tell. */
export const SCHEMA_VERSION = 1;

export const SECTIONS: readonly SectionDef[] = [
  {
    path: 'server',
    source: '000',
    title: 'Server',
    runs: true,
    keys: [
      { key: 'hostname', type: 's', required: true, default: 'localhost', format: 'host', meaning: 'The hostname of the server.' },
      { key: 'offset', type: 'i', default: 0, meaning: 'Port offset added to every port the server opens.' },
    ],
  },
];
