/**
 * The declarative configuration schema: every section and key of spec documents 000 and 001 (part 2),
 * the reference's key store tables its own files write (schema/reference.ts), plus throughway's own
 * [throughway] section. Order follows the spec, document 000, then 001, then the reference's tables, then
 * throughway's settings, so the generated docs read in the spec's order.
 */
import type { SectionDef } from '../schema-types';
import { DOC000_SECTIONS } from './doc000';
import { DOC001_SECTIONS } from './doc001';
import { REFERENCE_SECTIONS } from './reference';
import { THROUGHWAY_SECTIONS } from './throughway';

/** Bumped whenever a section or key is added, removed or changes type or meaning, so generated outputs can tell. */
export const SCHEMA_VERSION = 1;

export const SECTIONS: readonly SectionDef[] = [...DOC000_SECTIONS, ...DOC001_SECTIONS, ...REFERENCE_SECTIONS, ...THROUGHWAY_SECTIONS];
