/**
 * The one TOML document reader for the files beside deployment.toml: API definitions (conf/apis/*.toml,
 * docs/apis.md), the throttling policies file (docs/throttling.md) and the custom fault templates file
 * (spec 002, part 7, rule 4). deployment.toml itself is read by load.ts with the same steps over the full
 * schema (SectionDef); these files declare their fields as FieldDef, the KeyDef of schema-types.ts
 * generalised to nested tables, arrays of tables and per-item checks.
 *
 * Steps, as for deployment.toml: read (a missing file is told apart from an unreadable one), parse with
 * `toml` (a byte order mark is dropped; a syntax error is one diagnostic with line and column), locate
 * every key (locate.ts), match the written keys against the fields (unknown ones are warnings with a
 * "did you mean", config/diagnostics.ts `closest`), fill defaults, convert and check each value. Every
 * problem is a DocumentDiagnostic naming file, line, column and the dotted field path; each file kind
 * chooses its codes (DocumentCodes), so API_*, POLICY_* and the fault templates' codes keep their names.
 */
import * as fs from 'node:fs';
import * as toml from 'toml';
import type { KeyDef } from './schema-types';
import { closest } from './diagnostics';
import { parseDuration } from './convert';
import { locateKeys, nearest, pathKey, type Segment, type SourceMap } from './locate';

export type DocumentLevel = 'error' | 'warning' | 'info';

/** One problem of a document: printed like the configuration's diagnostics (config/diagnostics.ts). */
export interface DocumentDiagnostic<C extends string = string> {
  readonly level: DocumentLevel;
  readonly code: C;
  readonly file: string;
  /** 1-based; 0 when the problem has no line (a missing field of the file's top level, an I/O error). */
  readonly line: number;
  readonly column?: number;
  /** Dotted field path, with array entries as [n]: `resources[2].methods`; '' for the whole file. */
  readonly field: string;
  readonly message: string;
  readonly expected?: string;
}

/** `file:line:column: level CODE field: message (expected ...)`. */
export function formatDocumentDiagnostic(d: DocumentDiagnostic): string {
  const where = d.line > 0 ? `${d.file}:${d.line}${d.column !== undefined ? `:${d.column}` : ''}` : d.file;
  const field = d.field === '' ? '' : ` ${d.field}`;
  const expected = d.expected !== undefined ? ` (expected ${d.expected})` : '';
  return `${where}: ${d.level} ${d.code}${field}: ${d.message}${expected}`;
}

// ---------------------------------------------------------------------------------------------------------
// The field table: KeyDef generalised
// ---------------------------------------------------------------------------------------------------------

/**
 * A field's type, in the words of docs/apis.md. The scalar ones are KeyDef's 's', 'b', 'f', 'i', 'a' and the
 * 'duration' format; 'codes' is an array of integers (a single integer is accepted), 'table' a table of
 * `fields`, 'tables' an array of tables (`[[key]]`, a repeatable SectionDef), 'endpoint' a URL string or
 * a table of `fields` holding `url`, 'map' a table of strings under any names, 'settings' a table of any
 * values under any names (a plugin's settings, read by the plugin alone).
 */
export type FieldType =
  'string' | 'boolean' | 'number' | 'integer' | 'strings' | 'codes' | 'duration' | 'table' | 'tables' | 'endpoint' | 'map' | 'settings';

export interface FieldDef extends Pick<KeyDef, 'key' | 'required' | 'allowed' | 'min' | 'max' | 'meaning'> {
  readonly type: FieldType;
  readonly default?: unknown;
  readonly example?: string;
  /** Sub-fields of a table, of each entry of an array of tables, or of an endpoint written as a table. */
  readonly fields?: readonly FieldDef[];
  /** Accepted but not enforced until the named step lands (reported as not enforced by the caller). */
  readonly notEnforced?: string;
  /** Read (checked and defaulted) only when one of these sibling fields is written; ignored otherwise. */
  readonly onlyWith?: readonly string[];
  /** 'string': the empty string is refused. */
  readonly nonEmpty?: boolean;
  /** 'codes': the check of each integer; `${n} ${problem}` when it fails. */
  readonly item?: { readonly valid: (n: number) => boolean; readonly problem: string; readonly expected: string; readonly list: string };
}

/**
 * A field table with the shape of the tables the reader makes of it (DocumentReader.read): a generated
 * interface (scripts/gen-file-types.ts writes lib/gateway/api-file.generated.ts and
 * lib/throttle/policies-file.generated.ts from the tables; test/config/file-types.test.ts fails when either
 * is stale). `shape` is never set: it carries the type only.
 */
export interface TypedFields<T> {
  readonly fields: readonly FieldDef[];
  readonly shape?: T;
}

/** `fields` with the shape its checked tables have (the generated interface of that table). */
export function typedFields<T>(fields: readonly FieldDef[]): TypedFields<T> {
  return { fields };
}

/** The codes a document kind reports its problems with. */
export interface DocumentCodes<C extends string> {
  readonly io: C;
  readonly syntax: C;
  readonly unknown: C;
  readonly type: C;
  readonly required: C;
  readonly allowed: C;
  readonly value: C;
}

// ---------------------------------------------------------------------------------------------------------
// Read and parse
// ---------------------------------------------------------------------------------------------------------

export type ReadResult =
  { readonly ok: true; readonly text: string } | { readonly ok: false; readonly missing: boolean; readonly message: string };

/** A file's text; `missing` tells a file that is not there (often fine) from one that cannot be read. */
export function readText(file: string): ReadResult {
  try {
    return { ok: true, text: fs.readFileSync(file, 'utf8') };
  } catch (err) {
    return { ok: false, missing: (err as NodeJS.ErrnoException).code === 'ENOENT', message: (err as Error).message };
  }
}

/** The text without a leading byte order mark. */
export function stripBom(text: string): string {
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/**
 * A `toml` parse error as a diagnostic. The package puts line and column on duplicate-key errors, and only
 * in `location.start` on syntax errors.
 */
export function syntaxDiagnostic<C extends string>(err: unknown, file: string, code: C, withColumn = true): DocumentDiagnostic<C> {
  const e = err as { message?: string; line?: number; column?: number; location?: { start?: { line?: number; column?: number } } };
  const line = e.line ?? e.location?.start?.line ?? 0;
  const column = e.column ?? e.location?.start?.column;
  const d: DocumentDiagnostic<C> = { level: 'error', code, file, line, field: '', message: `not valid TOML: ${e.message ?? String(err)}` };
  return column !== undefined && withColumn ? { ...d, column } : d;
}

export type ParseResult<C extends string> =
  | { readonly ok: true; readonly doc: unknown; readonly map: SourceMap }
  | { readonly ok: false; readonly diagnostic: DocumentDiagnostic<C> };

/** Parses a document's text and locates its keys; a syntax error is one diagnostic. */
export function parseDocument<C extends string>(
  text: string,
  file: string,
  codes: Pick<DocumentCodes<C>, 'syntax'>,
  withColumn = true,
): ParseResult<C> {
  const t = stripBom(text);
  try {
    const doc: unknown = toml.parse(t);
    return { ok: true, doc, map: locateKeys(t) };
  } catch (err) {
    return { ok: false, diagnostic: syntaxDiagnostic(err, file, codes.syntax, withColumn) };
  }
}

// ---------------------------------------------------------------------------------------------------------
// Match, convert, diagnose
// ---------------------------------------------------------------------------------------------------------

export function isTable(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Date);
}

/** A value's type for messages: 'an integer', 'a table', ... */
export function typeOf(v: unknown): string {
  if (Array.isArray(v)) return 'an array';
  if (v === null) return 'null';
  if (v instanceof Date) return 'a date';
  if (typeof v === 'object') return 'a table';
  if (typeof v === 'number') return Number.isInteger(v) ? 'an integer' : 'a float';
  return `a ${typeof v}`;
}

/** A problem as a document kind words it. */
export interface Worded<C extends string> {
  readonly code: C;
  readonly message: string;
  readonly expected?: string;
}

/**
 * How a document kind words the problems the reader finds, where its documented messages differ from the
 * reader's own (docs/throttling.md for the policies file). Each hook is optional.
 */
export interface DocumentWording<C extends string> {
  /** A missing required field; `atTable`: reported at the table that lacks it, not at the field's path. */
  readonly required?: (key: string) => { readonly message: string; readonly atTable?: boolean };
  /** A value of the wrong type, an empty `nonEmpty` string, or an integer out of its range. */
  readonly wrongValue?: (def: FieldDef, raw: unknown, expected: string) => Worded<C>;
  /** A value outside `allowed`. */
  readonly notAllowed?: (value: unknown, allowed: readonly string[], near: string | undefined) => Worded<C>;
}

export interface ReaderOptions<C extends string> {
  /** Diagnostics carry the key's column (false: the line only, as the policies and templates files report). */
  readonly columns?: boolean;
  readonly wording?: DocumentWording<C>;
}

export interface UnknownKeyOptions {
  /** What an unknown key is called in the message: 'field' unless given. */
  readonly noun?: string;
  /** How the suggestion is written: `"name"` unless given. */
  readonly suggest?: (near: string) => string;
  /** Without a suggestion, the known names as the diagnostic's `expected`. */
  readonly listKnown?: boolean;
}

/** One document being checked: its diagnostics, located in its source map. */
export class DocumentReader<C extends string> {
  readonly diagnostics: DocumentDiagnostic<C>[] = [];
  errors = 0;

  constructor(
    readonly file: string,
    readonly map: SourceMap | undefined,
    readonly codes: DocumentCodes<C>,
    readonly options: ReaderOptions<C> = {},
  ) {}

  /** Whether a path is written in the file. */
  written(segments: readonly Segment[]): boolean {
    return this.map?.entries.has(pathKey(segments)) === true;
  }

  /** Line of a path, or of its nearest written ancestor; 0 when nothing of it is written. */
  line(segments: readonly Segment[]): number {
    return this.map !== undefined ? (nearest(this.map, segments)?.line ?? 0) : 0;
  }

  report(level: DocumentLevel, code: C, segments: readonly Segment[], message: string, expected?: string): void {
    const at = this.map !== undefined ? nearest(this.map, segments) : undefined;
    const d: DocumentDiagnostic<C> = { level, code, file: this.file, line: at?.line ?? 0, field: pathKey(segments), message };
    const withCol = at !== undefined && this.options.columns !== false ? { ...d, column: at.column } : d;
    this.diagnostics.push(expected !== undefined ? { ...withCol, expected } : withCol);
    if (level === 'error') this.errors++;
  }

  /** Warns about every key of `raw` not in `known`, with the closest known name. */
  unknownKeys(known: readonly string[], raw: Record<string, unknown>, seg: readonly Segment[], opts: UnknownKeyOptions = {}): void {
    for (const key of Object.keys(raw)) {
      if (known.includes(key)) continue;
      const near = closest(key, known);
      const suggest = opts.suggest ?? ((n: string) => `"${n}"`);
      const expected = near === undefined && opts.listKnown === true ? `one of ${known.join(', ')}` : undefined;
      this.report(
        'warning',
        this.codes.unknown,
        [...seg, key],
        `unknown ${opts.noun ?? 'field'}${near !== undefined ? `; did you mean ${suggest(near)}?` : ''}`,
        expected,
      );
    }
  }

  /** Checks a table against its fields: unknown fields warn, required ones must be there, defaults filled. */
  checkTable(
    fields: readonly FieldDef[],
    raw: Record<string, unknown>,
    seg: readonly Segment[],
    fromString = false,
  ): Record<string, unknown> | undefined {
    const out: Record<string, unknown> = {};
    let ok = true;
    this.unknownKeys(
      fields.map((f) => f.key),
      raw,
      seg,
      { listKnown: true },
    );
    for (const def of fields) {
      if (def.onlyWith !== undefined && !def.onlyWith.some((k) => raw[k] !== undefined)) continue;
      const v = raw[def.key];
      const at = fromString ? [...seg] : [...seg, def.key];
      if (v === undefined) {
        if (def.required === true) {
          const w = this.options.wording?.required?.(def.key);
          this.report(
            'error',
            this.codes.required,
            w?.atTable === true ? [...seg] : at,
            w?.message ?? `${def.key} is required`,
            def.example,
          );
          ok = false;
        } else if (def.default !== undefined) out[def.key] = def.default;
        continue;
      }
      const checked = this.checkValue(def, v, at);
      if (checked === undefined) ok = false;
      else out[def.key] = checked;
    }
    return ok ? out : undefined;
  }

  /**
   * checkTable with the checked table typed: the shape of `table` is the generated interface of its fields,
   * which holds what checkTable makes of them (present when required or defaulted, values converted).
   */
  read<T>(table: TypedFields<T>, raw: Record<string, unknown>, seg: readonly Segment[]): T | undefined {
    return this.checkTable(table.fields, raw, seg) as T | undefined;
  }

  private worded(seg: readonly Segment[], w: Worded<C>): undefined {
    this.report('error', w.code, seg, w.message, w.expected);
    return undefined;
  }

  private typeError(def: FieldDef, seg: readonly Segment[], raw: unknown, expected: string): undefined {
    const hook = this.options.wording?.wrongValue;
    if (hook !== undefined) return this.worded(seg, hook(def, raw, expected));
    this.report('error', this.codes.type, seg, `expected ${expected}, got ${typeOf(raw)}`, expected);
    return undefined;
  }

  private notAllowed(seg: readonly Segment[], value: string, allowed: readonly string[]): void {
    const near = closest(value, allowed);
    const hook = this.options.wording?.notAllowed;
    if (hook !== undefined) {
      this.worded(seg, hook(value, allowed, near));
      return;
    }
    this.report(
      'error',
      this.codes.allowed,
      seg,
      `${JSON.stringify(value)} is not allowed${near !== undefined ? `; did you mean "${near}"?` : ''}`,
      `one of ${allowed.join(', ')}`,
    );
  }

  /** Checks one value against its field; returns the converted value, or undefined after reporting. */
  checkValue(def: FieldDef, raw: unknown, seg: readonly Segment[]): unknown {
    switch (def.type) {
      case 'string':
        if (typeof raw !== 'string') return this.typeError(def, seg, raw, 'a string');
        if (def.nonEmpty === true && raw === '') return this.typeError(def, seg, raw, 'a non-empty string');
        if (def.allowed !== undefined && !def.allowed.includes(raw)) {
          this.notAllowed(seg, raw, def.allowed);
          return undefined;
        }
        return raw;
      case 'boolean':
        if (typeof raw !== 'boolean') return this.typeError(def, seg, raw, 'true or false');
        return raw;
      case 'number':
        if (typeof raw !== 'number' || !Number.isFinite(raw)) return this.typeError(def, seg, raw, 'a number');
        if (def.min !== undefined && raw < def.min) {
          this.report('error', this.codes.value, seg, `${raw} is below the minimum`, `a number >= ${def.min}`);
          return undefined;
        }
        return raw;
      case 'integer':
        if (typeof raw !== 'number' || !Number.isInteger(raw)) return this.typeError(def, seg, raw, 'an integer');
        if ((def.min !== undefined && raw < def.min) || (def.max !== undefined && raw > def.max)) {
          if (this.options.wording?.wrongValue !== undefined) return this.typeError(def, seg, raw, 'an integer in range');
          const range =
            def.min !== undefined && def.max !== undefined
              ? `${def.min}..${def.max}`
              : def.min !== undefined
                ? `>= ${def.min}`
                : `<= ${String(def.max)}`;
          this.report('error', this.codes.value, seg, `${raw} is out of range`, `an integer ${range}`);
          return undefined;
        }
        return raw;
      case 'duration': {
        const ms = parseDuration(raw, 'ms');
        if (ms === undefined || ms < (def.min ?? 0)) {
          this.report(
            'error',
            this.codes.value,
            seg,
            `${JSON.stringify(raw)} is not a duration`,
            `milliseconds >= ${def.min ?? 0}, or a string such as "30s"`,
          );
          return undefined;
        }
        return ms;
      }
      case 'strings': {
        const list =
          typeof raw === 'string'
            ? raw
                .split(',')
                .map((s) => s.trim())
                .filter((s) => s !== '')
            : raw;
        if (!Array.isArray(list) || !list.every((s) => typeof s === 'string')) return this.typeError(def, seg, raw, 'an array of strings');
        const allowed = def.allowed;
        if (allowed !== undefined) {
          let ok = true;
          list.forEach((s: string, i) => {
            if (!allowed.includes(s)) {
              this.notAllowed([...seg, i], s, allowed);
              ok = false;
            }
          });
          if (!ok) return undefined;
        }
        return Object.freeze([...new Set(list as string[])]);
      }
      case 'codes': {
        const list = typeof raw === 'number' ? [raw] : raw;
        if (!Array.isArray(list) || !list.every((n) => typeof n === 'number' && Number.isInteger(n)))
          return this.typeError(def, seg, raw, def.item?.list ?? 'an array of integers');
        let ok = true;
        const item = def.item;
        if (item !== undefined) {
          list.forEach((n: number, i) => {
            if (!item.valid(n)) {
              this.report('error', this.codes.value, [...seg, i], `${n} ${item.problem}`, item.expected);
              ok = false;
            }
          });
        }
        return ok ? Object.freeze([...new Set(list as number[])]) : undefined;
      }
      case 'table':
        if (!isTable(raw)) return this.typeError(def, seg, raw, 'a table');
        return this.checkTable(def.fields ?? [], raw, seg);
      case 'map': {
        // A table of string values under names of the writer's choice (e.g. extra form parameters).
        if (!isTable(raw) || !Object.values(raw).every((v) => typeof v === 'string'))
          return this.typeError(def, seg, raw, 'a table of strings');
        return Object.freeze({ ...raw });
      }
      case 'settings':
        if (!isTable(raw)) return this.typeError(def, seg, raw, 'a table');
        return Object.freeze({ ...raw });
      case 'tables': {
        if (!Array.isArray(raw) || !raw.every(isTable)) return this.typeError(def, seg, raw, `an array of tables, written [[${def.key}]]`);
        const out: Record<string, unknown>[] = [];
        let ok = true;
        raw.forEach((entry, i) => {
          const v = this.checkTable(def.fields ?? [], entry as Record<string, unknown>, [...seg, i]);
          if (v === undefined) ok = false;
          else out.push(v);
        });
        return ok ? out : undefined;
      }
      case 'endpoint': {
        if (typeof raw === 'string') return this.checkTable(def.fields ?? [], { url: raw }, seg, true);
        if (!isTable(raw)) return this.typeError(def, seg, raw, 'a URL string, or a table with url');
        return this.checkTable(def.fields ?? [], raw, seg);
      }
    }
  }
}
