/**
 * Generates the TypeScript shape of the files users write beside deployment.toml, from the field tables
 * the document reader checks them against (lib/config/document.ts): lib/gateway/api-file.generated.ts
 * from API_FIELDS (an API file, docs/apis.md) and lib/throttle/policies-file.generated.ts from
 * POLICY_FIELDS (the policies file, docs/throttling.md). The readers take their checked tables in these
 * types (DocumentReader.read), so a field added to a table is typed where it is read.
 * test/config/file-types.test.ts fails when a committed file is stale.
 *
 * Regenerate: `npm run file-types` (or npx tsc -p . && node dist/scripts/gen-file-types.js).
 *
 * The shape is what DocumentReader.checkTable makes of a table: a field that is required or has a default
 * is present, any other optional, and so is one read only beside another (`onlyWith`); values have their
 * checked types: a duration is milliseconds, a comma list or a single code an array, an endpoint written
 * as a URL string a table with `url`, a field with `allowed` values their union.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { FieldDef } from '../lib/config/document';
import { API_FIELDS } from '../lib/gateway/apis';
import { NAMED_FIELDS, POLICY_FIELDS, QUOTA_FIELDS } from '../lib/throttle/policies';
import { comment, pascal } from './gen-config-types';

export interface FileTypes {
  /** The generated file, relative to the repository. */
  readonly file: string;
  /** The interface of the whole document. */
  readonly root: string;
  readonly fields: readonly FieldDef[];
  /** Where the table is, for the header. */
  readonly source: string;
  readonly title: string;
  /**
   * Runs of fields several tables share (spread into them: the same FieldDef objects), each its own
   * interface that those tables extend; the larger first.
   */
  readonly bases?: readonly Base[];
}

export interface Base {
  readonly name: string;
  readonly fields: readonly FieldDef[];
  readonly doc: string;
}

export const FILE_TYPES: readonly FileTypes[] = [
  {
    file: 'lib/gateway/api-file.generated.ts',
    root: 'ApiFile',
    fields: API_FIELDS,
    source: 'API_FIELDS of lib/gateway/apis.ts',
    title: 'An API file (docs/apis.md) as the document reader checks it: defaults filled, durations in milliseconds.',
  },
  {
    file: 'lib/throttle/policies-file.generated.ts',
    root: 'PoliciesFile',
    fields: POLICY_FIELDS,
    source: 'POLICY_FIELDS of lib/throttle/policies.ts',
    title: 'The throttling policies file (docs/throttling.md): each kind an array of tables, each entry checked on its own.',
    bases: [
      {
        name: 'PoliciesFileNamed',
        fields: NAMED_FIELDS,
        doc: 'What every kind of policy has (NAMED_FIELDS): its name, its quota, how the quota is counted.',
      },
      { name: 'PoliciesFileQuota', fields: QUOTA_FIELDS, doc: 'The quota of a policy or a condition group (QUOTA_FIELDS).' },
    ],
  },
];

/** Whether checkTable always puts the field in a table it returns. */
export function present(def: FieldDef): boolean {
  return def.onlyWith === undefined && (def.required === true || def.default !== undefined);
}

function fieldDoc(def: FieldDef): string {
  const parts = [def.meaning];
  if (def.default !== undefined) parts.push(`Default: ${JSON.stringify(def.default)}${def.type === 'duration' ? ' ms' : ''}.`);
  if (def.type === 'duration') parts.push('Read as milliseconds.');
  if (def.onlyWith !== undefined) parts.push(`Read only with ${def.onlyWith.join(' or ')}.`);
  return parts.join(' ');
}

/** Where `run` stands in `fields` (the same objects, in order) on places not yet `taken`; -1: nowhere. */
function runAt(fields: readonly FieldDef[], run: readonly FieldDef[], taken: ReadonlySet<number>): number {
  for (let i = 0; i + run.length <= fields.length; i++) if (run.every((f, k) => fields[i + k] === f && !taken.has(i + k))) return i;
  return -1;
}

/** The generated text of one file. */
export function renderFileTypes(spec: FileTypes): string {
  const names = new Map<readonly FieldDef[], string>();
  const used = new Set<string>([spec.root]);
  const queue: { fields: readonly FieldDef[]; name: string; doc: string; at: string }[] = [];

  const nameOf = (def: FieldDef, parent: string, at: string): string => {
    const fields = def.fields ?? [];
    const known = names.get(fields);
    if (known !== undefined) return known;
    const word = def.type === 'endpoint' ? 'Endpoint' : def.type === 'tables' ? pascal(def.key.replace(/([^s])s$/, '$1')) : pascal(def.key);
    let name = `${spec.root}${word}`;
    if (used.has(name)) name = `${parent}${word}`;
    for (let n = 2; used.has(name); n++) name = `${parent}${word}${n}`;
    used.add(name);
    names.set(fields, name);
    const form = def.type === 'tables' ? `[[${at}]]` : def.type === 'endpoint' ? `${at}, a URL or a table` : `[${at}]`;
    queue.push({ fields, name, doc: `${form}: ${def.meaning}`, at });
    return name;
  };

  const leaf = (def: FieldDef, parent: string, at: string): string => {
    const union = (def.allowed ?? []).map((a) => JSON.stringify(a)).join(' | ');
    switch (def.type) {
      case 'string':
        return def.allowed !== undefined ? union : 'string';
      case 'boolean':
        return 'boolean';
      case 'number':
      case 'integer':
      case 'duration':
        return 'number';
      case 'strings':
        return def.allowed !== undefined ? `readonly (${union})[]` : 'readonly string[]';
      case 'codes':
        return 'readonly number[]';
      case 'map':
        return 'Readonly<Record<string, string>>';
      case 'settings':
        return 'Readonly<Record<string, unknown>>';
      case 'table':
      case 'endpoint':
        return nameOf(def, parent, at);
      case 'tables':
        return `readonly ${nameOf(def, parent, at)}[]`;
    }
  };

  const body = (fields: readonly FieldDef[], name: string, at: string): string =>
    fields
      .map((def) => {
        const type = leaf(def, name, at === '' ? def.key : `${at}.${def.key}`);
        return `${comment(fieldDoc(def), '  ')}  readonly ${def.key}${present(def) ? '' : '?'}: ${type};\n`;
      })
      .join('');

  const baseName = (b: Base, at: string): string => {
    if (!used.has(b.name)) {
      used.add(b.name);
      queue.push({ fields: b.fields, name: b.name, doc: b.doc, at });
    }
    return b.name;
  };

  /** One table: the bases it holds extended, its other fields its own; a table that is one base, that base. */
  const render = (fields: readonly FieldDef[], name: string, at: string, doc: string): string => {
    const taken = new Set<number>();
    const bases: string[] = [];
    for (const b of spec.bases ?? []) {
      if (b.name === name) continue;
      const i = runAt(fields, b.fields, taken);
      if (i < 0) continue;
      b.fields.forEach((_, k) => taken.add(i + k));
      bases.push(baseName(b, at));
    }
    if (bases.length === 1 && taken.size === fields.length) return `${comment(doc, '')}export type ${name} = ${bases[0] as string};\n`;
    const own = fields.filter((_, i) => !taken.has(i));
    return `${comment(doc, '')}export interface ${name}${bases.length > 0 ? ` extends ${bases.join(', ')}` : ''} {\n${body(own, name, at)}}\n`;
  };

  const out: string[] = [render(spec.fields, spec.root, '', spec.title)];
  for (let i = 0; i < queue.length; i++) {
    const q = queue[i] as { fields: readonly FieldDef[]; name: string; doc: string; at: string };
    out.push(render(q.fields, q.name, q.at, q.doc));
  }
  const header = [
    '/**',
    ` * GENERATED by scripts/gen-file-types.ts from ${spec.source}: do not edit by hand.`,
    ' * Regenerate: npm run file-types (npx tsc -p . && node dist/scripts/gen-file-types.js)',
    ' * (test/config/file-types.test.ts fails when this file is stale.)',
    ' */',
    '',
  ].join('\n');
  return `${header}${out.join('\n')}`;
}

/** The repository (this file runs from dist/scripts). */
export function repoRoot(): string {
  return path.resolve(__dirname, '..', '..');
}

if (require.main === module) {
  for (const spec of FILE_TYPES) {
    fs.writeFileSync(path.join(repoRoot(), spec.file), renderFileTypes(spec));
    process.stdout.write(`wrote ${spec.file}\n`);
  }
}
