/**
 * What mediation does to a payload, as plain functions over bytes: validate JSON and XML (naming where
 * the error is), read a body into a value for scripts and write a value back (the message builders and
 * formatters of every built-in format), and convert JSON <-> XML. The
 * same functions run inline (small bodies) and in the worker threads (large ones, lib/mediation/worker.ts).
 */
import type * as Xml from 'fast-xml-parser';
import { load } from '../config/packages';

/** fast-xml-parser, loaded when the first XML is read (lib/config/packages.ts). */
const xmlLib = (): typeof Xml => load<typeof Xml>('fast-xml-parser', 'XML mediation');
import { MultipartError, boundaryOf, parseMultipart, writeMultipart } from './multipart';

/** The built-in message builders and formatters (spec 001 maps content types to classes; these are ours). */
export const FORMATS = ['json', 'xml', 'form', 'multipart', 'text', 'binary'] as const;
export type Format = (typeof FORMATS)[number];

/** Where a payload is malformed: the parser's words and a position a client can find. */
export interface PayloadError {
  readonly format: 'json' | 'xml';
  readonly message: string;
  readonly line: number;
  readonly column: number;
}

/** JSON <-> XML switches of [mediation] (spec 001, engine.*). */
export interface ConversionOptions {
  /** engine.preserve_namespace_on_xml_to_json: keep prefixes and xmlns declarations in JSON output. */
  readonly preserveNamespace: boolean;
  /** engine.json_out_auto_array: every repeatable element is a JSON array, even when it occurs once. */
  readonly autoArray: boolean;
  /** engine.enable_auto_primitive: numbers and booleans in XML text become JSON numbers and booleans. */
  readonly autoPrimitive: boolean;
  /** engine.disable_auto_primitive_regex: values it matches stay strings under autoPrimitive (source text; a worker compiles it). */
  readonly primitiveExempt?: string;
  /** engine.enable_xml_nil: JSON null <-> an element with xsi:nil="true" (else null is an empty element). */
  readonly xmlNil?: boolean;
  /** engine.enable_namespace_declaration: xmlns declarations stay in JSON output even when prefixes are removed. */
  readonly namespaceDeclarations?: boolean;
  /** engine.build_valid_nc_name: JSON keys that are no XML names are encoded (_xHHHH_) to XML and decoded back. */
  readonly validNcNames?: boolean;
}

function text(body: Buffer): string {
  // RFC 8259 §8.1: no BOM is sent, but a parser may ignore one; so does the reference's builder.
  const s = body.toString('utf8');
  return s.charCodeAt(0) === 0xfeff ? s.slice(1) : s;
}

// --- validation -------------------------------------------------------------------------------------------

/** undefined when `body` is one valid JSON text (RFC 8259), else where it is not. */
export function validateJson(body: Buffer): PayloadError | undefined {
  const s = text(body);
  try {
    JSON.parse(s);
    return undefined;
  } catch (err) {
    // V8's messages give a position only for some errors: find it ourselves (error path only).
    const at = jsonErrorOffset(s);
    const { line, column } = lineColumn(s, at < 0 ? s.length : at);
    const what = at >= s.length ? 'unexpected end of JSON input' : at >= 0 ? `unexpected ${describeChar(s, at)}` : (err as Error).message;
    return { format: 'json', message: what, line, column };
  }
}

/** undefined when `body` is well-formed XML, else the validator's error and position. */
export function validateXml(body: Buffer): PayloadError | undefined {
  const r = xmlLib().XMLValidator.validate(text(body));
  if (r === true) return undefined;
  return { format: 'xml', message: r.err.msg, line: r.err.line, column: r.err.col };
}

export function validate(format: 'json' | 'xml', body: Buffer): PayloadError | undefined {
  return format === 'json' ? validateJson(body) : validateXml(body);
}

export function describeError(e: PayloadError): string {
  return `Malformed ${e.format === 'json' ? 'JSON' : 'XML'} payload at line ${e.line}, column ${e.column}: ${e.message}`;
}

function describeChar(s: string, at: number): string {
  const c = s.charCodeAt(at);
  return c < 0x20 ? `control character U+${c.toString(16).padStart(4, '0').toUpperCase()}` : `character '${s[at]}'`;
}

function lineColumn(s: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < offset && i < s.length; i++) {
    if (s.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: offset - lineStart + 1 };
}

const enum J {
  VALUE,
  KEY,
  AFTER,
}

/**
 * The offset of the first character that makes `s` invalid JSON (RFC 8259 grammar), s.length for an
 * early end, -1 when valid. Iterative: a deeply nested body cannot overflow the stack.
 */
export function jsonErrorOffset(s: string): number {
  const n = s.length;
  const stack: number[] = []; // 1: array, 2: object
  let i = 0;
  let state = J.VALUE;
  const ws = (): void => {
    while (i < n) {
      const c = s.charCodeAt(i);
      if (c === 32 || c === 9 || c === 10 || c === 13) i++;
      else break;
    }
  };
  const str = (): boolean => {
    i++; // the opening quote
    while (i < n) {
      const c = s.charCodeAt(i);
      if (c === 34) {
        i++;
        return true;
      }
      if (c < 0x20) return false;
      if (c === 92) {
        const e = s.charCodeAt(i + 1);
        if (e === 117) {
          for (let k = 2; k < 6; k++) {
            if (!/[0-9a-fA-F]/.test(s[i + k] ?? '')) {
              i += k;
              return false;
            }
          }
          i += 6;
          continue;
        }
        if (!'"\\/bfnrt'.includes(s[i + 1] ?? 'x') || i + 1 >= n) {
          i++;
          return false;
        }
        i += 2;
        continue;
      }
      i++;
    }
    return false;
  };
  const digits = (): number => {
    const start = i;
    while (i < n && s.charCodeAt(i) >= 48 && s.charCodeAt(i) <= 57) i++;
    return i - start;
  };
  const num = (): boolean => {
    if (s.charCodeAt(i) === 45) i++;
    if (s.charCodeAt(i) === 48) i++;
    else if (digits() === 0) return false;
    if (s.charCodeAt(i) === 46) {
      i++;
      if (digits() === 0) return false;
    }
    const e = s.charCodeAt(i);
    if (e === 101 || e === 69) {
      i++;
      const sign = s.charCodeAt(i);
      if (sign === 43 || sign === 45) i++;
      if (digits() === 0) return false;
    }
    return true;
  };
  for (;;) {
    ws();
    if (state === J.VALUE) {
      if (i >= n) return n;
      const c = s[i] as string;
      if (c === '{') {
        i++;
        ws();
        if (s[i] === '}') {
          i++;
          state = J.AFTER;
        } else {
          stack.push(2);
          state = J.KEY;
        }
      } else if (c === '[') {
        i++;
        ws();
        if (s[i] === ']') {
          i++;
          state = J.AFTER;
        } else stack.push(1);
      } else if (c === '"') {
        if (!str()) return i;
        state = J.AFTER;
      } else if (c === '-' || (c >= '0' && c <= '9')) {
        if (!num()) return i;
        state = J.AFTER;
      } else {
        const lit = c === 't' ? 'true' : c === 'f' ? 'false' : c === 'n' ? 'null' : '';
        if (lit === '') return i;
        for (let k = 0; k < lit.length; k++) if (s[i + k] !== lit[k]) return i + k;
        i += lit.length;
        state = J.AFTER;
      }
    } else if (state === J.KEY) {
      if (i >= n) return n;
      if (s[i] !== '"' || !str()) return i;
      ws();
      if (i >= n) return n;
      if (s[i] !== ':') return i;
      i++;
      state = J.VALUE;
    } else {
      if (stack.length === 0) return i < n ? i : -1;
      if (i >= n) return n;
      const top = stack[stack.length - 1];
      const c = s[i];
      if (c === ',') {
        i++;
        state = top === 2 ? J.KEY : J.VALUE;
      } else if ((top === 1 && c === ']') || (top === 2 && c === '}')) {
        i++;
        stack.pop();
      } else return i;
    }
  }
}

// --- values for scripts -----------------------------------------------------------------------------------

/**
 * A body as a script sees it (docs/mediation.md, "Message builders"): JSON parsed; form fields as an
 * object (a repeated name gives an array); multipart as an array of parts (lib/mediation/multipart.ts);
 * text and XML as a string; binary as { base64 }; an empty body as undefined. Throws MultipartError for a
 * multipart body that does not follow RFC 2046 framing; JSON.parse's error for malformed JSON.
 */
export function readValue(format: Format, body: Buffer, contentType?: string): unknown {
  if (body.length === 0) return format === 'text' || format === 'xml' ? '' : undefined;
  switch (format) {
    case 'json':
      return JSON.parse(text(body)) as unknown;
    case 'form':
      return formValue(body);
    case 'multipart': {
      const boundary = boundaryOf(contentType);
      if (boundary === undefined) throw new MultipartError('the Content-Type has no boundary parameter (RFC 2046 §5.1.1)');
      return parseMultipart(body, boundary);
    }
    case 'text':
    case 'xml':
      return text(body);
    default:
      return { base64: body.toString('base64') };
  }
}

/** application/x-www-form-urlencoded (WHATWG URL §5.1, UTF-8): name -> value, repeated names -> arrays. */
function formValue(body: Buffer): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of new URLSearchParams(body.toString('utf8'))) {
    const had = out[k];
    out[k] = had === undefined ? v : Array.isArray(had) ? [...had, v] : [had, v];
  }
  return out;
}

function formBytes(value: object): Buffer {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (v === undefined || v === null) continue;
    if (Array.isArray(v)) for (const x of v) p.append(k, String(x));
    else p.append(k, typeof v === 'object' ? JSON.stringify(v) : String(v));
  }
  return Buffer.from(p.toString(), 'latin1');
}

/**
 * A script's body value back to bytes in the message's format. A string is sent as UTF-8, whatever the
 * format; for binary, a { base64 } object is sent as its bytes; a form object is encoded; an array of parts is
 * framed with the message's boundary (`contentType` says a new one is needed when a part contains it).
 * Throws MultipartError for parts it cannot write.
 */
export function writeValue(format: Format, value: unknown, contentType?: string): { body: Buffer; contentType?: string } {
  if (typeof value === 'string') return { body: Buffer.from(value, 'utf8') };
  if (Buffer.isBuffer(value)) return { body: value };
  if (value instanceof Uint8Array) return { body: Buffer.from(value) };
  if (
    format === 'binary' &&
    value !== null &&
    typeof value === 'object' &&
    !Array.isArray(value) &&
    typeof (value as { base64?: unknown }).base64 === 'string' &&
    Object.keys(value).length === 1
  ) {
    return { body: Buffer.from((value as { base64: string }).base64, 'base64') };
  }
  if (format === 'form' && value !== null && typeof value === 'object' && !Array.isArray(value)) return { body: formBytes(value) };
  if (format === 'multipart') {
    const w = writeMultipart(value, boundaryOf(contentType));
    return w.changed ? { body: w.body, contentType: `multipart/form-data; boundary=${w.boundary}` } : { body: w.body };
  }
  return { body: Buffer.from(JSON.stringify(value ?? null), 'utf8') };
}

// --- JSON <-> XML -----------------------------------------------------------------------------------------

/** The reference's element names for JSON that has no single root (a top-level array or several keys). */
const JSON_OBJECT = 'jsonObject';
const JSON_ARRAY = 'jsonArray';
const JSON_ELEMENT = 'jsonElement';
const ATTR = '@';
const TEXT = '#text';

const XSI = 'http://www.w3.org/2001/XMLSchema-instance';

/**
 * An XML NCName (Namespaces in XML 1.0, section 3) in its ASCII-and-letters form: a letter or `_` first,
 * then letters, digits, `_`, `-`, `.`. Other characters are written `_xHHHH_` (the hex of the UTF-16
 * unit, the convention of .NET's XmlConvert.EncodeName), and so is a `_x` that could be misread as one.
 */
const NC_START = /[\p{L}_]/u;
const NC_CHAR = /[\p{L}\p{N}_.-]/u;
export function encodeNcName(key: string): string {
  if (key === '') return '_x0000_';
  let out = '';
  for (let i = 0; i < key.length; i++) {
    const c = key[i] as string;
    const ok = i === 0 ? NC_START.test(c) : NC_CHAR.test(c);
    const escapeUnderscore = c === '_' && key[i + 1] === 'x' && /^_x[0-9A-Fa-f]{4}_/.test(key.slice(i));
    out += ok && !escapeUnderscore ? c : `_x${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}_`;
  }
  return out;
}

export function decodeNcName(name: string): string {
  return name.replace(/_x([0-9A-Fa-f]{4})_/g, (_m, h: string) => (h === '0000' ? '' : String.fromCharCode(parseInt(h, 16))));
}

/** The JSON value prepared for the XML builder: nil elements and encoded names as the switches ask. */
function toXmlShape(v: unknown, o: Partial<ConversionOptions>, key = ''): unknown {
  if (v === null) return o.xmlNil === true ? { [`${ATTR}xmlns:xsi`]: XSI, [`${ATTR}xsi:nil`]: 'true' } : v;
  if (Array.isArray(v)) return v.map((x) => toXmlShape(x, o, key));
  if (typeof v !== 'object') return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
    const attrOrText = k === TEXT || k.startsWith(ATTR);
    out[o.validNcNames === true && !attrOrText ? encodeNcName(k) : k] = toXmlShape(x, o, k);
  }
  return out;
}

/** JSON text -> an XML document. One-key objects give their key as the root element. */
export function jsonToXml(body: Buffer, o: Partial<ConversionOptions> = {}): Buffer {
  let value = JSON.parse(text(body)) as unknown;
  if (o.xmlNil === true || o.validNcNames === true) value = toXmlShape(value, o);
  let root: Record<string, unknown>;
  if (Array.isArray(value)) root = { [JSON_ARRAY]: { [JSON_ELEMENT]: value } };
  else if (value !== null && typeof value === 'object' && Object.keys(value).length === 1) root = value as Record<string, unknown>;
  else root = { [JSON_OBJECT]: value };
  const builder = new (xmlLib().XMLBuilder)({
    ignoreAttributes: false,
    attributeNamePrefix: ATTR,
    textNodeName: TEXT,
    suppressBooleanAttributes: false,
  });
  return Buffer.from('<?xml version="1.0" encoding="UTF-8"?>' + builder.build(root), 'utf8');
}

/** An XML document -> JSON text, under the [mediation] switches. */
export function xmlToJson(body: Buffer, o: ConversionOptions): Buffer {
  const parser = new (xmlLib().XMLParser)({
    ignoreAttributes: false,
    attributeNamePrefix: ATTR,
    textNodeName: TEXT,
    ignoreDeclaration: true,
    ignorePiTags: true,
    // Declarations kept without prefixes: the parser would drop both, so prefixes are removed below.
    removeNSPrefix: !o.preserveNamespace && o.namespaceDeclarations !== true,
    // With exemptions the values are converted below instead (the parser has no per-value veto).
    parseTagValue: o.autoPrimitive && o.primitiveExempt === undefined,
    parseAttributeValue: o.autoPrimitive && o.primitiveExempt === undefined,
    // Every element below the document root is an array when the switch asks for it (stable shapes).
    ...(o.autoArray
      ? { isArray: (_name: string, jpath: unknown, _leaf: boolean, isAttribute: boolean) => !isAttribute && String(jpath).includes('.') }
      : {}),
  });
  // Validated while parsing: the parser alone accepts unbalanced tags.
  let value = parser.parse(text(body), true) as Record<string, unknown>;
  if (!o.preserveNamespace)
    value = (o.namespaceDeclarations === true ? stripPrefixes(value) : dropNamespaceDeclarations(value)) as Record<string, unknown>;
  if (o.xmlNil === true || o.validNcNames === true || (o.autoPrimitive && o.primitiveExempt !== undefined))
    value = fromXmlShape(value, o, exemptRegex(o.primitiveExempt)) as Record<string, unknown>;
  // The reference's wrappers are unwrapped again, so a JSON -> XML -> JSON round trip gives the same JSON.
  const keys = Object.keys(value);
  let out: unknown = value;
  if (keys.length === 1) {
    const only = value[keys[0] as string];
    if (keys[0] === JSON_OBJECT) out = only;
    else if (keys[0] === JSON_ARRAY) {
      const el = only !== null && typeof only === 'object' ? (only as Record<string, unknown>)[JSON_ELEMENT] : undefined;
      out = el === undefined ? [] : Array.isArray(el) ? el : [el];
    }
  }
  return Buffer.from(JSON.stringify(out), 'utf8');
}

const regexes = new Map<string, RegExp>();
function exemptRegex(source: string | undefined): RegExp | undefined {
  if (source === undefined) return undefined;
  let r = regexes.get(source);
  if (r === undefined) {
    r = new RegExp(source);
    regexes.set(source, r);
  }
  return r;
}

/** Booleans and numbers as JSON writes them; anything else (leading zeros, `+1`, `1.`) stays text. */
const NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;
function primitive(s: string, exempt: RegExp | undefined): unknown {
  if (exempt?.test(s) === true) return s;
  if (s === 'true') return true;
  if (s === 'false') return false;
  return NUMBER.test(s) ? Number(s) : s;
}

/** Whether an element's value is only an xsi:nil="true" (with or without its prefix and declaration). */
function isNil(v: unknown): boolean {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const keys = Object.keys(v);
  const nil = keys.find((k) => k === `${ATTR}xsi:nil` || k === `${ATTR}nil`);
  return (
    nil !== undefined &&
    String((v as Record<string, unknown>)[nil]) === 'true' &&
    keys.every((k) => k === nil || k === `${ATTR}xmlns:xsi` || (k === TEXT && (v as Record<string, unknown>)[k] === ''))
  );
}

/** The parsed XML shaped as the switches ask: nil elements null, names decoded, primitives with exemptions. */
function fromXmlShape(v: unknown, o: ConversionOptions, exempt: RegExp | undefined): unknown {
  if (typeof v === 'string') return o.autoPrimitive && o.primitiveExempt !== undefined ? primitive(v, exempt) : v;
  if (Array.isArray(v)) return v.map((x) => fromXmlShape(x, o, exempt));
  if (v === null || typeof v !== 'object') return v;
  if (o.xmlNil === true && isNil(v)) return null;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v as Record<string, unknown>))
    out[o.validNcNames === true && !k.startsWith(ATTR) ? decodeNcName(k) : k] = fromXmlShape(x, o, exempt);
  return out;
}

/** Element and attribute names without their prefix; xmlns declarations kept as they are. */
function stripPrefixes(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(stripPrefixes);
  if (v === null || typeof v !== 'object') return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
    const declaration = k === `${ATTR}xmlns` || k.startsWith(`${ATTR}xmlns:`);
    const colon = k.indexOf(':');
    const name = declaration || colon < 0 ? k : `${k.startsWith(ATTR) ? ATTR : ''}${k.slice(colon + 1)}`;
    out[name] = stripPrefixes(x);
  }
  return out;
}

function dropNamespaceDeclarations(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(dropNamespaceDeclarations);
  if (v === null || typeof v !== 'object') return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
    if (k === `${ATTR}xmlns` || k.startsWith(`${ATTR}xmlns:`)) continue;
    out[k] = dropNamespaceDeclarations(x);
  }
  return out;
}

/** Convert `body` from one format to the other; other pairs are returned unchanged. */
export function convert(from: Format, to: Format, body: Buffer, o: ConversionOptions): Buffer {
  if (from === 'json' && to === 'xml') return jsonToXml(body, o);
  if (from === 'xml' && to === 'json') return xmlToJson(body, o);
  return body;
}
