/**
 * Source positions for deployment.toml keys.
 *
 * The `toml` package returns plain values without positions, so this small scanner reads the text once
 * more and records, for every full dotted key path, the line and column where it is written. Paths use
 * the same normal form as the loader: a quoted key containing dots is split into segments (so
 * `'http.socket.timeout' = 1` and `http.socket.timeout = 1` are the same key, spec 000, part 1), and an
 * entry of a repeatable `[[table]]` is addressed by its index: `apim.gateway.environment[0].name`.
 *
 * The scanner is forgiving: it never throws, and on text that is not valid TOML it records what it can
 * (the loader uses it to locate duplicate keys, which `toml` reports one at a time).
 */

export type Segment = string | number;

export interface KeyLocation {
  /** 1-based line of the key (or of the table header). */
  readonly line: number;
  /** 1-based column of the first character of the key. */
  readonly column: number;
  /** Last line of the key's value (multi-line arrays and strings span several lines). */
  readonly endLine: number;
  readonly kind: 'key' | 'table' | 'array-table' | 'element';
}

export interface Duplicate {
  readonly path: string;
  readonly first: KeyLocation;
  readonly again: KeyLocation;
}

export interface SourceMap {
  readonly lines: readonly string[];
  /** Every key, table header and inline array element, by canonical path. */
  readonly entries: ReadonlyMap<string, KeyLocation>;
  /** Table headers as written, in file order, with their canonical path. */
  readonly headers: readonly { readonly path: string; readonly segments: readonly Segment[]; readonly location: KeyLocation }[];
  /** Keys defined twice in the normal form (including a quoted dotted key and its nested form). */
  readonly duplicates: readonly Duplicate[];
}

/** `['a', 0, 'b']` → `a[0].b`: the one spelling of a key path in diagnostics and lookups. */
export function pathKey(segments: readonly Segment[]): string {
  let out = '';
  for (const s of segments) {
    if (typeof s === 'number') out += `[${s}]`;
    else out += out === '' ? s : `.${s}`;
  }
  return out;
}

/** The normal form of one written key: quoted keys holding dots are the nested form (spec 000, part 1). */
export function splitKey(key: string): string[] {
  return key.split('.');
}

/** The location of a path, or of its nearest written ancestor (a missing key points at its table). */
export function nearest(map: SourceMap, segments: readonly Segment[]): KeyLocation | undefined {
  for (let n = segments.length; n > 0; n--) {
    const found = map.entries.get(pathKey(segments.slice(0, n)));
    if (found !== undefined) return found;
  }
  return undefined;
}

const BARE_KEY = /[A-Za-z0-9_-]/;

/** Nesting depth (path segments) below which values' elements are located. */
const MAX_DEPTH = 64;

/** Scans TOML text for key positions. Never throws. */
export function locateKeys(text: string): SourceMap {
  const lines = text.split(/\r?\n/);
  const lineStarts: number[] = [0];
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) lineStarts.push(i + 1);

  const entries = new Map<string, KeyLocation>();
  const headers: { path: string; segments: Segment[]; location: KeyLocation }[] = [];
  const duplicates: Duplicate[] = [];
  /** Canonical path of a `[[table]]` (its parent entries resolved) → index of its current entry. */
  const arrays = new Map<string, number>();

  const posOf = (offset: number): { line: number; column: number } => {
    let lo = 0;
    let hi = lineStarts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if ((lineStarts[mid] ?? 0) <= offset) lo = mid;
      else hi = mid - 1;
    }
    return { line: lo + 1, column: offset - (lineStarts[lo] ?? 0) + 1 };
  };

  /** Paths only implied by a dotted key (`a.b.c = 1` implies `a` and `a.b`, TOML 1.0 "Keys"). */
  const implied = new Set<string>();
  const record = (segments: readonly Segment[], start: number, end: number, kind: KeyLocation['kind']): void => {
    const path = pathKey(segments);
    const p = posOf(start);
    const loc: KeyLocation = { line: p.line, column: p.column, endLine: posOf(Math.max(start, end - 1)).line, kind };
    const before = entries.get(path);
    if (before !== undefined && implied.delete(path)) {
      entries.set(path, loc);
      return;
    }
    if (before !== undefined) {
      duplicates.push({ path, first: before, again: loc });
      return;
    }
    entries.set(path, loc);
  };
  /** Records the tables a dotted key implies, at the key's position, so a diagnostic about `a` finds `a.b = 1`. */
  const recordImplied = (base: readonly Segment[], key: readonly string[], start: number): void => {
    for (let k = 1; k < key.length; k++) {
      const segments = [...base, ...key.slice(0, k)];
      const path = pathKey(segments);
      if (entries.has(path)) continue;
      const p = posOf(start);
      entries.set(path, { line: p.line, column: p.column, endLine: p.line, kind: 'key' });
      implied.add(path);
    }
  };

  let i = 0;
  const n = text.length;
  const skipSpaces = (): void => {
    while (i < n && (text[i] === ' ' || text[i] === '\t')) i++;
  };
  const skipToEol = (): void => {
    while (i < n && text[i] !== '\n') i++;
  };
  /** Whitespace, newlines and comments (inside arrays and, leniently, inline tables). */
  const skipBlank = (): void => {
    while (i < n) {
      const c = text[i];
      if (c === ' ' || c === '\t' || c === '\r' || c === '\n') i++;
      else if (c === '#') skipToEol();
      else break;
    }
  };

  /** One simple key (bare, "basic" or 'literal'); returns its text or undefined when none starts here. */
  const simpleKey = (): string | undefined => {
    const c = text[i];
    if (c === '"') {
      const start = i;
      i++;
      while (i < n && text[i] !== '"' && text[i] !== '\n') i += text[i] === '\\' ? 2 : 1;
      i = Math.min(n, i + 1);
      const raw = text.slice(start, i);
      try {
        return JSON.parse(raw) as string;
      } catch {
        return raw.slice(1, -1);
      }
    }
    if (c === "'") {
      const start = ++i;
      while (i < n && text[i] !== "'" && text[i] !== '\n') i++;
      const out = text.slice(start, i);
      i = Math.min(n, i + 1);
      return out;
    }
    const start = i;
    while (i < n && BARE_KEY.test(text[i] ?? '')) i++;
    return i > start ? text.slice(start, i) : undefined;
  };

  /** A dotted key path, split into normal-form segments. */
  const keyPath = (): string[] | undefined => {
    const out: string[] = [];
    for (;;) {
      skipSpaces();
      const k = simpleKey();
      if (k === undefined) return out.length > 0 ? out : undefined;
      out.push(...splitKey(k));
      skipSpaces();
      if (text[i] !== '.') return out;
      i++;
    }
  };

  /** Resolves a header path: parent segments that are `[[arrays]]` get their current entry index. */
  const resolve = (base: readonly Segment[], written: readonly string[]): Segment[] => {
    const out: Segment[] = [...base];
    for (const s of written) {
      out.push(s);
      const idx = arrays.get(pathKey(out));
      if (idx !== undefined) out.push(idx);
    }
    return out;
  };

  const scanString = (): void => {
    const c = text[i];
    if (text.startsWith('"""', i) || text.startsWith("'''", i)) {
      const quote = text.slice(i, i + 3);
      i += 3;
      while (i < n && !text.startsWith(quote, i)) i += quote === '"""' && text[i] === '\\' ? 2 : 1;
      i = Math.min(n, i + 3);
      // A closing delimiter may be followed by up to two more quotes that belong to the content.
      while (i < n && text[i] === c) i++;
      return;
    }
    i++;
    while (i < n && text[i] !== c && text[i] !== '\n') i += c === '"' && text[i] === '\\' ? 2 : 1;
    if (i < n && text[i] === c) i++;
  };

  /** Skips a nested value without recording its elements: linear in its length, whatever its depth. */
  const skipNested = (): void => {
    let depth = 0;
    while (i < n) {
      const c = text[i];
      if (c === '"' || c === "'") {
        scanString();
        continue;
      }
      if (c === '#') {
        skipToEol();
        continue;
      }
      if (c === '[' || c === '{') depth++;
      else if (c === ']' || c === '}') depth--;
      i++;
      if (depth <= 0) return;
    }
  };

  const scanValue = (path: Segment[]): void => {
    const c = text[i];
    if (c === '"' || c === "'") {
      scanString();
      return;
    }
    // Paths are copied per element: past MAX_DEPTH levels (far beyond any schema key) the elements are not
    // recorded, so 5,000 nested [ cost one pass instead of depth² copies (the parser refuses them anyway).
    if ((c === '[' || c === '{') && path.length > MAX_DEPTH) {
      skipNested();
      return;
    }
    if (c === '[') {
      i++;
      let index = 0;
      for (;;) {
        skipBlank();
        if (i >= n) return;
        if (text[i] === ']') {
          i++;
          return;
        }
        if (text[i] === ',') {
          i++;
          continue;
        }
        const start = i;
        const elementPath = [...path, index];
        scanValue(elementPath);
        if (i === start) i++;
        record(elementPath, start, i, 'element');
        index++;
      }
    }
    if (c === '{') {
      i++;
      for (;;) {
        skipBlank();
        if (i >= n) return;
        if (text[i] === '}') {
          i++;
          return;
        }
        if (text[i] === ',') {
          i++;
          continue;
        }
        const start = i;
        const key = keyPath();
        if (key === undefined) {
          i++;
          continue;
        }
        skipSpaces();
        if (text[i] === '=') i++;
        skipSpaces();
        const full = [...path, ...key];
        recordImplied(path, key, start);
        scanValue(full);
        record(full, start, i, 'key');
      }
    }
    while (i < n && !/[,\]}#\n]/.test(text[i] ?? '')) i++;
    // Trailing spaces belong to the line, not the value.
    while (i > 0 && (text[i - 1] === ' ' || text[i - 1] === '\t' || text[i - 1] === '\r')) i--;
  };

  let table: Segment[] = [];
  while (i < n) {
    skipBlank();
    if (i >= n) break;
    const lineStart = i;
    if (text[i] === '[') {
      const isArray = text[i + 1] === '[';
      i += isArray ? 2 : 1;
      const written = keyPath() ?? [];
      skipSpaces();
      if (text.startsWith(isArray ? ']]' : ']', i)) i += isArray ? 2 : 1;
      // Parent segments are resolved to their current [[entry]]; so is the last one of a plain [table].
      const parent = resolve([], written.slice(0, -1));
      const last = written[written.length - 1];
      if (last === undefined) {
        skipToEol();
        continue;
      }
      if (isArray) {
        const arrayPath = pathKey([...parent, last]);
        const next = (arrays.get(arrayPath) ?? -1) + 1;
        arrays.set(arrayPath, next);
        table = [...parent, last, next];
        if (next === 0) record([...parent, last], lineStart, i, 'array-table');
        record(table, lineStart, i, 'array-table');
      } else {
        table = resolve(parent, [last]);
        record(table, lineStart, i, 'table');
      }
      const p = posOf(lineStart);
      headers.push({
        path: pathKey(table),
        segments: table,
        location: { line: p.line, column: p.column, endLine: p.line, kind: isArray ? 'array-table' : 'table' },
      });
      skipToEol();
      continue;
    }
    const key = keyPath();
    if (key === undefined) {
      skipToEol();
      continue;
    }
    skipSpaces();
    if (text[i] !== '=') {
      skipToEol();
      continue;
    }
    i++;
    skipSpaces();
    const full = [...table, ...key];
    recordImplied(table, key, lineStart);
    scanValue(full);
    record(full, lineStart, i, 'key');
    skipToEol();
  }

  return { lines, entries, headers, duplicates };
}
