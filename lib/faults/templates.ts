/**
 * Custom fault templates (spec 002, part 7, rule 4): the reference lets an extra sequence build a new fault
 * body from ERROR_CODE and ERROR_MESSAGE and set a custom HTTP status. throughway reads the same intent
 * from one TOML file (`[throughway] fault_templates_file`, default `fault-templates.toml` next to
 * deployment.toml):
 *
 *     [[template]]
 *     codes = [900901, 900902]        # combined codes: exactly these
 *     bases = [101503]                # transport base codes: every state (101503 + 0..8)
 *     status = 401                    # optional: replaces the HTTP status
 *     content_type = "application/json"
 *     body = '{"error":{"code":{code},"message":"{message}","detail":"{description}"}}'
 *
 * Placeholders: {code}, {message}, {description}, {status} (the default status), {base}, {state}. Values are
 * escaped for the content type (JSON string escapes for json types, XML escapes for xml/html), so a
 * description can never break the body's syntax. A combined-code match wins over a base match.
 */
import * as fs from 'node:fs';
import * as toml from 'toml';
import { locateKeys, nearest, type Segment } from '../config/locate';
import { closest } from '../config/diagnostics';
import type { FaultFacts } from './index';
import { type ApiDiagnostic, syntaxDiagnostic } from '../gateway/diagnostics';

export interface RenderedTemplate {
  readonly status: number;
  readonly contentType: string;
  readonly body: string;
}

export interface FaultTemplate {
  /** 1-based index of the [[template]] entry, for messages. */
  readonly index: number;
  readonly line: number;
  render(f: FaultFacts): RenderedTemplate;
}

export interface FaultTemplates {
  readonly file: string;
  readonly size: number;
  find(code: number, base: number): FaultTemplate | undefined;
}

const TEMPLATE_FIELDS = ['codes', 'bases', 'status', 'content_type', 'body'] as const;
const PLACEHOLDER = /\{(code|message|description|status|base|state)\}/g;

type Escape = (s: string) => string;

const jsonEscape: Escape = (s) => JSON.stringify(s).slice(1, -1);
const xmlEscape: Escape = (s) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const noEscape: Escape = (s) => s;

function escapeFor(contentType: string): Escape {
  const t = contentType.toLowerCase();
  if (t.includes('json')) return jsonEscape;
  if (t.includes('xml') || t.includes('html')) return xmlEscape;
  return noEscape;
}

class Template implements FaultTemplate {
  private readonly escape: Escape;
  constructor(
    readonly index: number,
    readonly line: number,
    private readonly status: number | undefined,
    private readonly contentType: string,
    private readonly body: string,
  ) {
    this.escape = escapeFor(contentType);
  }

  render(f: FaultFacts): RenderedTemplate {
    const esc = this.escape;
    const body = this.body.replace(PLACEHOLDER, (_m, name: string) => {
      switch (name) {
        case 'code':
          return String(f.code);
        case 'message':
          return esc(f.message);
        case 'description':
          return esc(f.description);
        case 'status':
          return String(f.status);
        case 'base':
          return String(f.base);
        default:
          return f.state < 0 ? '' : String(f.state);
      }
    });
    return { status: this.status ?? f.status, contentType: this.contentType, body };
  }
}

class TemplateSet implements FaultTemplates {
  readonly byCode = new Map<number, Template>();
  readonly byBase = new Map<number, Template>();
  constructor(readonly file: string) {}
  get size(): number {
    return new Set([...this.byCode.values(), ...this.byBase.values()]).size;
  }
  find(code: number, base: number): FaultTemplate | undefined {
    if (this.byCode.size === 0 && this.byBase.size === 0) return undefined;
    return this.byCode.get(code) ?? this.byBase.get(base);
  }
}

export interface TemplatesResult {
  readonly templates: FaultTemplates | undefined;
  readonly diagnostics: readonly ApiDiagnostic[];
}

/** Reads the templates file; a missing file is no templates (not an error). Bad entries are skipped. */
export function loadFaultTemplates(file: string): TemplatesResult {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { templates: undefined, diagnostics: [] };
    return { templates: undefined, diagnostics: [{ level: 'error', code: 'API_IO', file, line: 0, field: '', message: `cannot read the fault templates file (${(err as Error).message})` }] };
  }
  return parseFaultTemplates(text, file);
}

export function parseFaultTemplates(text: string, file: string): TemplatesResult {
  const diagnostics: ApiDiagnostic[] = [];
  let doc: Record<string, unknown>;
  try {
    doc = toml.parse(text) as Record<string, unknown>;
  } catch (err) {
    return { templates: undefined, diagnostics: [syntaxDiagnostic(err, file, text)] };
  }
  const map = locateKeys(text);
  const report = (level: 'error' | 'warning', segments: Segment[], field: string, message: string, expected?: string): void => {
    const at = nearest(map, segments);
    const d: ApiDiagnostic = { level, code: level === 'warning' ? 'API_UNKNOWN_FIELD' : 'API_VALUE', file, line: at?.line ?? 0, field, message };
    diagnostics.push(expected === undefined ? d : { ...d, expected });
  };
  for (const key of Object.keys(doc)) {
    if (key !== 'template') {
      const near = closest(key, ['template']);
      report('warning', [key], key, `unknown table or key${near !== undefined ? `; did you mean "${near}"?` : ''}`);
    }
  }
  const set = new TemplateSet(file);
  const list = doc.template;
  if (list !== undefined && !Array.isArray(list)) {
    report('error', ['template'], 'template', 'must be an array of tables, written [[template]]');
    return { templates: undefined, diagnostics };
  }
  (list ?? []).forEach((raw: unknown, i: number) => {
    const seg: Segment[] = ['template', i];
    const where = `template[${i}]`;
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
      report('error', seg, where, 'must be a table');
      return;
    }
    const entry = raw as Record<string, unknown>;
    for (const k of Object.keys(entry)) {
      if (!(TEMPLATE_FIELDS as readonly string[]).includes(k)) {
        const near = closest(k, TEMPLATE_FIELDS);
        report('warning', [...seg, k], `${where}.${k}`, `unknown field${near !== undefined ? `; did you mean "${near}"?` : ''}`);
      }
    }
    let ok = true;
    const codeList = (name: 'codes' | 'bases'): number[] => {
      const v = entry[name];
      if (v === undefined) return [];
      const arr = Array.isArray(v) ? v : [v];
      if (!arr.every((n) => typeof n === 'number' && Number.isInteger(n) && n > 0)) {
        report('error', [...seg, name], `${where}.${name}`, 'must be a list of fault codes', 'integers such as [900901, 101504]');
        ok = false;
        return [];
      }
      return arr as number[];
    };
    const codes = codeList('codes');
    const bases = codeList('bases');
    if (ok && codes.length === 0 && bases.length === 0) {
      report('error', seg, where, 'names no code: give codes = [...] (combined codes) or bases = [...] (base codes, every state)');
      ok = false;
    }
    let status: number | undefined;
    if (entry.status !== undefined) {
      const s = entry.status;
      if (typeof s !== 'number' || !Number.isInteger(s) || s < 200 || s > 599) {
        report('error', [...seg, 'status'], `${where}.status`, `is not an HTTP status`, 'an integer 200..599');
        ok = false;
      } else status = s;
    }
    const contentType = entry.content_type ?? 'application/json; charset=UTF-8';
    if (typeof contentType !== 'string' || contentType.trim() === '' || /[\r\n]/.test(contentType)) {
      report('error', [...seg, 'content_type'], `${where}.content_type`, 'must be a media type', 'e.g. "application/json"');
      ok = false;
    }
    const body = entry.body;
    if (typeof body !== 'string') {
      report('error', [...seg, 'body'], `${where}.body`, body === undefined ? 'is required' : 'must be a string');
      ok = false;
    }
    if (!ok) return;
    const t = new Template(i + 1, nearest(map, seg)?.line ?? 0, status, contentType as string, body as string);
    for (const c of codes) addOnce(set.byCode, c, t, report, seg, where, 'codes');
    for (const b of bases) addOnce(set.byBase, b, t, report, seg, where, 'bases');
  });
  return { templates: set, diagnostics };
}

function addOnce(
  target: Map<number, Template>,
  code: number,
  t: Template,
  report: (level: 'error' | 'warning', segments: Segment[], field: string, message: string) => void,
  seg: Segment[],
  where: string,
  name: string,
): void {
  const other = target.get(code);
  if (other !== undefined) {
    report('warning', [...seg, name], `${where}.${name}`, `code ${code} already has template ${other.index} (line ${other.line}); the first one is used`);
    return;
  }
  target.set(code, t);
}
