/**
 * Writes a changed document by editing the TOML text it was read from (docs/portal.md, "What a save
 * keeps"): comments, blank lines, key order and quoting stay where the author put them. The new document
 * is compared with the old one key by key:
 *
 * - a changed value is replaced on its own line(s), after the key as written; a comment at the end of
 *   that line stays; comment lines inside a multi-line value move above the key;
 * - a new key goes after the last key of its table (a table the text does not have yet becomes a new
 *   `[section]`, after the sections of its parent); a removed key's lines go, with the comment on them;
 * - an array of tables (`[[resources]]`) is matched entry by entry through an identity (a resource's
 *   path, a scope's name): a kept entry is edited in place with its comments, entries are written in
 *   the new order, a new entry is a new `[[...]]` block, and a removed one goes with the comment lines
 *   directly above its header;
 * - a value written inline (`cors = { enable = true }`) is rewritten inline as a whole.
 *
 * The result is parsed again: unless it is exactly the new document, `editToml` answers undefined and
 * the caller writes the document afresh (lib/config/print.ts toTomlText).
 */
import { isTable, parseDocument } from '../config/document';
import { locateKeys, pathKey, type KeyLocation, type Segment, type SourceMap } from '../config/locate';
import { toTomlText, tomlKey, tomlValue } from '../config/print';

/** An entry's identity in an array of tables, for matching old entries to new ones; undefined: by index. */
export type Identity = (arrayPath: readonly Segment[], entry: Record<string, unknown>) => string | undefined;

/**
 * Pairs each new entry with an old one of the same identity (the first not yet taken, so repeated
 * identities pair in order), or with the old entry at its index when `key` gives none: new index →
 * old index or undefined.
 */
export function pairEntries<T>(old: readonly T[], next: readonly T[], key: (e: T) => string | undefined): (number | undefined)[] {
  const taken = new Set<number>();
  return next.map((e, j) => {
    const k = key(e);
    const i = k === undefined ? (j < old.length ? j : -1) : old.findIndex((o, n) => !taken.has(n) && key(o) === k);
    if (i < 0 || taken.has(i)) return undefined;
    taken.add(i);
    return i;
  });
}

const isEntryList = (v: unknown): v is Record<string, unknown>[] => Array.isArray(v) && v.length > 0 && v.every(isTable);

/** Deep equality of parsed TOML values, ignoring key order and prototypes. */
export function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a instanceof Date && b instanceof Date) return a.getTime() === b.getTime();
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => sameValue(x, b[i]));
  if (isTable(a) && isTable(b)) {
    const ka = Object.keys(a).filter((k) => a[k] !== undefined);
    const kb = Object.keys(b).filter((k) => b[k] !== undefined);
    return ka.length === kb.length && ka.every((k) => sameValue(a[k], b[k]));
  }
  return false;
}

interface Block {
  /** The table's path with array entries resolved (`resources[2]`); [] for the lines before the first table. */
  readonly path: readonly Segment[];
  /** 0-based first line: the comment lines directly above the header belong to its block. */
  readonly start: number;
  /** 0-based header line; -1 for the first block. */
  readonly header: number;
  /** 0-based line after the block. */
  readonly end: number;
  deleted: boolean;
  /** Key lines added to this table, after its last key. */
  readonly added: string[];
  /** New sections written before and after this block. */
  readonly before: string[][];
  readonly after: string[][];
}

const startsWith = (p: readonly Segment[], prefix: readonly Segment[]): boolean =>
  prefix.length <= p.length && prefix.every((s, i) => p[i] === s);
const isComment = (line: string): boolean => /^\s*#/.test(line);
const isBlank = (line: string): boolean => /^\s*$/.test(line);

/** Index of the `=` that ends the key starting at `col` of `line` (quoted keys may hold `=`); -1 if none. */
function equalsAt(line: string, col: number): number {
  for (let i = col; i < line.length; i++) {
    const c = line[i];
    if (c === '"') {
      i++;
      while (i < line.length && line[i] !== '"') i += line[i] === '\\' ? 2 : 1;
    } else if (c === "'") {
      i = line.indexOf("'", i + 1);
      if (i < 0) return -1;
    } else if (c === '=') return i;
  }
  return -1;
}

/** The comments of a value's text outside its strings: [line offset within the text, comment text]. */
function commentsOf(text: string): [number, string][] {
  const out: [number, string][] = [];
  let line = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '\n') line++;
    else if (c === '#') {
      const end = text.indexOf('\n', i);
      out.push([line, text.slice(i, end < 0 ? text.length : end).trimEnd()]);
      i = end < 0 ? text.length : end - 1;
    } else if (c === '"' || c === "'") {
      const triple = text.startsWith(c.repeat(3), i);
      const close = triple ? c.repeat(3) : c;
      i += close.length;
      while (i < text.length && !text.startsWith(close, i)) {
        if (text[i] === '\n') line++;
        i += c === '"' && text[i] === '\\' ? 2 : 1;
      }
      i += close.length - 1;
    }
  }
  return out;
}

/** Section text for a new table or array entry at `path` (string segments only). */
function sectionText(path: readonly Segment[], value: unknown): string[] {
  // eslint-disable-next-line no-restricted-syntax -- caught in editToml: the file is then written whole instead of edited in place
  if (path.some((s) => typeof s === 'number')) throw new Error('a new section below an array entry');
  let wrapped: unknown = value;
  for (let i = path.length - 1; i >= 0; i--) wrapped = { [path[i] as string]: wrapped };
  const text = toTomlText(wrapped).replace(/\n$/, '');
  // eslint-disable-next-line no-restricted-syntax -- caught in editToml: the file is then written whole instead of edited in place
  if (text === '') throw new Error('an empty table');
  return text.split('\n');
}

class Editor {
  private readonly lines: string[];
  private readonly map: SourceMap;
  private readonly blocks: Block[] = [];
  private readonly byPath = new Map<string, Block>();
  /** Line index → the lines that replace it ([] deletes it). */
  private readonly edits = new Map<number, string[]>();
  /** New sections written after everything. */
  private readonly atEnd: string[][] = [];
  /** Arrays of tables written in a new order: array path → its entries (old index, or new lines). */
  private readonly arranged = new Map<string, { readonly path: readonly Segment[]; readonly units: (number | string[])[] }>();
  /** New `[table]` sections made to hold keys of a table the text has no header for. */
  private readonly madeSections = new Map<string, string[]>();

  constructor(
    text: string,
    private readonly identity: Identity,
  ) {
    this.lines = text.split(/\r?\n/);
    this.map = locateKeys(text);
    const heads = this.map.headers;
    let prevEnd = 0;
    const starts = heads.map((h) => {
      let s = h.location.line - 1;
      while (s > 0 && isComment(this.lines[s - 1] as string)) s--;
      return s;
    });
    const first: Block = {
      path: [],
      start: 0,
      header: -1,
      end: heads.length > 0 ? (starts[0] as number) : this.lines.length,
      deleted: false,
      added: [],
      before: [],
      after: [],
    };
    this.blocks.push(first);
    this.byPath.set('', first);
    prevEnd = first.end;
    heads.forEach((h, k) => {
      const start = Math.max(prevEnd, starts[k] as number);
      const end = k + 1 < heads.length ? Math.max(start + 1, starts[k + 1] as number) : this.lines.length;
      const b: Block = { path: h.segments, start, header: h.location.line - 1, end, deleted: false, added: [], before: [], after: [] };
      this.blocks.push(b);
      this.byPath.set(h.path, b);
      prevEnd = end;
    });
  }

  private entry(path: readonly Segment[]): KeyLocation | undefined {
    return this.map.entries.get(pathKey(path));
  }

  /** How a path is written: the root, a `[section]`, `[[entries]]`, a key (value inline), implied by dotted keys, or only by its sub-sections. */
  private writtenAs(path: readonly Segment[]): 'root' | 'section' | 'array' | 'key' | 'dotted' | 'implicit' {
    if (path.length === 0) return 'root';
    if (this.byPath.has(pathKey(path))) return 'section';
    const e = this.entry(path);
    if (e === undefined) return 'implicit';
    if (e.kind === 'array-table') return 'array';
    const prefix = `${pathKey(path)}.`;
    for (const [k, loc] of this.map.entries) if (k.startsWith(prefix) && loc.line === e.line && loc.column === e.column) return 'dotted';
    return 'key';
  }

  /** The block holding the key at `loc`. */
  private blockOf(loc: KeyLocation): Block {
    const line = loc.line - 1;
    return this.blocks.find((b) => b.start <= line && line < b.end) ?? (this.blocks[0] as Block);
  }

  walk(path: readonly Segment[], o: unknown, n: unknown): void {
    if (sameValue(o, n)) return;
    if (o === undefined) return this.add(path, n);
    if (n === undefined) return this.remove(path, o);
    const w = this.writtenAs(path);
    if (w === 'key') {
      // A scalar that becomes a table is written as a section; an inline table stays inline.
      if (isTable(n) && !isTable(o)) {
        this.remove(path, o);
        return this.add(path, n);
      }
      return this.replace(path, n);
    }
    if (w === 'array' && isEntryList(o) && isEntryList(n)) return this.arrange(path, o, n);
    if (w !== 'array' && isTable(o) && isTable(n)) {
      for (const k of new Set([...Object.keys(o), ...Object.keys(n)])) this.walk([...path, k], o[k], n[k]);
      return;
    }
    this.remove(path, o);
    this.add(path, n);
  }

  private replace(path: readonly Segment[], value: unknown): void {
    const loc = this.entry(path) as KeyLocation;
    const first = this.lines[loc.line - 1] as string;
    const eq = equalsAt(first, loc.column - 1);
    // eslint-disable-next-line no-restricted-syntax -- caught in editToml: the file is then written whole instead of edited in place
    if (eq < 0) throw new Error(`no = after ${pathKey(path)}`);
    const span = [first.slice(eq + 1), ...this.lines.slice(loc.line, loc.endLine)].join('\n');
    const comments = commentsOf(span);
    const last = loc.endLine - loc.line;
    const trailing = comments.find(([l]) => l === last)?.[1];
    const indent = /^\s*/.exec(first)?.[0] ?? '';
    const gap = /^\s*/.exec(first.slice(eq + 1))?.[0] ?? ' ';
    const out = [
      ...comments.filter(([l]) => l !== last).map(([, c]) => `${indent}${c}`),
      `${first.slice(0, eq + 1)}${gap === '' ? ' ' : gap}${tomlValue(value)}${trailing !== undefined ? ` ${trailing}` : ''}`,
    ];
    this.edits.set(loc.line - 1, out);
    for (let l = loc.line; l < loc.endLine; l++) this.edits.set(l, []);
  }

  private remove(path: readonly Segment[], o: unknown): void {
    const w = this.writtenAs(path);
    if (w === 'key') {
      const loc = this.entry(path) as KeyLocation;
      for (let l = loc.line - 1; l < loc.endLine; l++) this.edits.set(l, []);
    } else if (w === 'section' || w === 'array') {
      for (const b of this.blocks) if (startsWith(b.path, path)) b.deleted = true;
    } else if (isTable(o)) {
      for (const [k, v] of Object.entries(o)) this.remove([...path, k], v);
    }
  }

  private add(path: readonly Segment[], n: unknown): void {
    const parent = path.slice(0, -1);
    const key = path[path.length - 1] as string;
    if (isTable(n) || isEntryList(n)) {
      const text = sectionText(path, n);
      // After the last section of the parent table; a top-level table goes last.
      const owner = parent.length === 0 ? undefined : [...this.blocks].reverse().find((b) => b.header >= 0 && startsWith(b.path, parent));
      if (owner === undefined) this.atEnd.push(text);
      else owner.after.push(text);
      return;
    }
    const line = `${tomlKey(key)} = ${tomlValue(n)}`;
    const w = this.writtenAs(parent);
    if (w === 'root' || w === 'section') {
      (this.byPath.get(pathKey(parent)) as Block).added.push(line);
      return;
    }
    if (w === 'dotted') {
      // A table written as dotted keys (`endpoints.production = ...`) gets its new key the same way.
      const block = this.blockOf(this.entry(parent) as KeyLocation);
      block.added.push(
        `${path
          .slice(block.path.length)
          .map((s) => tomlKey(String(s)))
          .join('.')} = ${tomlValue(n)}`,
      );
      return;
    }
    if (w === 'implicit') {
      // Only sub-sections define the table: a `[parent]` section before the first of them.
      const k = pathKey(parent);
      const made = this.madeSections.get(k);
      if (made !== undefined) {
        made.push(line);
        return;
      }
      // eslint-disable-next-line no-restricted-syntax -- caught in editToml: the file is then written whole instead of edited in place
      if (parent.some((s) => typeof s === 'number')) throw new Error('a new section below an array entry');
      const section = [`[${parent.map((s) => tomlKey(String(s))).join('.')}]`, line];
      this.madeSections.set(k, section);
      const first = this.blocks.find((b) => b.header >= 0 && startsWith(b.path, parent));
      if (first === undefined) this.atEnd.push(section);
      else first.before.push(section);
      return;
    }
    // eslint-disable-next-line no-restricted-syntax -- caught in editToml: the file is then written whole instead of edited in place
    throw new Error(`cannot add ${pathKey(path)} to a table written inline`);
  }

  private arrange(path: readonly Segment[], o: Record<string, unknown>[], n: Record<string, unknown>[]): void {
    const pairs = pairEntries(o, n, (e) => this.identity(path, e));
    pairs.forEach((i, j) => {
      if (i !== undefined) this.walk([...path, i], o[i], n[j]);
    });
    const inPlace = n.length === o.length && pairs.every((i, j) => i === j);
    if (inPlace) return;
    const units = pairs.map((i, j) => (i !== undefined ? i : sectionText(path, [n[j]])));
    this.arranged.set(pathKey(path), { path, units });
  }

  /** The array whose entry a block belongs to, if that array is written in a new order. */
  private arrangedOf(b: Block): { key: string; index: number } | undefined {
    for (const [key, a] of this.arranged) {
      const i = b.path[a.path.length];
      if (startsWith(b.path, a.path) && typeof i === 'number') return { key, index: i };
    }
    return undefined;
  }

  render(): string[] {
    const out: string[] = [];
    let blankNext = false;
    const push = (line: string): void => {
      if (blankNext && !isBlank(line) && out.length > 0 && !isBlank(out[out.length - 1] as string)) out.push('');
      blankNext = false;
      out.push(line);
    };
    const section = (text: readonly string[]): void => {
      if (out.length > 0 && !isBlank(out[out.length - 1] as string)) out.push('');
      blankNext = false;
      for (const l of text) out.push(l);
      blankNext = true;
    };
    const emit = (b: Block): void => {
      if (b.deleted) return;
      for (const s of b.before) section(s);
      const own: string[] = [];
      let lastKey = -1;
      for (let l = b.start; l < b.end; l++) {
        const edit = this.edits.get(l);
        const written = edit ?? [this.lines[l] as string];
        for (const w of written) {
          own.push(w);
          if (!isBlank(w) && (!isComment(w) || l === b.header)) lastKey = own.length - 1;
        }
      }
      // A [table] whose every key went (a URL string that became its own [endpoints.production]) goes too.
      const hadKeys = b.header >= 0 && this.lines.slice(b.header + 1, b.end).some((l) => !isBlank(l) && !isComment(l));
      if (
        hadKeys &&
        lastKey === b.header - b.start &&
        b.added.length === 0 &&
        typeof b.path[b.path.length - 1] === 'string' &&
        own.every((l, k) => k === lastKey || isBlank(l))
      ) {
        for (const s of b.after) section(s);
        return;
      }
      if (b.added.length > 0) {
        // The first block without a key: after its leading comment lines (a file's header comment).
        let at = lastKey + 1;
        if (lastKey < 0 && b.header < 0) while (at < own.length && isComment(own[at] as string)) at++;
        own.splice(at, 0, ...b.added);
      }
      for (const l of own) push(l);
      for (const s of b.after) section(s);
    };
    const done = new Set<string>();
    for (const b of this.blocks) {
      const a = this.arrangedOf(b);
      if (a === undefined) {
        emit(b);
        continue;
      }
      if (done.has(a.key)) continue;
      done.add(a.key);
      const arr = this.arranged.get(a.key) as { path: readonly Segment[]; units: (number | string[])[] };
      for (const u of arr.units) {
        if (Array.isArray(u)) section(u);
        else {
          const entry = [...arr.path, u];
          // Entries in a new order are set apart by a blank line, as new sections are.
          if (out.length > 0 && !isBlank(out[out.length - 1] as string)) out.push('');
          blankNext = false;
          for (const p of this.blocks) if (startsWith(p.path, entry)) emit(p);
          blankNext = true;
        }
      }
    }
    for (const s of this.atEnd) section(s);
    return out;
  }
}

/**
 * `text` (the TOML `old` was parsed from) changed into `next`, its comments and layout kept; undefined
 * when the edited text would not read back as exactly `next` (the caller then writes `next` afresh).
 */
export function editToml(
  text: string,
  old: Record<string, unknown>,
  next: Record<string, unknown>,
  identity: Identity = () => undefined,
): string | undefined {
  const bom = text.charCodeAt(0) === 0xfeff ? '\ufeff' : '';
  const body = bom === '' ? text : text.slice(1);
  const eol = body.includes('\r\n') ? '\r\n' : '\n';
  const finalEol = /\r?\n$/.test(body);
  let lines: string[];
  try {
    const ed = new Editor(finalEol ? body.replace(/\r?\n$/, '') : body, identity);
    ed.walk([], old, next);
    lines = ed.render();
  } catch {
    return undefined;
  }
  const out = `${lines.join(eol)}${finalEol || lines.length > 0 ? eol : ''}`;
  const back = parseDocument(out, '', { syntax: 'SYNTAX' });
  if (!back.ok || !sameValue(back.doc, next)) return undefined;
  return `${bom}${out}`;
}
