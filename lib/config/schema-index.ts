/**
 * The schema (lib/config/schema) as a trie of key paths, so the loader, `config print` and the generators
 * can answer "which KeyDef describes this concrete path?" in one walk.
 *
 * A section path and a key path are both dotted paths; they are joined into one full pattern. Pattern
 * segments are literal names, `<placeholder>`s that match any one name (spec 000, part 2:
 * `custom_keystore.<name>`, `multi_tenancy.billing.package.<package_key>`), and the entry index of a
 * repeatable `[[table]]` (spec 000, part 1). Literal names win over placeholders.
 */
import type { KeyDef, SectionDef } from './schema-types';
import type { Segment } from './locate';
import { pathKey } from './locate';

export interface KeyMatch {
  readonly def: KeyDef;
  readonly section: SectionDef;
  /** Number of concrete path segments up to the section instance (entry index included). */
  readonly sectionDepth: number;
  /** The full pattern, e.g. `apim.gateway.environment[].name`. */
  readonly pattern: string;
}

export class TrieNode {
  readonly literal = new Map<string, TrieNode>();
  placeholder: TrieNode | undefined;
  placeholderName: string | undefined;
  /** Entries of a repeatable section. */
  index: TrieNode | undefined;
  key: KeyMatch | undefined;
  /** The section whose instance root is this node. */
  section: SectionDef | undefined;
  /** Set on the node holding the entries of a repeatable section. */
  repeatable: SectionDef | undefined;
  /** Any path below is accepted (openKeys sections, map-typed keys). */
  open = false;
  constructor(readonly depth: number) {}

  hasChildren(): boolean {
    return this.literal.size > 0 || this.placeholder !== undefined || this.index !== undefined;
  }
}

export interface SchemaIndex {
  readonly root: TrieNode;
  readonly sections: readonly SectionDef[];
  /** Two schema rows describing the same full key: the later (more specific section) wins. */
  readonly overlaps: readonly string[];
  /** Key paths relative to each section (for "did you mean"). */
  readonly keysOf: ReadonlyMap<SectionDef, readonly string[]>;
}

/** A schema path segment: `<name>` is a placeholder. */
export function isPlaceholder(segment: string): boolean {
  return segment.startsWith('<') && segment.endsWith('>');
}

export function splitPattern(path: string): string[] {
  return path === '' ? [] : path.split('.');
}

export function buildIndex(sections: readonly SectionDef[]): SchemaIndex {
  const root = new TrieNode(0);
  const overlaps: string[] = [];
  const keysOf = new Map<SectionDef, string[]>();
  const repeatablePaths = new Set(sections.filter((s) => s.repeatable === true).map((s) => s.path));
  // Shallow sections first, so a key written both as `jms.start_delay` in [apim.throttling] and as
  // `start_delay` in [apim.throttling.jms] ends up described by the more specific table.
  const ordered = [...sections].sort((a, b) => splitPattern(a.path).length - splitPattern(b.path).length);

  const child = (node: TrieNode, segment: string): TrieNode => {
    if (isPlaceholder(segment)) {
      node.placeholder ??= new TrieNode(node.depth + 1);
      node.placeholderName ??= segment;
      return node.placeholder;
    }
    let next = node.literal.get(segment);
    if (next === undefined) {
      next = new TrieNode(node.depth + 1);
      node.literal.set(segment, next);
    }
    return next;
  };

  for (const section of ordered) {
    keysOf.set(
      section,
      section.keys.map((k) => k.key),
    );
    for (const variant of sectionPatterns(section.path, repeatablePaths)) {
      let node = root;
      for (const segment of variant) {
        if (segment === '[]') {
          node.index ??= new TrieNode(node.depth + 1);
          node = node.index;
        } else node = child(node, segment);
      }
      if (node.section === undefined) node.section = section;
      if (section.openKeys === true) node.open = true;
      const sectionNode = node;
      const pattern = variant.join('.').replace(/\.\[\]/g, '[]');
      for (const def of section.keys) {
        let leaf = sectionNode;
        for (const segment of splitPattern(def.key)) leaf = child(leaf, segment);
        const full = pattern === '' ? def.key : `${pattern}.${def.key}`;
        if (leaf.key !== undefined && leaf.key.section !== section)
          overlaps.push(`${full} (in [${leaf.key.section.path}] and [${section.path}])`);
        leaf.key = { def, section, sectionDepth: sectionNode.depth, pattern: full };
        if (def.type === 'map') leaf.open = true;
      }
    }
  }
  markRepeatable(root, sections, repeatablePaths);
  return { root, sections, overlaps, keysOf };
}

/**
 * The trie paths of a section: after each repeatable prefix comes the entry index (`[]`). When a
 * placeholder directly follows a repeatable prefix, the named-table form is accepted too: the spec lists
 * both `[[engine_handlers]]` and `[engine_handlers.<handler_name>]` (spec 001, Engine handlers).
 */
export function sectionPatterns(sectionPath: string, repeatablePaths: ReadonlySet<string>): string[][] {
  let variants: string[][] = [[]];
  const written: string[] = [];
  const segments = splitPattern(sectionPath);
  segments.forEach((segment, i) => {
    written.push(segment);
    variants = variants.map((v) => [...v, segment]);
    if (repeatablePaths.has(written.join('.'))) {
      const next = segments[i + 1];
      const indexed = variants.map((v) => [...v, '[]']);
      variants = next !== undefined && isPlaceholder(next) ? [...indexed, ...variants] : indexed;
    }
  });
  return variants;
}

/** Marks the nodes holding the entries of repeatable sections (for messages and generated types). */
function markRepeatable(root: TrieNode, sections: readonly SectionDef[], repeatablePaths: ReadonlySet<string>): void {
  for (const section of sections) {
    if (section.repeatable !== true) continue;
    for (const variant of sectionPatterns(section.path, repeatablePaths)) {
      let node: TrieNode | undefined = root;
      for (const segment of variant.slice(0, -1)) {
        if (node === undefined) break;
        node = segment === '[]' ? node.index : isPlaceholder(segment) ? node.placeholder : node.literal.get(segment);
      }
      if (node !== undefined) node.repeatable ??= section;
    }
  }
}

/** The nodes a concrete segment leads to from a set of nodes: literal matches first, then placeholders. */
export function step(nodes: readonly TrieNode[], segment: Segment): TrieNode[] {
  const out: TrieNode[] = [];
  const add = (n: TrieNode | undefined): void => {
    if (n !== undefined && !out.includes(n)) out.push(n);
  };
  for (const n of nodes) {
    if (typeof segment === 'number') add(n.index);
    else add(n.literal.get(segment));
  }
  if (typeof segment === 'string') for (const n of nodes) add(n.placeholder);
  return out;
}

/** The KeyDef describing a concrete path, if any. */
export function matchKey(index: SchemaIndex, segments: readonly Segment[]): KeyMatch | undefined {
  let nodes: TrieNode[] = [index.root];
  for (const s of segments) {
    nodes = step(nodes, s);
    if (nodes.length === 0) return undefined;
  }
  return nodes.find((n) => n.key !== undefined)?.key;
}

/**
 * Whether a key name marks a secret even when the schema does not say so (docs/configuration.md: every secret,
 * any password, secret, token, key_password, ..., is shown as ****). Names holding password, passphrase, secret
 * or credential are secret unless the value is a boolean (`enable_password_recovery = true` is a switch);
 * names ending in token or naming a key (`api_key`, `private_key`) only when they hold text, so
 * `allow_id_token = false` is not masked, and `token_endpoint` or `enable_token_hashing` are not secret
 * names at all. `value` undefined = unknown, treated as text.
 */
export function isSecretName(name: string, value?: unknown): boolean {
  // Settings about secrets are not secrets: PasswordJavaRegEx, PasswordHashMethod (spec 001, user store).
  if (/(regex|pattern|method|length|policy)$/i.test(name)) return false;
  if (/(password|passwd|passphrase|secret|credential)/i.test(name) || /(^|[_-])pass$/i.test(name)) return typeof value !== 'boolean';
  if (/token$/i.test(name) || /^(key|(api|private|access|signing|encryption)[_-]?key)$/i.test(name)) {
    return value === undefined || typeof value === 'string' || Array.isArray(value);
  }
  return false;
}

/** Whether a concrete path holds a secret: the schema's `secret` flag, or a secret-like key name. */
export function isSecretPath(index: SchemaIndex, segments: readonly Segment[], value?: unknown): boolean {
  if (matchKey(index, segments)?.def.secret === true) return true;
  const last = segments[segments.length - 1];
  return typeof last === 'string' && isSecretName(last, value);
}

/** Concrete instances of a section present in a document: one for a plain table, one per entry or name. */
export function sectionInstances(doc: unknown, section: SectionDef, repeatablePaths: ReadonlySet<string>): Segment[][] {
  let current: Segment[][] = [[]];
  const written: string[] = [];
  for (const segment of splitPattern(section.path)) {
    written.push(segment);
    const next: Segment[][] = [];
    for (const prefix of current) {
      const holder = get(doc, prefix);
      if (!isTable(holder)) continue;
      if (isPlaceholder(segment)) {
        for (const name of Object.keys(holder)) if (isTable(holder[name]) || Array.isArray(holder[name])) next.push([...prefix, name]);
      } else if (segment in holder) next.push([...prefix, segment]);
    }
    current = next;
    if (repeatablePaths.has(written.join('.'))) current = entriesOf(doc, current, written.length < splitPattern(section.path).length);
  }
  return current.filter((p) => isTable(get(doc, p)));
}

/**
 * After a repeatable prefix: one path per entry of an array; a table stays (the named-table form of
 * `sectionPatterns`).
 */
export function entriesOf(doc: unknown, prefixes: readonly Segment[][], tablesToo: boolean): Segment[][] {
  const out: Segment[][] = [];
  for (const prefix of prefixes) {
    const value = get(doc, prefix);
    if (Array.isArray(value)) value.forEach((_, i) => out.push([...prefix, i]));
    else if (tablesToo && isTable(value)) out.push(prefix);
  }
  return out;
}

export function isTable(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value) && !(value instanceof Date);
}

/** The value at a concrete path, or undefined. */
export function get(doc: unknown, segments: readonly Segment[]): unknown {
  let cur: unknown = doc;
  for (const s of segments) {
    if (typeof s === 'number') {
      if (!Array.isArray(cur)) return undefined;
      cur = cur[s];
    } else {
      if (!isTable(cur)) return undefined;
      if (!Object.prototype.hasOwnProperty.call(cur, s)) return undefined;
      cur = cur[s];
    }
  }
  return cur;
}

/** Human spelling of a section for messages: `[a.b]` or `[[a.b]]`. */
export function sectionLabel(section: SectionDef): string {
  return section.repeatable === true ? `[[${section.path}]]` : `[${section.path}]`;
}

export { pathKey };
