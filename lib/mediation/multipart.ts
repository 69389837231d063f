/**
 * The multipart/form-data message builder and formatter (spec 001 [message_builders] multipart_form_data,
 * RFC 7578 on RFC 2046 §5.1): a body split at its boundary into parts a script can read and change, and
 * parts written back with the same boundary. Our own parser, not a package: the body is already gathered
 * (bounded by [throughway.mediation] max_body), so a streaming parser would buy nothing, and the limits
 * below are the ones a gateway needs against a hostile body (many tiny parts, endless header blocks).
 */
import { isUtf8 } from 'node:buffer';
import { randomBytes } from 'node:crypto';
import { ThroughwayError } from '../errors';

/** At most this many parts per body (a body of empty parts costs ~50 bytes each). */
export const MAX_PARTS = 1000;
/** At most this many bytes in one part's header block (RFC 7578 §4.8 asks only for Content-* fields). */
export const MAX_PART_HEADER_BYTES = 8192;

/** A part's body as a script sees it: text as a string, anything else as base64. */
export type PartBody = string | { readonly base64: string };

/** One part (docs/mediation.md, "Message builders"). */
export interface MultipartPart {
  /** Content-Disposition's name parameter (RFC 7578 §4.2). */
  readonly name?: string;
  /** Content-Disposition's filename parameter, when the part is a file. */
  readonly filename?: string;
  /** The part's Content-Type; absent means text/plain (RFC 7578 §4.4). */
  readonly contentType?: string;
  /** The part's other fields, lower-case name -> value (Content-Disposition and Content-Type excluded). */
  readonly headers?: Readonly<Record<string, string>>;
  readonly body: PartBody;
}

export class MultipartError extends ThroughwayError {
  readonly code = 'MALFORMED_MULTIPART';
}

/** The boundary parameter of a multipart Content-Type (RFC 2046 §5.1.1: 1-70 characters, maybe quoted). */
export function boundaryOf(contentType: string | undefined): string | undefined {
  if (contentType === undefined) return undefined;
  const m = /;\s*boundary\s*=\s*(?:"((?:[^"\\]|\\.)+)"|([^;\s]+))/i.exec(contentType);
  if (m === null) return undefined;
  const b = m[1] !== undefined ? m[1].replace(/\\(.)/g, '$1') : (m[2] as string);
  return b.length === 0 || b.length > 70 ? undefined : b;
}

/** Types whose bodies a script gets as a string (when the bytes are UTF-8); the rest as base64. */
function textual(type: string | undefined): boolean {
  if (type === undefined) return true;
  const t = type.split(';', 1)[0]?.trim().toLowerCase() ?? '';
  return (
    t.startsWith('text/') ||
    t === 'application/json' ||
    t === 'application/xml' ||
    t === 'application/x-www-form-urlencoded' ||
    t.endsWith('+json') ||
    t.endsWith('+xml')
  );
}

/** A Content-Disposition parameter (quoted-string or token; RFC 7578 §4.2, RFC 6266 §4.1). */
function param(value: string, key: string): string | undefined {
  const re = new RegExp(`;\\s*${key}\\s*=\\s*(?:"((?:[^"\\\\]|\\\\.)*)"|([^;\\s]*))`, 'i');
  const m = re.exec(value);
  if (m === null) return undefined;
  return m[1] !== undefined ? m[1].replace(/\\(.)/g, '$1') : m[2];
}

const CRLF = Buffer.from('\r\n');
const HEADER_END = Buffer.from('\r\n\r\n');

/** Splits `body` at `boundary`; throws MultipartError saying what is wrong. */
export function parseMultipart(body: Buffer, boundary: string): MultipartPart[] {
  const delimiter = Buffer.from(`--${boundary}`, 'latin1');
  const inner = Buffer.from(`\r\n--${boundary}`, 'latin1');
  // The first delimiter opens the body or ends the preamble, which is ignored (RFC 2046 §5.1.1).
  let at: number;
  if (body.subarray(0, delimiter.length).equals(delimiter)) at = delimiter.length;
  else {
    const i = body.indexOf(inner);
    if (i < 0) throw new MultipartError(`no boundary "${boundary}" in the body`);
    at = i + inner.length;
  }
  const parts: MultipartPart[] = [];
  for (;;) {
    // After a delimiter: "--" closes the body; otherwise optional linear white space, then CRLF.
    if (body[at] === 0x2d && body[at + 1] === 0x2d) return parts;
    while (body[at] === 0x20 || body[at] === 0x09) at++;
    if (body[at] !== 0x0d || body[at + 1] !== 0x0a) throw new MultipartError(`a boundary line at byte ${at} is not followed by CRLF`);
    at += 2;
    if (parts.length >= MAX_PARTS) throw new MultipartError(`more than ${MAX_PARTS} parts`);
    // An empty header block: the part starts with CRLF (RFC 2046 §5.1.1 allows a part with no fields).
    let headerEnd: number;
    let bodyStart: number;
    if (body[at] === 0x0d && body[at + 1] === 0x0a) {
      headerEnd = at;
      bodyStart = at + 2;
    } else {
      const limit = Math.min(body.length, at + MAX_PART_HEADER_BYTES + HEADER_END.length);
      const e = body.subarray(0, limit).indexOf(HEADER_END, at);
      if (e < 0)
        throw new MultipartError(
          limit - at > MAX_PART_HEADER_BYTES
            ? `part ${parts.length + 1}: its header block exceeds ${MAX_PART_HEADER_BYTES} bytes`
            : `part ${parts.length + 1}: its header block does not end`,
        );
      headerEnd = e;
      bodyStart = e + 4;
    }
    const end = body.indexOf(inner, bodyStart);
    if (end < 0) throw new MultipartError(`part ${parts.length + 1} has no closing boundary`);
    parts.push(part(body.subarray(at, headerEnd), body.subarray(bodyStart, end), parts.length + 1));
    at = end + inner.length;
  }
}

function part(head: Buffer, content: Buffer, n: number): MultipartPart {
  const headers: Record<string, string> = {};
  let disposition: string | undefined;
  let contentType: string | undefined;
  // Field values are read as UTF-8: RFC 7578 §5.1 lets file names and names be sent as raw UTF-8.
  for (const line of head.length === 0 ? [] : head.toString('utf8').split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon <= 0) throw new MultipartError(`part ${n}: field line without a name: ${JSON.stringify(line.slice(0, 80))}`);
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (name === 'content-disposition') disposition = value;
    else if (name === 'content-type') contentType = value;
    else headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
  }
  const out: { name?: string; filename?: string; contentType?: string; headers?: Record<string, string>; body: PartBody } = {
    body: textual(contentType) && isUtf8(content) ? content.toString('utf8') : { base64: content.toString('base64') },
  };
  if (disposition !== undefined) {
    const name = param(disposition, 'name');
    const filename = param(disposition, 'filename');
    if (name !== undefined) out.name = name;
    if (filename !== undefined) out.filename = filename;
  }
  if (contentType !== undefined) out.contentType = contentType;
  if (Object.keys(headers).length > 0) out.headers = headers;
  return out;
}

/** RFC 7578 §4.2 and the HTML form encoding: '"', CR and LF in a name are percent-encoded. */
function quote(s: string): string {
  return `"${s.replace(/"/g, '%22').replace(/\r/g, '%0D').replace(/\n/g, '%0A')}"`;
}

function partBytes(p: unknown, i: number): { head: Buffer; content: Buffer } {
  if (p === null || typeof p !== 'object')
    throw new MultipartError(`part ${i + 1}: an object with name, body (and filename, contentType, headers)`);
  const x = p as Record<string, unknown>;
  let content: Buffer;
  if (typeof x.body === 'string') content = Buffer.from(x.body, 'utf8');
  else if (x.body !== null && typeof x.body === 'object' && typeof (x.body as { base64?: unknown }).base64 === 'string')
    content = Buffer.from((x.body as { base64: string }).base64, 'base64');
  else if (x.body === undefined) content = Buffer.alloc(0);
  else throw new MultipartError(`part ${i + 1}: body must be a string or { base64 }`);
  const lines: string[] = [];
  if (x.name !== undefined || x.filename !== undefined) {
    let d = 'form-data';
    if (x.name !== undefined) d += `; name=${quote(String(x.name))}`;
    if (x.filename !== undefined) d += `; filename=${quote(String(x.filename))}`;
    lines.push(`Content-Disposition: ${d}`);
  }
  if (x.contentType !== undefined) lines.push(`Content-Type: ${String(x.contentType)}`);
  if (x.headers !== undefined && x.headers !== null && typeof x.headers === 'object') {
    for (const [k, v] of Object.entries(x.headers as Record<string, unknown>)) {
      const lower = k.toLowerCase();
      if (lower === 'content-disposition' || lower === 'content-type') continue;
      if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(k) || /[\r\n\0]/.test(String(v)))
        throw new MultipartError(`part ${i + 1}: invalid field ${JSON.stringify(k)}`);
      lines.push(`${k}: ${String(v)}`);
    }
  }
  for (const l of lines) if (/[\r\n\0]/.test(l)) throw new MultipartError(`part ${i + 1}: CR, LF and NUL are not allowed in a field`);
  return { head: Buffer.from(lines.map((l) => `${l}\r\n`).join(''), 'utf8'), content };
}

/**
 * Parts -> a body. The boundary given is kept unless a part's bytes contain it; then a fresh one is made
 * and returned, and the caller must change the Content-Type (RFC 2046 §5.1.1: the boundary must not occur
 * in any part).
 */
export function writeMultipart(parts: unknown, boundary: string | undefined): { body: Buffer; boundary: string; changed: boolean } {
  if (!Array.isArray(parts)) throw new MultipartError('a multipart body is an array of parts');
  const built = parts.map(partBytes);
  const clash = (b: string): boolean => {
    const d = Buffer.from(`--${b}`, 'latin1');
    return built.some((p) => p.content.includes(d) || p.head.includes(d));
  };
  let b = boundary;
  let changed = false;
  while (b === undefined || clash(b)) {
    b = `throughway-${randomBytes(12).toString('hex')}`;
    changed = true;
  }
  const chunks: Buffer[] = [];
  for (const p of built) chunks.push(Buffer.from(`--${b}\r\n`, 'latin1'), p.head, CRLF, p.content, CRLF);
  chunks.push(Buffer.from(`--${b}--\r\n`, 'latin1'));
  return { body: Buffer.concat(chunks), boundary: b, changed };
}
