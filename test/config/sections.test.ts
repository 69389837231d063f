/**
 * Every section of the schema loads: an empty file gives every plain table with its defaults, and every
 * section written with (made-up, valid) values for its required keys loads with zero diagnostics and
 * its defaults filled (docs/configuration.md, : every section of the schema loads with defaults).
 */
import t from 'tap';
import { SECTIONS } from '../../lib/config/schema';
import type { KeyDef, SectionDef } from '../../lib/config/schema-types';
import { check, convert } from '../../lib/config/convert';
import { isPlaceholder } from '../../lib/config/schema-index';
import { at, brief, errors, load } from './helpers';

const REPEATABLE = new Set(SECTIONS.filter((s) => s.repeatable === true).map((s) => s.path));
const isRef = (v: unknown): boolean => typeof v === 'string' && /\$(ref|conf)\{/.test(v);

/** A valid value for a key, as TOML text. */
function sample(def: KeyDef): string {
  const allowed = def.allowed?.[0];
  if (def.format === 'list' || def.type === 'a') return JSON.stringify([allowed ?? 'x']);
  if (allowed !== undefined) return JSON.stringify(allowed);
  if (def.type === 'b' || def.boolString === true) return 'true';
  switch (def.format) {
    case 'port':
      return '0';
    case 'duration':
      return '"1s"';
    case 'bytes':
      return String(Math.max(def.min ?? 1024, 1024));
    case 'url':
      return '"https://example.com/x"';
    case 'host':
      return '"localhost"';
    case 'email':
      return '"ops@example.com"';
    default:
  }
  if (def.type === 'i' || def.type === 'f') return String(def.min !== undefined ? Math.max(def.min, 1) : 1);
  if (def.type === 'map') return '{ a = "b" }';
  return '"x"';
}

function requiredLines(section: SectionDef): string[] {
  return section.keys
    .filter((k) => k.required === true && k.default === undefined && !k.key.split('.').some(isPlaceholder))
    .map((k) => `${k.key} = ${sample(k)}`);
}

/** The TOML that writes one instance of a section, and the concrete path of that instance. */
function snippet(section: SectionDef): { text: string; path: string } {
  const lines: string[] = [];
  const segments = section.path === '' ? [] : section.path.split('.');
  let concrete = '';
  const written: string[] = [];
  segments.forEach((segment, i) => {
    written.push(segment);
    const name = isPlaceholder(segment) ? 'sample' : segment;
    concrete = concrete === '' ? name : `${concrete}.${name}`;
    const prefix = written.join('.');
    const next = segments[i + 1];
    // A repeatable table followed by a <placeholder> is written in its named form (spec 001, handlers).
    if (REPEATABLE.has(prefix) && (next === undefined || !isPlaceholder(next))) {
      const holder = SECTIONS.find((s) => s.path === prefix);
      lines.push(`[[${concrete.replace(/\[\d+\]/g, '')}]]`);
      if (holder !== undefined && holder !== section) lines.push(...requiredLines(holder));
      concrete += '[0]';
    }
  });
  const header = concrete.replace(/\[\d+\]/g, '');
  if (!REPEATABLE.has(section.path) && section.path !== '') lines.push(`[${header}]`);
  lines.push(...requiredLines(section));
  // Switch the feature on, so required keys are enforced.
  if (section.enabledBy !== undefined) {
    const own = section.path === '' ? '' : `${section.path}.`;
    const rel = section.enabledBy.slice(own.length);
    if (section.enabledBy.startsWith(own) && !lines.some((l) => l.startsWith(`${rel} =`))) {
      lines.push(`${(section.enabledBy ?? '').slice(own.length)} = true`);
    } else if (!section.enabledBy.startsWith(own)) {
      const owner = [...SECTIONS]
        .filter((s) => s.path !== '' && section.enabledBy?.startsWith(`${s.path}.`))
        .sort((a, b) => b.path.length - a.path.length)[0];
      if (owner !== undefined)
        lines.unshift(`[${owner.path}]`, `${section.enabledBy.slice(owner.path.length + 1)} = true`, ...requiredLines(owner));
    }
  }
  return { text: `${lines.join('\n')}\n`, path: concrete };
}

function expectedDefault(def: KeyDef): unknown {
  const c = convert(def, def.default);
  return c.ok ? c.value : Symbol('unconvertible default');
}

t.test('an empty file loads with zero diagnostics and every plain table filled with its defaults', async (t) => {
  const r = load('');
  t.same(brief(r), [], 'no diagnostics');
  t.ok(r.ok);
  let checked = 0;
  for (const section of SECTIONS) {
    if (section.path === '' || section.path.split('.').some(isPlaceholder)) continue;
    const inRepeatable = [...REPEATABLE].some((p) => section.path.startsWith(`${p}.`));
    if (inRepeatable) continue;
    const value = at(r.config, section.path);
    if (section.repeatable === true) {
      t.same(value, [], `[[${section.path}]] is an empty list`);
      continue;
    }
    t.type(value, 'object', `[${section.path}] exists`);
    for (const def of section.keys) {
      if (def.default === undefined || def.key.split('.').some(isPlaceholder)) continue;
      const got = at(value, def.key);
      if (isRef(def.default)) t.not(got, undefined, `${section.path}.${def.key} resolved from ${String(def.default)}`);
      else t.same(got, expectedDefault(def), `${section.path}.${def.key} default`);
      checked++;
    }
  }
  t.ok(checked > 200, `checked ${checked} defaults`);
});

t.test('every section of the schema, written with its required keys, loads with zero diagnostics', async (t) => {
  for (const section of SECTIONS) {
    const { text, path } = snippet(section);
    const r = load(text);
    t.same(brief(r), [], `[${section.path || 'top level'}] loads cleanly:\n${text}`);
    if (errors(r).length > 0) continue;
    const instance = path === '' ? r.config : at(r.config, path);
    t.type(instance, 'object', `[${section.path}] instance at ${path || '(top)'}`);
    for (const def of section.keys) {
      if (def.default === undefined || isRef(def.default) || def.key.split('.').some(isPlaceholder)) continue;
      if (text.split('\n').some((l) => l.startsWith(`${def.key} =`))) continue;
      t.same(at(instance, def.key), expectedDefault(def), `${section.path}.${def.key} default filled`);
    }
  }
});

t.test('the result is deeply frozen', async (t) => {
  const r = load('[server]\nhostname = "example.com"\n');
  t.ok(Object.isFrozen(r), 'result');
  t.ok(Object.isFrozen(r.config), 'config');
  t.ok(Object.isFrozen(r.config.server), 'a table');
  t.ok(Object.isFrozen(r.config.apim.cors.allow_methods), 'a list');
  t.ok(Object.isFrozen(r.ports), 'ports');
  t.throws(() => {
    (r.config.server as { hostname: string }).hostname = 'other';
  }, 'assignment throws in strict mode');
});

t.test("every literal default passes its own key's checks (allowed values, range, URL, host)", async (t) => {
  for (const section of SECTIONS) {
    for (const def of section.keys) {
      if (def.default === undefined || isRef(def.default)) continue;
      const c = convert(def, def.default);
      const r = c.ok ? check(def, c.value, { dir: '/' }) : c;
      t.ok(r.ok, `${section.path}.${def.key} = ${JSON.stringify(def.default)}${r.ok ? '' : `: ${r.problem}, expected ${r.expected}`}`);
    }
  }
});
