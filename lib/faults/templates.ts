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
import type { Segment } from '../config/locate';
import {
  type DocumentCodes,
  type DocumentDiagnostic,
  DocumentReader,
  type FieldDef,
  isTable,
  parseDocument,
  readText,
} from '../config/document';
import type { FaultFacts } from './index';

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

/** The codes of the templates file's diagnostics (they read like an API file's, docs/apis.md). */
type TemplateCode = 'API_IO' | 'API_SYNTAX' | 'API_UNKNOWN_FIELD' | 'API_VALUE';
export type TemplateDiagnostic = DocumentDiagnostic<TemplateCode>;

const TEMPLATE_CODES: DocumentCodes<TemplateCode> = {
  io: 'API_IO',
  syntax: 'API_SYNTAX',
  unknown: 'API_UNKNOWN_FIELD',
  type: 'API_VALUE',
  required: 'API_VALUE',
  allowed: 'API_VALUE',
  value: 'API_VALUE',
};

const FAULT_CODE = {
  valid: (n: number) => n > 0,
  problem: 'is not a fault code',
  expected: 'integers such as [900901, 101504]',
  list: 'a list of fault codes',
} as const;

/** The fields of one [[template]] entry. */
export const TEMPLATE_FIELDS: readonly FieldDef[] = [
  {
    key: 'codes',
    type: 'codes',
    meaning: 'Combined fault codes this template answers: exactly these.',
    example: '[900901, 900902]',
    item: FAULT_CODE,
  },
  {
    key: 'bases',
    type: 'codes',
    meaning: 'Transport base codes this template answers in every state (base + 0..8).',
    example: '[101503]',
    item: FAULT_CODE,
  },
  { key: 'status', type: 'integer', min: 200, max: 599, meaning: "Replaces the HTTP status of the fault (default: the fault's own)." },
  {
    key: 'content_type',
    type: 'string',
    default: 'application/json; charset=UTF-8',
    meaning: 'Content-Type of the body; values are escaped for it (JSON, XML or HTML).',
  },
  {
    key: 'body',
    type: 'string',
    required: true,
    meaning: 'The body, with {code}, {message}, {description}, {status}, {base} and {state} placeholders.',
  },
];

export interface TemplatesResult {
  readonly templates: FaultTemplates | undefined;
  readonly diagnostics: readonly TemplateDiagnostic[];
}

/** Reads the templates file; a missing file is no templates (not an error). Bad entries are skipped. */
export function loadFaultTemplates(file: string): TemplatesResult {
  const read = readText(file);
  if (!read.ok) {
    if (read.missing) return { templates: undefined, diagnostics: [] };
    return {
      templates: undefined,
      diagnostics: [
        { level: 'error', code: 'API_IO', file, line: 0, field: '', message: `cannot read the fault templates file (${read.message})` },
      ],
    };
  }
  return parseFaultTemplates(read.text, file);
}

const noCodes = (v: unknown): boolean => v === undefined || (Array.isArray(v) && v.length === 0);

export function parseFaultTemplates(text: string, file: string): TemplatesResult {
  const parsed = parseDocument(text, file, TEMPLATE_CODES);
  if (!parsed.ok) return { templates: undefined, diagnostics: [parsed.diagnostic] };
  const r = new DocumentReader(file, parsed.map, TEMPLATE_CODES, {
    columns: false,
    wording: { required: () => ({ message: 'is required' }) },
  });
  const doc = isTable(parsed.doc) ? parsed.doc : {};
  r.unknownKeys(['template'], doc, [], { noun: 'table or key' });
  const set = new TemplateSet(file);
  const list = doc.template;
  if (list !== undefined && !Array.isArray(list)) {
    r.report('error', 'API_VALUE', ['template'], 'must be an array of tables, written [[template]]');
    return { templates: undefined, diagnostics: r.diagnostics };
  }
  (list ?? []).forEach((raw: unknown, i: number) => {
    const seg: Segment[] = ['template', i];
    if (!isTable(raw)) {
      r.report('error', 'API_VALUE', seg, 'must be a table');
      return;
    }
    const entry = r.checkTable(TEMPLATE_FIELDS, raw, seg);
    let ok = entry !== undefined;
    if (noCodes(raw.codes) && noCodes(raw.bases)) {
      r.report('error', 'API_VALUE', seg, 'names no code: give codes = [...] (combined codes) or bases = [...] (base codes, every state)');
      ok = false;
    }
    const contentType = raw.content_type;
    if (typeof contentType === 'string' && (contentType.trim() === '' || /[\r\n]/.test(contentType))) {
      r.report('error', 'API_VALUE', [...seg, 'content_type'], 'must be a media type', 'e.g. "application/json"');
      ok = false;
    }
    if (!ok || entry === undefined) return;
    const t = new Template(i + 1, r.line(seg), entry.status as number | undefined, entry.content_type as string, entry.body as string);
    for (const c of (entry.codes ?? []) as readonly number[]) addOnce(set.byCode, c, t, r, seg, 'codes');
    for (const b of (entry.bases ?? []) as readonly number[]) addOnce(set.byBase, b, t, r, seg, 'bases');
  });
  return { templates: set, diagnostics: r.diagnostics };
}

function addOnce(
  target: Map<number, Template>,
  code: number,
  t: Template,
  r: DocumentReader<TemplateCode>,
  seg: Segment[],
  name: string,
): void {
  const other = target.get(code);
  if (other !== undefined) {
    r.report(
      'warning',
      'API_UNKNOWN_FIELD',
      [...seg, name],
      `code ${code} already has template ${other.index} (line ${other.line}); the first one is used`,
    );
    return;
  }
  target.set(code, t);
}
