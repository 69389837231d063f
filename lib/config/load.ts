/**
 * Loading deployment.toml: the only place that parses TOML and reads environment variables.
 *
 * Steps, in order (spec 000, part 1 gives the conventions; docs/configuration.md the rules):
 *  1. parse with `toml`; syntax errors and duplicate keys are reported with line and column, the offending
 *     line is set aside and parsing goes on, so one run lists every problem;
 *  2. normalise quoted dotted keys (`'http.socket.timeout' = 1`) to the nested form;
 *  3. match every key against the schema (placeholders match any name, `[[tables]]` are arrays); unknown
 *     tables and keys are warnings with a "did you mean", errors under `strict`;
 *  4. fill defaults;
 *  5. resolve `$env{NAME}`, `$sys{name}`, `$ref{a.b}` and `$conf{a.b}`; `${name}` runtime tokens stay;
 *  6. convert and validate each key (type, allowed values, range, port, URL);
 *  7. check required keys of tables that are written, run, and switched on;
 *  8. compute the effective ports (server.offset added), then freeze everything.
 * The file is read with config/document.ts (readText, stripBom), the reader the TOML files beside
 * deployment.toml share (API files, the policies file, the fault templates file).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as toml from 'toml';
import type { KeyDef, SectionDef } from './schema-types';
import { SECTIONS } from './schema';
import {
  ConfigInvalidError,
  type Diagnostic,
  type DiagnosticCode,
  type DiagnosticLevel,
  MASK,
  closest,
  formatDiagnostic,
  shown,
  sortDiagnostics,
  typeName,
} from './diagnostics';
import { type KeyLocation, type Segment, type SourceMap, locateKeys, nearest, pathKey, splitKey } from './locate';
import {
  type KeyMatch,
  type SchemaIndex,
  type TrieNode,
  buildIndex,
  entriesOf,
  get,
  isPlaceholder,
  isSecretName,
  isTable,
  sectionLabel,
  splitPattern,
  step,
} from './schema-index';
import { check, convert, describe } from './convert';
import { type StatusCounts, inactiveReason, keyStatus } from './key-status';
import { readText, stripBom } from './document';
import { type EffectivePorts, effectivePorts } from './ports';
import type { DeploymentConfig } from './deployment-config.generated';
import { decisionHubUrl } from './hub';
import { fillStoreDefaults, invalidCertificateFiles, missingStoreFiles, type StoreFill } from './stores';
import { REFERENCE_DEFAULT_STORES, securityDir } from './security-dir';

export interface LoadOptions {
  /** Path of deployment.toml; default `conf/deployment.toml` under the working directory. */
  readonly file?: string;
  /** The file's text (tests, embedding); `file` then only names it in diagnostics and sets `dir`. */
  readonly text?: string;
  /** Unknown tables and keys are errors instead of warnings. */
  readonly strict?: boolean;
  /** Source of `$env{NAME}`; default `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Source of `$sys{name}`: process-level properties, given on the command line as `--sys name=value`. */
  readonly sys?: Readonly<Record<string, string>>;
  /** The schema to load against; default the project's SECTIONS (tests pass small ones). */
  readonly sections?: readonly SectionDef[];
  /**
   * Also refuse what a starting node would refuse: store files it opens and cannot find
   * (CONFIG_FILE_MISSING: the transports' key and trust stores, the SSL profile file) and a
   * [database.apim_db] type it has no driver for (CONFIG_UNSUPPORTED). `config check`, `start` and
   * `apis list` set it (docs/configuration.md); off by default, so a file can be checked away from its stores.
   */
  readonly startChecks?: boolean;
}

export interface LoadResult {
  /** No error-level diagnostic. */
  readonly ok: boolean;
  /**
   * Deeply frozen; defaults filled; references resolved; values converted to their key's type. When `ok`
   * is false, reading it (or `ports`) throws ConfigInvalidError (code CONFIG_INVALID): check `ok` first.
   */
  readonly config: DeploymentConfig;
  readonly ports: EffectivePorts;
  /** In file order; errors and warnings. */
  readonly diagnostics: readonly Diagnostic[];
  /** Tables written in the file for features throughway accepts but does not run (`runs: false`). */
  readonly inactive: readonly string[];
  /** Keys written in the file that are accepted but not acted on (KeyDef.inactive holds the reason). */
  readonly inactiveKeys: readonly string[];
  /**
   * Every key the file writes that throughway does not act on (a key marked inactive, or any key of a
   * section it does not run), with its line, in file order: `config check` names each (docs/migrating.md).
   */
  readonly notActedOn: readonly WrittenKey[];
  /** How many of the keys the file writes act, act differently, are not acted on (lib/config/key-status.ts). */
  readonly writtenStatus: StatusCounts;
  /** Every key path the file writes (`apim.key_manager.service_url`), as opposed to a default. */
  readonly written: ReadonlySet<string>;
  /**
   * Every table the file writes: its header, or a key of it (`security_audit`, `apim.gateway.environment[0]`),
   * even with no key in it; a section whose feature its presence turns on reads this ([security_audit]).
   */
  readonly tables: ReadonlySet<string>;
  /** Concrete key paths holding secrets (schema `secret`, secret-like names, values built from secrets). */
  readonly secrets: readonly string[];
  /** Absolute path of the file ('' when loaded from text without a file name). */
  readonly file: string;
  /** Directory other conf files are read from (the config file's directory). */
  readonly dir: string;
}

/** A key written in the file, where it is written. */
export interface WrittenKey {
  /** Full dotted key path, entries as `[n]` (e.g. `apim.gateway.environment[0].name`). */
  readonly key: string;
  /** The section it belongs to, and whether throughway runs that section. */
  readonly section: string;
  readonly sectionRuns: boolean;
  /** Why throughway does not act on it (the schema's one line: lib/config/key-status.ts `inactiveReason`). */
  readonly reason: string;
  readonly file: string;
  /** 1-based line and column of the key. */
  readonly line: number;
  readonly column: number;
}

interface Leaf {
  readonly segments: Segment[];
  readonly match: KeyMatch;
  readonly fromDefault: boolean;
}

const indexCache = new WeakMap<readonly SectionDef[], SchemaIndex>();

/** The schema index for a set of sections (built once per SECTIONS array). */
export function schemaIndex(sections: readonly SectionDef[] = SECTIONS): SchemaIndex {
  let index = indexCache.get(sections);
  if (index === undefined) {
    index = buildIndex(sections);
    indexCache.set(sections, index);
  }
  return index;
}

/** Defines an own property (safe for names such as `__proto__` that a file may contain). */
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

function setAt(doc: Record<string, unknown>, segments: readonly Segment[], value: unknown): void {
  let cur: unknown = doc;
  for (let i = 0; i < segments.length - 1; i++) cur = get(cur, [segments[i] as Segment]);
  const last = segments[segments.length - 1];
  if (typeof last === 'number' && Array.isArray(cur)) cur[last] = value;
  else if (typeof last === 'string' && isTable(cur)) setOwn(cur, last, value);
}

const isFile = (file: string): boolean => {
  try {
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
};

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value as object)) deepFreeze(v);
  }
  return value;
}

/** Parses a reference target such as `super_admin.username` or `apim.gateway.environment[0].name`. */
function refSegments(text: string): Segment[] | undefined {
  const t = text.trim();
  if (!/^[A-Za-z0-9_\-.[\]]+$/.test(t)) return undefined;
  const out: Segment[] = [];
  for (const part of t.split('.')) {
    const m = /^([^[\]]*)((?:\[\d+\])*)$/.exec(part);
    if (m === null) return undefined;
    if (m[1] !== undefined && m[1] !== '') out.push(/^\d+$/.test(m[1]) ? Number(m[1]) : m[1]);
    for (const idx of (m[2] ?? '').matchAll(/\[(\d+)\]/g)) out.push(Number(idx[1]));
  }
  return out.length > 0 && !out.some((s) => s === '') ? out : undefined;
}

/** A TOML boolean or number as written: not text, so never a secret token or key. */
const NOT_TEXT = /^(true|false|[-+]?(\d[\d_]*)(\.\d+)?([eE][-+]?\d+)?|[-+]?(inf|nan))$/;

const PLACEHOLDER = /\$(ref|conf|env|sys)\{([^{}]*)\}/g;

/** The [database.apim_db] types a starting node opens (lib/store/open.ts SUPPORTED_DATABASES; a test keeps them equal). */
export const STORE_DATABASES: readonly string[] = ['h2', 'postgre', 'mysql'];

class Loader {
  readonly diagnostics: Diagnostic[] = [];
  readonly index: SchemaIndex;
  map: SourceMap;
  readonly leaves: Leaf[] = [];
  readonly inactive = new Set<string>();
  readonly inactiveKeys = new Set<string>();
  /** Values built from a secret through a reference: masked like the secret itself. */
  readonly tainted = new Set<string>();
  /** Keys whose value could not be resolved: not converted, so one mistake gives one diagnostic. */
  readonly broken = new Set<string>();
  /** Key -> the key its value was taken from by a $ref{...} or $conf{...} (to place errors of defaults built from written values). */
  readonly refFrom = new Map<string, Segment[]>();
  /** Section instances written in the file: their header, or a key of theirs (not only a sub-table). */
  readonly written = new Set<string>();
  readonly repeatablePaths: ReadonlySet<string>;
  syntaxFailed = false;
  doc: Record<string, unknown> = {};

  constructor(
    readonly text: string,
    readonly displayFile: string,
    readonly options: LoadOptions,
    readonly dir: string,
  ) {
    this.index = schemaIndex(options.sections ?? SECTIONS);
    this.map = locateKeys(text);
    this.repeatablePaths = new Set(this.index.sections.filter((s) => s.repeatable === true).map((s) => s.path));
    for (const h of this.map.headers) this.written.add(h.path);
  }

  isSecret(segments: readonly Segment[], def?: KeyDef): boolean {
    if (def?.secret === true) return true;
    if (this.tainted.has(pathKey(segments))) return true;
    const last = segments[segments.length - 1];
    if (typeof last === 'string' && isSecretName(last, get(this.doc, segments))) return true;
    return def === undefined && this.secretDef(segments);
  }

  /** The source line, with the value of any secret-looking key on it replaced by ****. */
  sourceLine(line: number, secret: boolean): string | undefined {
    const text = this.map.lines[line - 1];
    if (text === undefined) return undefined;
    if (secret) {
      const eq = text.indexOf('=');
      return eq >= 0 ? `${text.slice(0, eq + 1)} ${MASK}` : MASK;
    }
    // Inline tables may hold a password beside the key in question: mask every secret-named value.
    return text.replace(
      /(["']?)([A-Za-z0-9_.-]+)\1(\s*=\s*)("(?:[^"\\]|\\.)*"|'[^']*'|[^,}\s#]+)/g,
      (all, q: string, key: string, eq: string, value: string) =>
        isSecretName(key.split('.').pop() ?? key, NOT_TEXT.test(value) ? false : value) ? `${q}${key}${q}${eq}${MASK}` : all,
    );
  }

  report(
    level: DiagnosticLevel,
    code: DiagnosticCode,
    segments: readonly Segment[],
    message: string,
    opts: { expected?: string; at?: KeyLocation; secret?: boolean } = {},
  ): void {
    const loc = opts.at ?? nearest(this.map, segments);
    const line = loc?.line ?? 0;
    const d: Diagnostic = {
      level,
      code,
      key: pathKey(segments),
      file: this.displayFile,
      line,
      ...(loc !== undefined ? { column: loc.column } : {}),
      message,
      ...(opts.expected !== undefined ? { expected: opts.expected } : {}),
      ...(line > 0 ? { source: this.sourceLine(line, opts.secret ?? this.isSecret(segments)) } : {}),
    };
    this.diagnostics.push(d);
  }

  // ------------------------------------------------------------------------------------------ 1. parse

  parse(): void {
    const lines = this.text.split(/\r?\n/);
    const blank = (from: number, to: number): void => {
      for (let l = from; l <= to && l <= lines.length; l++) lines[l - 1] = '';
    };
    const reported = new Set<string>();
    const nextHeaderLine = (after: number): number => {
      const h = this.map.headers.find((x) => x.location.line > after);
      return h === undefined ? lines.length : h.location.line - 1;
    };
    // Duplicates first: toml stops at the first; the scanner finds them all, including a quoted dotted
    // key written again in its nested form, which toml cannot see (spec 000, part 1: they are one key).
    for (const d of this.map.duplicates) {
      const segments = refSegments(d.path) ?? [d.path];
      this.report('error', 'CONFIG_DUPLICATE', segments, `defined again; first defined on line ${d.first.line}`, { at: d.again });
      reported.add(`${d.again.line}`);
      if (d.again.kind === 'table') blank(d.again.line, nextHeaderLine(d.again.line));
      else blank(d.again.line, d.again.endLine);
    }
    let lastLine = -1;
    for (let attempt = 0; attempt < 50; attempt++) {
      try {
        const text = lines.join('\n');
        this.doc = toml.parse(text) as Record<string, unknown>;
        // Positions come from what was parsed: lines set aside no longer define keys.
        if (text !== this.text) this.map = { ...locateKeys(text), lines: this.map.lines, duplicates: this.map.duplicates };
        return;
      } catch (err) {
        const e = err as {
          message?: string;
          line?: number;
          column?: number;
          location?: { start?: { line?: number; column?: number } };
          found?: string | null;
        };
        const start = e.location?.start;
        const line = start?.line ?? e.line ?? 0;
        const column = start?.column ?? e.column ?? 1;
        const at: KeyLocation = { line, column, endLine: line, kind: 'key' };
        const text = lines[line - 1] ?? '';
        const lineKey = /^\s*(["']?)([^=\]\s"']+)\1\s*=/.exec(text)?.[2] ?? '';
        const lineValue = /=\s*([^#]*?)\s*(#.*)?$/.exec(text)?.[1] ?? '';
        let header: { from: number; to: number } | undefined;
        const secretLine =
          lineKey !== '' && isSecretName(lineKey.split('.').pop() ?? lineKey, NOT_TEXT.test(lineValue) ? false : lineValue);
        if (start === undefined && e.line !== undefined) {
          // toml 5 puts line/column (no location) on its semantic errors; each has its own code.
          if (!reported.has(`${line}`)) {
            const message = e.message ?? '';
            if (/^Cannot redefine/.test(message)) {
              const key = /'([^']*)'/.exec(message)?.[1] ?? '';
              this.report('error', 'CONFIG_DUPLICATE', refSegments(key) ?? [], 'defined again (a key, or a table that already exists)', {
                at,
              });
            } else {
              this.syntaxFailed = true;
              const lineSegs = lineKey !== '' ? (refSegments(lineKey) ?? []) : [];
              const semantic = semanticError(message);
              this.report('error', semantic.code, lineSegs, semantic.message, {
                at,
                secret: secretLine,
                ...(semantic.expected !== undefined ? { expected: semantic.expected } : {}),
              });
            }
            reported.add(`${line}`);
          }
        } else {
          this.syntaxFailed = true;
          // A value left open ([ or { or a multi-line string) makes the next statement's first character
          // the error: the open statement is the cause, reported where it starts, and set aside whole.
          const open = e.found === null ? openString(lines) : openStatement(lines, line, column);
          if (open !== undefined) {
            if (!reported.has(`${open.line}`)) {
              const what = open.key !== '' ? `the value of ${open.key}` : 'a value';
              this.report(
                'error',
                'CONFIG_SYNTAX',
                [],
                `invalid TOML: ${what} is not closed before ${e.found === null ? 'the end of the file (the lines after it cannot be checked)' : `line ${line}`}`,
                {
                  at: { line: open.line, column: 1, endLine: open.line, kind: 'key' },
                  secret: false,
                  expected: 'its closing ] or } or quotes before the next key or table',
                },
              );
              reported.add(`${open.line}`);
            }
            blank(open.line, line - 1);
            lastLine = -1;
            continue;
          }
          // A table header that does not parse: its keys belong to no table we can name, so they are set
          // aside with it (else they would be checked as keys of the table above).
          header = /^\s*\[/.test(text) ? { from: line + 1, to: nextHeaderLine(line) } : undefined;
          const skipped =
            header !== undefined && header.to >= header.from
              ? `; the keys under it (lines ${header.from}-${header.to}) are not checked`
              : '';
          const found =
            e.found === undefined
              ? undefined
              : e.found === null
                ? 'end of file'
                : e.found === '\n' || e.found === '\r'
                  ? 'end of line'
                  : secretLine
                    ? undefined
                    : JSON.stringify(e.found);
          const expectedText = syntaxExpectation(e as { expected?: unknown }) ?? /^Expected (.*) but /s.exec(e.message ?? '')?.[1];
          this.report(
            'error',
            'CONFIG_SYNTAX',
            [],
            `${found !== undefined ? `invalid TOML: unexpected ${found}` : 'invalid TOML'}${skipped}`,
            {
              at,
              secret: secretLine,
              ...(expectedText !== undefined
                ? { expected: expectedText.length > 100 ? `${expectedText.slice(0, 97)}...` : expectedText }
                : {}),
            },
          );
        }
        if (line < 1 || line === lastLine || line > lines.length) return;
        lastLine = line;
        if (header !== undefined) blank(line, header.to);
        else blank(line, line);
      }
    }
  }

  // -------------------------------------------------------------------------------------- 2. normalise

  /** Quoted dotted keys become the nested form; the scanner already reported any clash. */
  normalise(value: unknown): unknown {
    if (Array.isArray(value)) return value.map((v) => this.normalise(v));
    if (!isTable(value)) return value;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      const parts = splitKey(k);
      let target: Record<string, unknown> | undefined = out;
      for (const p of parts.slice(0, -1)) {
        if (target === undefined) break;
        if (!Object.prototype.hasOwnProperty.call(target, p)) setOwn(target, p, {});
        const next: unknown = target[p];
        target = isTable(next) ? next : undefined;
      }
      const last = parts[parts.length - 1] ?? k;
      if (target === undefined) continue;
      const nv = this.normalise(v);
      const before = Object.prototype.hasOwnProperty.call(target, last) ? target[last] : undefined;
      if (before === undefined) setOwn(target, last, nv);
      else if (isTable(before) && isTable(nv)) merge(before, nv);
    }
    return out;
  }

  /** The keys the file writes: the ones not acted on, with their place, and a count of each status. */
  writtenKeys(): { notActedOn: WrittenKey[]; counts: StatusCounts; written: Set<string> } {
    const counts = { acts: 0, differs: 0, inactive: 0 };
    const notActedOn: WrittenKey[] = [];
    const written = new Set<string>();
    for (const leaf of this.leaves) {
      if (leaf.fromDefault) continue;
      const key = pathKey(leaf.segments);
      const at = this.map.entries.get(key);
      // A key the file writes has a place; one without (set by a fill) is not the file's.
      if (at === undefined) continue;
      written.add(key);
      const status = keyStatus(leaf.match.section, leaf.match.def);
      counts[status]++;
      if (status === 'inactive') {
        const { section, def } = leaf.match;
        notActedOn.push({
          key,
          section: section.path,
          sectionRuns: section.runs,
          reason: inactiveReason(section, def) ?? '',
          file: this.displayFile,
          line: at.line,
          column: at.column,
        });
      }
    }
    notActedOn.sort((a, b) => a.line - b.line || a.column - b.column);
    return { notActedOn, counts, written };
  }

  // ------------------------------------------------------------------------------------------ 3. match

  match(): void {
    this.doc = this.walk(this.doc, [], [this.index.root], undefined) as Record<string, unknown>;
    // A table header written for an inactive feature counts even when the table is empty.
    for (const h of this.map.headers) {
      let nodes: TrieNode[] = [this.index.root];
      for (const s of h.segments) nodes = step(nodes, s);
      const section = nodes.find((n) => n.section !== undefined)?.section;
      if (section !== undefined && !section.runs) this.inactive.add(section.path);
    }
  }

  private walk(
    value: unknown,
    segments: Segment[],
    nodes: TrieNode[],
    context: { section: SectionDef; depth: number } | undefined,
  ): unknown {
    const keyNode = nodes.find((n) => n.key !== undefined);
    const sectionNode = nodes.find((n) => n.section !== undefined);
    // The top-level '' section only holds loose keys; it is no table to name in messages.
    if (sectionNode?.section !== undefined && sectionNode.section.path !== '')
      context = { section: sectionNode.section, depth: segments.length };
    const hasChildren = nodes.some((n) => n.hasChildren());
    const open = nodes.some((n) => n.open);

    if (keyNode?.key !== undefined && (!isTable(value) || keyNode.key.def.type === 'map' || !hasChildren)) {
      this.leaves.push({ segments, match: keyNode.key, fromDefault: false });
      this.written.add(pathKey(segments.slice(0, keyNode.key.sectionDepth)));
      if (!keyNode.key.section.runs) this.inactive.add(keyNode.key.section.path);
      if (keyNode.key.def.inactive !== undefined) this.inactiveKeys.add(keyNode.key.pattern);
      return value;
    }
    // A repeatable table written once as a plain [table]: accepted as a one-entry array.
    if (
      isTable(value) &&
      nodes.some((n) => n.index !== undefined) &&
      !nodes.some((n) => n.literal.size > 0 || n.placeholder !== undefined)
    ) {
      value = [value];
    }
    if (Array.isArray(value) && nodes.some((n) => n.index !== undefined)) {
      return value.map((entry, i) => {
        const at = [...segments, i];
        if (!isTable(entry)) {
          this.report('error', 'CONFIG_TYPE', at, `expected a table entry of [[${pathKey(segments)}]], got ${typeName(entry)}`, {
            expected: 'a [[table]] entry',
          });
          return entry;
        }
        return this.walk(entry, at, step(nodes, i), context);
      });
    }
    if (isTable(value)) {
      if (context !== undefined && !context.section.runs && segments.length === context.depth) this.inactive.add(context.section.path);
      for (const [k, v] of Object.entries(value)) {
        const at = [...segments, k];
        const next = step(nodes, k);
        if (next.length === 0) {
          if (!open) this.unknown(at, v, context);
          continue;
        }
        const nv = this.walk(v, at, next, context);
        if (nv !== v) setOwn(value, k, nv);
      }
      return value;
    }
    if (hasChildren && !open) {
      const label = sectionNode?.section !== undefined ? sectionLabel(sectionNode.section) : `[${pathKey(segments)}]`;
      this.report('error', 'CONFIG_TYPE', segments, `expected the table ${label}, got ${typeName(value)}`, { expected: 'a table' });
    }
    return value;
  }

  private unknown(segments: Segment[], value: unknown, context: { section: SectionDef; depth: number } | undefined): void {
    const level: DiagnosticLevel = this.options.strict === true ? 'error' : 'warning';
    const prefix = pathKey(segments);
    const tableLike = isTable(value) || (Array.isArray(value) && value.length > 0 && value.every(isTable));
    const headers = this.map.headers.filter((h) => h.path === prefix || h.path.startsWith(`${prefix}.`) || h.path.startsWith(`${prefix}[`));
    if (tableLike && headers.length > 0) {
      // One warning per table as written; tables nested in an already reported one are not repeated.
      const done: string[] = [];
      const sorted = [...headers].sort((a, b) => a.segments.length - b.segments.length || a.location.line - b.location.line);
      for (const h of sorted) {
        const plain = h.path.replace(/\[\d+\]/g, '');
        if (done.some((d) => plain === d || plain.startsWith(`${d}.`))) continue;
        done.push(plain);
        const label = h.location.kind === 'array-table' ? `[[${plain}]]` : `[${plain}]`;
        const guess = this.guessSection(plain);
        const hint = guess !== undefined ? `; did you mean [${guess}]?` : '';
        this.report(level, 'CONFIG_UNKNOWN_SECTION', h.segments, `unknown section ${label}${hint}`, { at: h.location, secret: false });
      }
      return;
    }
    const plain = (p: string): string => p.replace(/\[\d+\]/g, '');
    const relative = plain(pathKey(segments.slice(context?.depth ?? segments.length - 1)));
    const candidates = context !== undefined ? (this.index.keysOf.get(context.section) ?? []) : [];
    let hint = '';
    const keyGuess = closest(relative, candidates);
    if (keyGuess !== undefined) hint = `; did you mean '${keyGuess}'?`;
    else if (tableLike) {
      // A misspelt table name: compare with the known tables, never with the path's own ancestors.
      const guess = this.guessSection(plain(prefix));
      if (guess !== undefined) hint = `; did you mean [${guess}]?`;
    }
    const parent = segments.slice(0, context?.depth ?? segments.length - 1);
    const where =
      context !== undefined ? ` in ${sectionLabel(context.section)}` : parent.length > 0 ? ` in [${plain(pathKey(parent))}]` : '';
    // No header was written for it: a dotted key or an inline table, so it is reported as a key.
    this.report(level, 'CONFIG_UNKNOWN_KEY', segments, `unknown key '${relative}'${where}${hint}`, { secret: false });
  }

  /**
   * The known table closest to a misspelt one: first among its siblings (same parent, compared by the
   * last name only, so a long shared prefix does not make distant names look close), then among all.
   */
  private guessSection(written: string): string | undefined {
    const known = this.index.sections.map((s) => s.path).filter((p) => p !== '' && !written.startsWith(`${p}.`));
    const cut = written.lastIndexOf('.');
    const parent = cut >= 0 ? written.slice(0, cut) : '';
    const siblings = new Map<string, string>();
    for (const p of known) {
      const c = p.lastIndexOf('.');
      if ((c >= 0 ? p.slice(0, c) : '') === parent) siblings.set(c >= 0 ? p.slice(c + 1) : p, p);
    }
    const near = closest(written.slice(cut + 1), siblings.keys());
    if (near !== undefined) return siblings.get(near);
    return closest(written, known, 3);
  }

  // --------------------------------------------------------------------------------------- 4. defaults

  /** Concrete instances of a section, creating missing plain tables on the way (not entries or names). */
  private instances(section: SectionDef, create: boolean): Segment[][] {
    let current: Segment[][] = [[]];
    const written: string[] = [];
    for (const segment of splitPattern(section.path)) {
      written.push(segment);
      const next: Segment[][] = [];
      for (const prefix of current) {
        const holder = get(this.doc, prefix);
        if (!isTable(holder)) continue;
        if (isPlaceholder(segment)) {
          for (const name of Object.keys(holder)) next.push([...prefix, name]);
          continue;
        }
        if (!Object.prototype.hasOwnProperty.call(holder, segment) && create) {
          setOwn(holder, segment, this.repeatablePaths.has(written.join('.')) ? [] : {});
        }
        if (Object.prototype.hasOwnProperty.call(holder, segment)) next.push([...prefix, segment]);
      }
      current = next;
      if (this.repeatablePaths.has(written.join('.')))
        current = entriesOf(this.doc, current, written.length < splitPattern(section.path).length);
    }
    return current.filter((p) => isTable(get(this.doc, p)));
  }

  fillDefaults(): void {
    const ordered = [...this.index.sections].sort((a, b) => splitPattern(a.path).length - splitPattern(b.path).length);
    const nodeOf = (segments: readonly Segment[]): TrieNode[] => {
      let nodes: TrieNode[] = [this.index.root];
      for (const s of segments) nodes = step(nodes, s);
      return nodes;
    };
    for (const section of ordered) {
      for (const instance of this.instances(section, true)) {
        for (const def of section.keys) {
          if (def.default === undefined) continue;
          const keySegs = splitPattern(def.key);
          if (keySegs.some(isPlaceholder)) continue;
          const full = [...instance, ...keySegs];
          if (get(this.doc, full) !== undefined) continue;
          // Create the key's own sub-tables (pool_options.maxActive); never replace a written value.
          let holder: unknown = this.doc;
          let blocked = false;
          for (const s of full.slice(0, -1)) {
            if (isTable(holder) && typeof s === 'string' && !Object.prototype.hasOwnProperty.call(holder, s)) setOwn(holder, s, {});
            holder = get(holder, [s]);
            if (!isTable(holder) && !Array.isArray(holder)) {
              blocked = true;
              break;
            }
          }
          if (blocked || !isTable(holder)) continue;
          const value = Array.isArray(def.default) ? [...(def.default as readonly string[])] : def.default;
          setOwn(holder, full[full.length - 1] as string, value);
          const match = nodeOf(full).find((n) => n.key !== undefined)?.key;
          if (match !== undefined) this.leaves.push({ segments: full, match, fromDefault: true });
        }
      }
    }
  }

  // ---------------------------------------------------------------------------------------- 5. resolve

  private readonly done = new Set<string>();
  private readonly active: string[] = [];

  resolveAll(): void {
    const visit = (value: unknown, segments: Segment[]): void => {
      if (isTable(value)) {
        for (const [k, v] of Object.entries(value)) visit(v, [...segments, k]);
      } else if (Array.isArray(value) && value.some((v) => isTable(v))) {
        value.forEach((v, i) => visit(v, [...segments, i]));
      } else {
        this.resolveKey(segments);
      }
    };
    visit(this.doc, []);
  }

  /** Resolves the value at `segments` in place; returns false when it could not be resolved. */
  private resolveKey(segments: Segment[]): boolean {
    const key = pathKey(segments);
    if (this.done.has(key)) return !this.broken.has(key);
    if (this.active.includes(key)) return false;
    this.active.push(key);
    const raw = get(this.doc, segments);
    let ok = true;
    const resolveOne = (v: unknown, at: Segment[]): unknown => {
      if (typeof v === 'string') {
        const r = this.resolveString(v, segments);
        if (!r.ok) ok = false;
        return r.value;
      }
      if (Array.isArray(v)) return v.map((e, i) => resolveOne(e, [...at, i]));
      if (isTable(v)) {
        for (const k of Object.keys(v)) if (!this.resolveKey([...at, k])) ok = false;
        return v;
      }
      return v;
    };
    const value = resolveOne(raw, segments);
    if (value !== raw) setAt(this.doc, segments, value);
    this.active.pop();
    this.done.add(key);
    if (!ok) this.broken.add(key);
    return ok;
  }

  private resolveString(text: string, owner: Segment[]): { ok: boolean; value: unknown } {
    const found = [...text.matchAll(PLACEHOLDER)];
    if (found.length === 0) return { ok: true, value: text };
    const ownerKey = pathKey(owner);
    let ok = true;
    const valueOf = (kind: string, name: string): { ok: boolean; value?: unknown } => {
      if (kind === 'env') {
        if (!/^[A-Za-z_][A-Za-z0-9_.-]*$/.test(name)) {
          this.report('error', 'CONFIG_REF_SYNTAX', owner, `malformed $env{${name}}`, { expected: '$env{NAME}' });
          return { ok: false };
        }
        // The one place environment variables are read (docs/configuration.md: no other module reads process.env).
        const env = this.options.env ?? process.env;
        const v = env[name];
        if (v === undefined) {
          this.report('error', 'CONFIG_ENV_MISSING', owner, `environment variable ${name} is not set ($env{${name}})`);
          return { ok: false };
        }
        return { ok: true, value: v };
      }
      if (kind === 'sys') {
        const v = this.options.sys?.[name.trim()];
        if (v === undefined) {
          this.report(
            'error',
            'CONFIG_SYS_MISSING',
            owner,
            `system property ${name} has no value ($sys{${name}}); give it with --sys ${name}=VALUE`,
          );
          return { ok: false };
        }
        return { ok: true, value: v };
      }
      const target = refSegments(name);
      if (target === undefined) {
        this.report('error', 'CONFIG_REF_SYNTAX', owner, `malformed $${kind}{${name}}`, { expected: `$${kind}{section.key}` });
        return { ok: false };
      }
      const targetKey = pathKey(target);
      const chainStart = this.active.indexOf(targetKey);
      if (chainStart >= 0) {
        const chain = [...this.active.slice(chainStart), targetKey];
        // One diagnostic per cycle, on the key where the cycle starts; every key in it stays unresolved.
        for (const k of chain) this.broken.add(k);
        const first = refSegments(chain[0] ?? ownerKey) ?? owner;
        this.report('error', 'CONFIG_REF_CYCLE', first, `reference cycle: ${chain.join(' → ')}`);
        return { ok: false };
      }
      if (get(this.doc, target) === undefined) {
        const chain = [...this.active, targetKey];
        this.report(
          'error',
          'CONFIG_REF_MISSING',
          owner,
          `$${kind}{${name}} names a key that is not set${chain.length > 2 ? ` (${chain.join(' → ')})` : ''}`,
        );
        return { ok: false };
      }
      if (!this.resolveKey(target)) return { ok: false };
      this.refFrom.set(ownerKey, target);
      // A value built from a secret is as secret as its source.
      if (this.isSecret(target)) this.tainted.add(ownerKey);
      return { ok: true, value: get(this.doc, target) };
    };

    // A value that is exactly one reference keeps the referenced value's type (docs/configuration.md: a referenced
    // list or boolean stays a list or boolean); anything else is string interpolation.
    const only = found.length === 1 && found[0]?.[0] === text ? found[0] : undefined;
    if (only !== undefined && (only[1] === 'ref' || only[1] === 'conf')) {
      const r = valueOf(only[1], only[2] ?? '');
      return r.ok ? { ok: true, value: r.value } : { ok: false, value: text };
    }
    const out = text.replace(PLACEHOLDER, (all, kind: string, name: string) => {
      const r = valueOf(kind, name);
      if (!r.ok) {
        ok = false;
        return all;
      }
      return Array.isArray(r.value) ? r.value.join(',') : String(r.value);
    });
    return { ok, value: out };
  }

  private secretDef(segments: readonly Segment[]): boolean {
    let nodes: TrieNode[] = [this.index.root];
    for (const s of segments) nodes = step(nodes, s);
    return nodes.some((n) => n.key?.def.secret === true);
  }

  // ---------------------------------------------------------------------------------------- 6. convert

  convertAll(): void {
    for (const leaf of this.leaves) {
      const key = pathKey(leaf.segments);
      if (this.broken.has(key)) continue;
      const def = leaf.match.def;
      const raw = get(this.doc, leaf.segments);
      if (raw === undefined) continue;
      const secret = this.isSecret(leaf.segments, def);
      const c = convert(def, raw);
      const result = c.ok && !leaf.fromDefault ? check(def, c.value, { dir: this.dir, looked: this.storeLooked }) : c;
      if (!result.ok) {
        const source = leaf.fromDefault ? this.writtenSource(leaf.segments) : undefined;
        const origin = leaf.fromDefault ? ` (schema default${source !== undefined ? `, from ${source.key}` : ''})` : '';
        // A value outside the spec's list where throughway does not act on it (a section it does not
        // run, a key it does not act on) changes nothing: a warning, the value kept as written.
        const idle = result.code === 'CONFIG_ALLOWED' && c.ok && (!leaf.match.section.runs || def.inactive !== undefined);
        // A default that copies a written value by reference is placed on the line that wrote the value.
        // Entries of an array at fault: one diagnostic each, at the entry and naming it, not the whole array.
        const entries = result.entries !== undefined && !leaf.fromDefault ? result.entries : undefined;
        if (entries !== undefined) {
          for (const e of entries)
            this.report('error', result.code, [...leaf.segments, e.index], e.problem, { expected: result.expected, secret });
          continue;
        }
        this.report(
          idle ? 'warning' : 'error',
          result.code,
          leaf.segments,
          `${result.problem}: ${shown(raw, secret)}${origin}${idle ? ' (not acted on by throughway)' : ''}`,
          { expected: result.expected, secret, ...(source !== undefined ? { at: source.at } : {}) },
        );
        if (idle && c.ok) setAt(this.doc, leaf.segments, c.value);
        continue;
      }
      setAt(this.doc, leaf.segments, result.value);
    }
  }

  // ----------------------------------------------------------------------------- 6b. store defaults

  storeFills: StoreFill[] = [];
  /** Where each store file was looked for (config/security-dir.ts): a missing one's message names them all. */
  readonly storeLooked = new Map<string, readonly string[]>();

  /** The transports' stores the file leaves out, from [keystore.tls]/[keystore.primary]/[truststore] (config/stores.ts). */
  fillStores(): void {
    this.fillReferenceDefaults();
    this.storeFills = fillStoreDefaults(this.doc, (segments) => this.map.entries.has(pathKey(segments)));
    for (const f of this.storeFills) if (this.isSecret(f.from)) this.tainted.add(pathKey(f.target));
  }

  /**
   * In the reference's layout, a file that names no key store (no [keystore.tls], [keystore.primary] or
   * listener key_store file_name) takes the reference's default store from the security directory when it
   * is there, as the reference does; the same for the trust store. A password or type the file writes in
   * [keystore.primary] / [truststore] wins over the reference's default. Without the files nothing is filled
   * and the listener serves the generated sample pair (docs/tls.md).
   */
  private fillReferenceDefaults(): void {
    const dir = securityDir(this.dir);
    if (dir === undefined) return;
    const named = (segments: readonly Segment[]): boolean => {
      const v = get(this.doc, segments);
      return typeof v === 'string' && v !== '';
    };
    const https: Segment[] = ['transport', 'passthru_https', 'listener'];
    const fill = (
      table: Segment[],
      d: { readonly file: string; readonly type: string; readonly password: string },
      extra: readonly string[],
    ): void => {
      const file = path.join(dir, d.file);
      if (!isFile(file)) return;
      // The password is the reference's default (a secret key of the schema: printed as ****).
      setAt(this.doc, [...table, 'file_name'], file);
      if (!this.map.entries.has(pathKey([...table, 'type']))) setAt(this.doc, [...table, 'type'], d.type);
      // A written password also opens the key (key_password defaults to the store password, docs/tls.md).
      const writesPassword = this.map.entries.has(pathKey([...table, 'password']));
      for (const k of ['password', ...extra])
        if (!writesPassword && !this.map.entries.has(pathKey([...table, k]))) setAt(this.doc, [...table, k], d.password);
    };
    if (
      ![
        ['keystore', 'tls'],
        ['keystore', 'primary'],
        [...https, 'key_store'],
      ].some((t) => named([...t, 'file_name']))
    )
      fill(['keystore', 'primary'], REFERENCE_DEFAULT_STORES.key, ['key_password']);
    if (![['truststore'], [...https, 'trust_store']].some((t) => named([...t, 'file_name'])))
      fill(['truststore'], REFERENCE_DEFAULT_STORES.trust, []);
  }

  /** Store files a starting node opens that are not there, at the key that names them (or the table it defaults from). */
  checkStoreFiles(): void {
    const reported = new Set<string>();
    for (const m of missingStoreFiles(this.doc)) {
      // A sender store copied from a listener store copied from [keystore.tls]: the file wrote the last.
      let origin: readonly Segment[] = m.key;
      for (let fill = this.fillOf(origin); fill !== undefined; fill = this.fillOf(origin)) origin = fill.from;
      if (reported.has(pathKey(origin))) continue;
      reported.add(pathKey(origin));
      const from = origin !== m.key ? ` (the default of ${pathKey(m.key)})` : '';
      const places = this.storeLooked.get(m.file) ?? [m.file];
      const where = places.length > 1 ? `; looked in ${places.join(', ')}` : '';
      this.report('error', 'CONFIG_FILE_MISSING', origin, `no such file: ${m.file}${from}${where}`, {
        expected:
          "an existing file: a bare name in the security directory (repository/resources/security in the reference's layout), else beside the configuration file (docs/tls.md)",
        secret: false,
      });
    }
  }

  /** Certificate files that are there but hold no usable PEM certificate (the saml_bearer identity providers'). */
  checkCertificateFiles(): void {
    for (const c of invalidCertificateFiles(this.doc)) {
      this.report('error', 'CONFIG_FILE_INVALID', c.key, `${c.file} ${c.problem}`, {
        expected: 'a PEM file of one or more X.509 certificates (-----BEGIN CERTIFICATE-----), as start reads it',
        secret: false,
      });
    }
  }

  private fillOf(target: readonly Segment[]): StoreFill | undefined {
    return this.storeFills.find((f) => pathKey(f.target) === pathKey(target));
  }

  /**
   * [database.apim_db] (and a [database.shared_db] with a url) types a node that opens the store refuses (lib/store/open.ts SUPPORTED_DATABASES:
   * no driver ships for the others). Every role but gateway-worker opens it (lib/scale/settings.ts ROLE_PARTS).
   */
  checkDatabaseType(): void {
    const doc = this.doc as unknown as DeploymentConfig;
    if (doc.server?.server_role === 'gateway-worker') return;
    // [database.shared_db] is opened when it has a url of its own (lib/store/open.ts sharedDatabase).
    const shared = doc.database?.shared_db;
    const opened = shared?.url !== undefined && shared.url !== '' ? (['apim_db', 'shared_db'] as const) : (['apim_db'] as const);
    for (const name of opened) {
      const type = doc.database?.[name]?.type ?? 'h2';
      if (STORE_DATABASES.includes(type)) continue;
      this.report(
        'error',
        'CONFIG_UNSUPPORTED',
        ['database', name, 'type'],
        `type ${JSON.stringify(type)} is not supported by throughway: no driver ships for it, and start refuses it`,
        { expected: STORE_DATABASES.map((t) => JSON.stringify(t)).join(', '), secret: false },
      );
    }
  }

  /** The written key a defaulted value was copied from through references, and where it is written. */
  private writtenSource(segments: readonly Segment[]): { key: string; at: KeyLocation } | undefined {
    let key = pathKey(segments);
    for (let hops = 0; hops < 16; hops++) {
      const from = this.refFrom.get(key);
      if (from === undefined) return undefined;
      key = pathKey(from);
      const at = this.map.entries.get(key);
      if (at !== undefined) return { key, at };
    }
    return undefined;
  }

  // --------------------------------------------------------------------------------------- 7. required

  checkRequired(): void {
    for (const section of this.index.sections) {
      if (!section.runs) continue;
      const required = section.keys.filter(
        (k) => k.required === true && k.inactive === undefined && k.default === undefined && !splitPattern(k.key).some(isPlaceholder),
      );
      if (required.length === 0) continue;
      for (const instance of this.instances(section, false)) {
        // An absent table is satisfied by its defaults: required keys bind a table that is written
        // (spec 000, part 1.7: "must be present for that feature"; the real files omit whole tables).
        if (!this.written.has(pathKey(instance))) continue;
        if (!this.switchedOn(section, instance)) continue;
        for (const def of required) {
          const full = [...instance, ...splitPattern(def.key)];
          if (get(this.doc, full) !== undefined) continue;
          const where = this.map.entries.get(pathKey(instance));
          this.report(
            'error',
            'CONFIG_REQUIRED',
            full,
            `required key '${def.key}' is missing in ${sectionLabel(section)} (${def.meaning.replace(/\.$/, '')})`,
            {
              expected: describe(def),
              ...(where !== undefined ? { at: where } : {}),
              secret: false,
            },
          );
        }
      }
    }
  }

  private switchedOn(section: SectionDef, instance: readonly Segment[]): boolean {
    if (section.enabledBy === undefined) return true;
    const own = `${section.path}.`;
    const segs: Segment[] = section.enabledBy.startsWith(own)
      ? [...instance, ...splitPattern(section.enabledBy.slice(own.length))]
      : splitPattern(section.enabledBy);
    const v = get(this.doc, segs);
    return v === true || (typeof v === 'string' && v.trim().toLowerCase() === 'true');
  }

  secretPaths(): string[] {
    const out: string[] = [];
    const visit = (value: unknown, segments: Segment[]): void => {
      if (isTable(value)) for (const [k, v] of Object.entries(value)) visit(v, [...segments, k]);
      else if (Array.isArray(value) && value.some(isTable)) value.forEach((v, i) => visit(v, [...segments, i]));
      else if (this.isSecret(segments)) out.push(pathKey(segments));
    };
    visit(this.doc, []);
    return out;
  }
}

/**
 * The statement left open when a TOML error falls on a line that starts a statement of its own (a table
 * header or `key =`): at the line's first character, or inside a table header (which an array left open
 * reads as a nested array). It is the nearest `key =` above whose value opens more brackets and braces
 * than it closes up to that line (strings and comments aside), or opens a multi-line string. Undefined
 * when the error is the line's own.
 */
export function openStatement(lines: readonly string[], line: number, column: number): { line: number; key: string } | undefined {
  const here = lines[line - 1] ?? '';
  const STATEMENT = /^\s*(\[|["']?[A-Za-z0-9_.:-]+["']?\s*=)/;
  const atStart = column <= here.search(/\S|$/) + 1;
  if ((!atStart && !/^\s*\[/.test(here)) || (here.trim() !== '' && !STATEMENT.test(here))) return undefined;
  for (let l = line - 1; l >= 1 && l >= line - 1000; l--) {
    const text = lines[l - 1] ?? '';
    if (!STATEMENT.test(text)) continue;
    const m = /^\s*(["']?)([^=\]\s"']+)\1\s*=\s*(.*)$/.exec(text);
    if (m === null) return undefined;
    const value = (m[3] as string).trim();
    if (/^("""|''')/.test(value)) return { line: l, key: m[2] as string };
    return unclosed([value, ...lines.slice(l, line - 1)]) > 0 ? { line: l, key: m[2] as string } : undefined;
  }
  return undefined;
}

/** Brackets and braces opened and not closed over `texts` (TOML lines), strings and comments aside. */
function unclosed(texts: readonly string[]): number {
  let depth = 0;
  for (const text of texts) {
    let quote: string | undefined;
    for (let i = 0; i < text.length; i++) {
      const c = text[i] as string;
      if (quote !== undefined) {
        if (c === '\\' && quote === '"') i++;
        else if (c === quote) quote = undefined;
      } else if (c === '"' || c === "'") quote = c;
      else if (c === '#') break;
      else if (c === '[' || c === '{') depth++;
      else if (c === ']' || c === '}') depth--;
    }
  }
  return depth;
}

/** The multi-line string (""" or ''') that runs to the end of the file: the statement that opens it. */
export function openString(lines: readonly string[]): { line: number; key: string } | undefined {
  for (let l = lines.length; l >= 1; l--) {
    const text = lines[l - 1] ?? '';
    const delimiters = text.match(/"""|'''/g) ?? [];
    if (delimiters.length === 0) continue;
    const m = /^\s*(["']?)([^=\]\s"']+)\1\s*=\s*("""|''')/.exec(text);
    return m !== null && delimiters.length === 1 ? { line: l, key: m[2] as string } : undefined;
  }
  return undefined;
}

/**
 * What the parser wanted, in words: `toml` (a peggy parser) lists every token it could accept, which
 * for a missing value is seventeen entries of grammar.
 */
function syntaxExpectation(e: { expected?: unknown }): string | undefined {
  if (!Array.isArray(e.expected)) return undefined;
  const literals = new Set<string>();
  let stringContent = false;
  for (const x of e.expected as { type?: string; text?: string; inverted?: boolean }[]) {
    if (x.type === 'literal' && typeof x.text === 'string') literals.add(x.text);
    if (x.type === 'class' && x.inverted === true) stringContent = true;
  }
  if (literals.has('true') && literals.has('"')) {
    const value = 'a value: a quoted string, a number, true or false, an [array] or an { inline table }';
    return literals.has(']') ? `${value}, or ] to close the array` : value;
  }
  if (stringContent && literals.has('"')) return 'the closing " on the same line (use """ for text over several lines)';
  if (stringContent && literals.has("'")) return "the closing ' on the same line";
  if (literals.has('=')) return '= after the key';
  if (literals.has(']')) return '] to close the table header';
  if (literals.has('\n') || literals.has('#')) return 'the end of the line: one key = value per line';
  const list = [...literals].map((l) => JSON.stringify(l));
  return list.length > 0 ? list.slice(0, 6).join(', ') : undefined;
}

/**
 * toml 5's errors that are not grammar: an integer outside TOML's 64-bit signed range (TOML 1.0,
 * "Integer"), a 64-bit integer beyond 2^53 that a JavaScript number cannot hold exactly (no key, durations
 * in ms included, needs one), and nesting deeper than the parser's limit of 500.
 */
function semanticError(message: string): { code: DiagnosticCode; message: string; expected?: string } {
  if (/outside the 64-bit signed integer range/.test(message)) {
    return {
      code: 'CONFIG_INTEGER',
      message: 'integer outside the 64-bit signed range TOML allows',
      expected: `an integer from -2^63 to 2^63-1, at most ${Number.MAX_SAFE_INTEGER} for any key`,
    };
  }
  if (/cannot be represented losslessly/.test(message)) {
    return {
      code: 'CONFIG_INTEGER',
      message: 'integer too large: no key (a duration or size included) holds more than 2^53-1',
      expected: `at most ${Number.MAX_SAFE_INTEGER}`,
    };
  }
  if (/nesting depth/i.test(message)) {
    const limit = /(\d+)/.exec(message)?.[1];
    return {
      code: 'CONFIG_NESTING',
      message: `arrays or inline tables nested too deep${limit !== undefined ? ` (more than ${limit} levels)` : ''}`,
      expected: 'a value nested a few levels at most',
    };
  }
  return { code: 'CONFIG_SYNTAX', message: `invalid TOML: ${message.length > 200 ? `${message.slice(0, 197)}...` : message}` };
}

function merge(into: Record<string, unknown>, from: Record<string, unknown>): void {
  for (const [k, v] of Object.entries(from)) {
    const before = Object.prototype.hasOwnProperty.call(into, k) ? into[k] : undefined;
    if (before === undefined) setOwn(into, k, v);
    else if (isTable(before) && isTable(v)) merge(before, v);
  }
}

/**
 * `[throughway.throttling] counter_store = "traffic-manager"` publishes counts and receives decisions over
 * Redis (docs/throttling.md): without a redis:// URL in the keys decisionHubUrl reads, no node could ever
 * hear another, so the file is refused at the key that asked for it.
 */
function checkDecisionHub(loader: Loader): void {
  const doc = loader.doc as unknown as DeploymentConfig;
  if (doc.throughway?.throttling?.counter_store !== 'traffic-manager' || decisionHubUrl(doc) !== undefined) return;
  loader.report(
    'error',
    'CONFIG_REQUIRED',
    ['throughway', 'throttling', 'counter_store'],
    'counter_store = "traffic-manager" needs a redis:// URL in [apim.throttling] throttle_decision_endpoints (or [apim.event_hub] event_listening_endpoints / event_duplicate_url): the traffic manager and the gateways meet on that Redis',
    { expected: 'throttle_decision_endpoints = ["redis://host:6379"]', secret: false },
  );
}

/**
 * [apim.cors] allow_credentials = true with the origin "*": spec 000 ("then allow_origins must not be *"),
 * which the gateway's CorsPolicy refuses at start (lib/gateway/cors.ts); reported here so `config check`
 * refuses what `start` refuses.
 */
function checkCors(loader: Loader): void {
  const cors = (loader.doc as unknown as DeploymentConfig).apim?.cors;
  if (cors === undefined || cors.enable !== true || cors.allow_credentials !== true) return;
  if (!cors.allow_origins.some((o) => o.trim() === '*')) return;
  loader.report(
    'error',
    'CONFIG_CONFLICT',
    ['apim', 'cors', 'allow_credentials'],
    'allow_credentials = true needs explicit allow_origins, not "*" (spec 000, [apim.cors]: "then allow_origins must not be *")',
    { expected: 'allow_origins = ["https://app.example.com"] with allow_credentials, or allow_credentials = false', secret: false },
  );
}

/**
 * Loads, validates and freezes deployment.toml. Never throws: every problem is a diagnostic; a result with
 * errors throws only when its `config` or `ports` is read (docs/embedding.md).
 */
export function loadConfig(options: LoadOptions = {}): LoadResult {
  const fileOption = options.file ?? (options.text === undefined ? path.join('conf', 'deployment.toml') : undefined);
  const file = fileOption !== undefined ? path.resolve(fileOption) : '';
  const dir = file !== '' ? path.dirname(file) : process.cwd();
  const display = fileOption ?? '<text>';
  let text = options.text;
  let ioError: string | undefined;
  if (text === undefined) {
    const read = readText(file);
    if (read.ok) text = read.text;
    else {
      ioError = read.missing ? 'file not found' : `cannot read the file (${read.message})`;
      text = '';
    }
  }
  text = stripBom(text);
  const loader = new Loader(text, display, options, dir);
  if (ioError !== undefined) loader.report('error', 'CONFIG_IO', [], ioError, { secret: false });
  else loader.parse();
  loader.doc = loader.normalise(loader.doc) as Record<string, unknown>;
  loader.match();
  loader.fillDefaults();
  loader.resolveAll();
  loader.convertAll();
  loader.fillStores();
  // A syntax error drops a line: its keys would be reported missing, which is noise, not news.
  if (!loader.syntaxFailed && ioError === undefined) loader.checkRequired();
  const ports = effectivePorts(loader.doc, (segments, message, expected, code) =>
    loader.report('error', code, segments, message, { expected, secret: false }),
  );
  if (!loader.syntaxFailed && ioError === undefined) {
    checkDecisionHub(loader);
    checkCors(loader);
  }
  if (!loader.syntaxFailed && ioError === undefined && options.startChecks === true) {
    loader.checkStoreFiles();
    loader.checkCertificateFiles();
    loader.checkDatabaseType();
  }
  const diagnostics = sortDiagnostics(loader.diagnostics);
  const ok = !diagnostics.some((d) => d.level === 'error');
  const written = loader.writtenKeys();
  const result = {
    ok,
    config: loader.doc as unknown as DeploymentConfig,
    ports,
    diagnostics,
    inactive: [...loader.inactive].sort(),
    inactiveKeys: [...loader.inactiveKeys].sort(),
    notActedOn: written.notActedOn,
    writtenStatus: written.counts,
    written: written.written,
    tables: new Set(loader.written),
    secrets: loader.secretPaths(),
    file,
    dir,
  };
  if (!ok) failLoudly(result, display);
  return deepFreeze(result);
}

/**
 * A result with errors cannot be used by mistake (docs/embedding.md): reading its `config` or `ports`
 * throws ConfigInvalidError (code CONFIG_INVALID) naming the first errors, so `createGateway({ loaded })`,
 * `openStore(loaded.config, ...)` and the like fail at once instead of running on the defaults.
 * `ok`, `diagnostics` and the rest stay readable; the two properties are left out of spreads and JSON.
 */
function failLoudly(result: { config: unknown; ports: unknown; diagnostics: readonly Diagnostic[] }, display: string): void {
  const errors = result.diagnostics.filter((d) => d.level === 'error');
  const first = errors
    .slice(0, 3)
    .map((d) => formatDiagnostic(d).split('\n')[0] ?? '')
    .join('; ');
  const message = `${display}: the configuration has ${errors.length} error(s), so it cannot be used: ${first}${errors.length > 3 ? '; ...' : ''} (check result.ok and result.diagnostics first; \`throughway config check\` lists them all)`;
  for (const name of ['config', 'ports'] as const) {
    Object.defineProperty(result, name, {
      enumerable: false,
      configurable: false,
      get(): never {
        throw new ConfigInvalidError(message);
      },
    });
  }
}
