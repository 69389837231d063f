/**
 * Generates lib/config/deployment-config.generated.ts: the TypeScript shape of a loaded configuration,
 * from the schema (lib/config/schema), so the typed object every module receives cannot drift from what
 * the loader produces. test/config/generated.test.ts fails when the committed file is stale.
 *
 * Regenerate: npx tsc -p . && node dist/scripts/gen-config-types.js
 *
 * The shape mirrors load.ts: plain tables of the schema always exist (defaults filled), repeatable tables
 * are arrays (empty when not written), `<placeholder>` tables are records, keys with a default are
 * present, keys without one are optional. Values have their converted types: durations, ports and byte
 * sizes are numbers, comma lists are string arrays, 'TRUE'/'FALSE' string keys are booleans.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { KeyDef, SectionDef } from '../lib/config/schema-types';
import { SECTIONS } from '../lib/config/schema';
import { type TrieNode, buildIndex } from '../lib/config/schema-index';
import { unitName } from '../lib/config/convert';

export function pascal(text: string): string {
  return text
    .replace(/[<>]/g, '')
    .split(/[^A-Za-z0-9]+/)
    .filter((s) => s !== '')
    .map((s) => s.charAt(0).toUpperCase() + s.slice(1))
    .join('');
}

function propName(name: string): string {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name) ? name : JSON.stringify(name);
}

export function comment(text: string, indent: string): string {
  const clean = text.replace(/\*\//g, '*\\/').replace(/\s+/g, ' ').trim();
  return `${indent}/** ${clean} */\n`;
}

/** The TypeScript type of a converted key value (see convert.ts). */
export function leafType(def: KeyDef): string {
  const union = (def.allowed ?? []).map((a) => JSON.stringify(a)).join(' | ');
  if (def.format === 'list') return def.allowed !== undefined ? `readonly (${union})[]` : 'readonly string[]';
  if (def.format === 'duration' || def.format === 'port' || def.format === 'bytes') return 'number';
  if (def.boolString === true || def.type === 'b') return 'boolean';
  switch (def.type) {
    case 's':
      return def.allowed !== undefined ? union : 'string';
    case 'i':
    case 'f':
      return 'number';
    case 'a':
      return def.allowed !== undefined ? `readonly (${union})[]` : 'readonly string[]';
    case 'map':
      return 'Readonly<Record<string, unknown>>';
  }
}

function keyDoc(def: KeyDef): string {
  const parts = [def.meaning];
  const unit = def.format === 'duration' ? ` ${unitName(def.unit)}` : '';
  if (def.default !== undefined) parts.push(`Default: ${JSON.stringify(def.default)}${unit}.`);
  else if (def.defaultText !== undefined) parts.push(`Default: ${def.defaultText}.`);
  if (def.format === 'duration') parts.push('Loaded as milliseconds.');
  if (def.inactive !== undefined) parts.push('Accepted; throughway does not act on it.');
  if (def.differs !== undefined) parts.push(`Acts differently: ${def.differs}.`);
  return parts.join(' ');
}

function containsSection(node: TrieNode): boolean {
  if (node.section !== undefined || node.repeatable !== undefined) return true;
  for (const child of node.literal.values()) if (containsSection(child)) return true;
  return (node.placeholder !== undefined && containsSection(node.placeholder)) || (node.index !== undefined && containsSection(node.index));
}

/** Whether the loader always creates this node once its parent exists (defaults, tables, arrays). */
function present(node: TrieNode): boolean {
  if (node.key !== undefined && (node.key.def.type === 'map' || !node.hasChildren())) return node.key.def.default !== undefined;
  if (node.section !== undefined && node.section.repeatable !== true) return true;
  if (node.repeatable !== undefined) return true;
  for (const child of node.literal.values()) if (present(child)) return true;
  // Tables on the way to a <placeholder> section are created empty (load.ts, instances()).
  return node.placeholder !== undefined && containsSection(node.placeholder);
}

export function renderTypes(sections: readonly SectionDef[] = SECTIONS): string {
  const index = buildIndex(sections);
  const interfaces = new Map<string, { order: number; text: string }>();
  const names = new Map<SectionDef, string>();
  const used = new Set<string>(['DeploymentConfig']);
  const nameOf = (section: SectionDef): string => {
    let name = names.get(section);
    if (name === undefined) {
      const base = section.path === '' ? 'DeploymentConfig' : `${pascal(section.path)}Section`;
      name = base;
      for (let n = 2; used.has(name) && section.path !== ''; n++) name = `${base}${n}`;
      used.add(name);
      names.set(section, name);
    }
    return name;
  };

  const body = (node: TrieNode, indent: string): string => {
    let out = '';
    for (const [name, child] of node.literal) {
      const optional = present(child) ? '' : '?';
      if (child.key !== undefined && (child.key.def.type === 'map' || !child.hasChildren())) {
        out += comment(keyDoc(child.key.def), indent);
        out += `${indent}readonly ${propName(name)}${optional}: ${leafType(child.key.def)};\n`;
      } else {
        const section = child.section ?? child.repeatable;
        if (section !== undefined) out += comment(section.title, indent);
        out += `${indent}readonly ${propName(name)}${optional}: ${typeOf(child, indent)};\n`;
      }
    }
    const extra: string[] = [];
    if (node.placeholder !== undefined) extra.push(typeOf(node.placeholder, indent));
    if (node.open) extra.push('unknown');
    if (extra.length > 0) {
      // Named entries beside fixed keys can only be typed loosely in TypeScript.
      const valueType = node.literal.size > 0 || node.open ? 'unknown' : extra.join(' | ');
      const keyName = node.placeholderName !== undefined ? node.placeholderName.replace(/[<>]/g, '') : 'key';
      out += `${indent}readonly [${propName(keyName)}: string]: ${valueType};\n`;
    }
    return out;
  };

  const typeOf = (node: TrieNode, indent: string): string => {
    if (node.key !== undefined && (node.key.def.type === 'map' || !node.hasChildren())) return leafType(node.key.def);
    const forms: string[] = [];
    if (node.index !== undefined) forms.push(`readonly ${typeOf(node.index, indent)}[]`);
    if (node.literal.size > 0 || node.placeholder !== undefined || node.open || node.index === undefined) {
      if (node.section !== undefined) {
        const name = nameOf(node.section);
        if (!interfaces.has(name)) {
          interfaces.set(name, { order: sections.indexOf(node.section), text: '' });
          const doc = `${node.section.title} (${node.section.path === '' ? 'top level' : `[${node.section.repeatable === true ? `[${node.section.path}]` : node.section.path}]`}, ${node.section.source === 'reference' ? "the reference's files" : `spec ${node.section.source}`})${node.section.runs ? '' : '; accepted, not run by throughway'}.`;
          interfaces.set(name, {
            order: sections.indexOf(node.section),
            text: `${comment(doc, '')}export interface ${name} {\n${body(node, '  ')}}\n`,
          });
        }
        forms.push(name);
      } else if (node.literal.size > 0 || node.placeholder !== undefined || node.open) {
        forms.push(`{\n${body(node, `${indent}  `)}${indent}}`);
      } else if (node.index === undefined) {
        forms.push('Readonly<Record<string, never>>');
      }
    }
    return forms.join(' | ');
  };

  // The root is the '' section when the schema has one (top-level keys), else a plain interface.
  const rootSection = index.root.section;
  let rootText: string;
  if (rootSection !== undefined) {
    typeOf(index.root, '');
    rootText = '';
  } else {
    rootText = `/** A loaded deployment.toml. */\nexport interface DeploymentConfig {\n${body(index.root, '  ')}}\n`;
  }
  const ordered = [...interfaces.entries()].sort((a, b) => a[1].order - b[1].order);
  const header = [
    '/**',
    ' * GENERATED by scripts/gen-config-types.ts from lib/config/schema: do not edit by hand.',
    ' * Regenerate: npx tsc -p . && node dist/scripts/gen-config-types.js',
    ' * (test/config/generated.test.ts fails when this file is stale.)',
    ' */',
    '',
  ].join('\n');
  return `${header}${rootText}${rootText === '' ? '' : '\n'}${ordered.map(([, v]) => v.text).join('\n')}`;
}

/** Where the generated file lives in the source tree (this file runs from dist/scripts). */
export function generatedTypesPath(): string {
  return path.resolve(__dirname, '..', '..', 'lib', 'config', 'deployment-config.generated.ts');
}

if (require.main === module) {
  const file = generatedTypesPath();
  fs.writeFileSync(file, renderTypes());
  process.stdout.write(`wrote ${path.relative(process.cwd(), file)}\n`);
}
