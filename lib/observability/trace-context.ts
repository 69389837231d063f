/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/): parsing the incoming `traceparent` and
 * `tracestate` fields and making the ids the gateway adds. Only used when tracing is on.
 */
import { randomFillSync } from 'node:crypto';

/** What a valid incoming traceparent says (§3.2). */
export interface TraceParent {
  /** 32 lower-case hex digits, not all zero. */
  readonly traceId: string;
  /** The caller's span: 16 lower-case hex digits, not all zero. */
  readonly parentId: string;
  /** trace-flags (§3.2.2.5): bit 0 is `sampled`. */
  readonly flags: number;
}

/** Whether v[from, to) is lower-case hex (a loop, not a RegExp on slices: 0.3 µs per traced call in perf). */
function isLowerHex(v: string, from: number, to: number): boolean {
  for (let i = from; i < to; i++) {
    const c = v.charCodeAt(i);
    if (!((c >= 48 && c <= 57) || (c >= 97 && c <= 102))) return false;
  }
  return true;
}
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);

/**
 * Parses one traceparent value; undefined when invalid (the receiver then starts a new trace, §3.2.2.1 and
 * §3.2.4). Version 00 must be exactly 55 characters; a higher version may carry more fields after the flags
 * (§3.2.4: "parse the first four fields"); version ff is invalid.
 */
export function parseTraceParent(value: string): TraceParent | undefined {
  // trim() changes nothing when the value starts and ends with a hex digit (the usual case): no new string.
  const v = isLowerHex(value, 0, 1) && isLowerHex(value, value.length - 1, value.length) ? value : value.trim();
  if (v.length < 55 || v.charCodeAt(2) !== 45 || v.charCodeAt(35) !== 45 || v.charCodeAt(52) !== 45) return undefined;
  if (!isLowerHex(v, 0, 2) || (v.charCodeAt(0) === 102 && v.charCodeAt(1) === 102)) return undefined;
  const v00 = v.charCodeAt(0) === 48 && v.charCodeAt(1) === 48;
  if (v00 ? v.length !== 55 : v.length > 55 && v.charCodeAt(55) !== 45) return undefined;
  if (!isLowerHex(v, 3, 35) || !isLowerHex(v, 36, 52) || !isLowerHex(v, 53, 55)) return undefined;
  const traceId = v.slice(3, 35);
  const parentId = v.slice(36, 52);
  if (traceId === ZERO_TRACE || parentId === ZERO_SPAN) return undefined;
  return { traceId, parentId, flags: hexDigit(v.charCodeAt(53)) * 16 + hexDigit(v.charCodeAt(54)) };
}

/** The value of one lower-case hex digit (checked by isLowerHex). */
function hexDigit(c: number): number {
  return c <= 57 ? c - 48 : c - 87;
}

/**
 * The trace context of a request's fields: one traceparent field (two make it invalid: §3.2.1 allows one),
 * and the tracestate fields joined with commas (RFC 9110 §5.3), passed on only with a valid traceparent
 * (§3.3.1: it MUST NOT be parsed when traceparent is not).
 */
export function traceContextOf(headers: readonly string[]): { parent: TraceParent | undefined; state: string | undefined } {
  let tp: string | undefined;
  let count = 0;
  let state: string | undefined;
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i] as string;
    if (name.length === 11 && name.toLowerCase() === 'traceparent') {
      tp = headers[i + 1] as string;
      count++;
    } else if (name.length === 10 && name.toLowerCase() === 'tracestate') {
      const v = (headers[i + 1] as string).trim();
      if (v !== '') state = state === undefined ? v : `${state},${v}`;
    }
  }
  const parent = count === 1 && tp !== undefined ? parseTraceParent(tp) : undefined;
  return { parent, state: parent === undefined ? undefined : state };
}

/** `00-<trace-id>-<span-id>-<flags>`: the version this gateway speaks. */
export function formatTraceParent(traceId: string, spanId: string, flags: number): string {
  return `00-${traceId}-${spanId}-${flags < 16 ? '0' : ''}${flags.toString(16)}`;
}

/**
 * Random ids from a pooled buffer: one randomFillSync and one hex encoding per 2 KiB (256 span ids),
 * each id a slice of that text, instead of a C++ call per id (0.07 µs each under perf on the traced
 * gateway). Ids must be unique, not secret (§3.2.2.3, §3.2.2.4 ask for randomness, which this is).
 */
const POOL = Buffer.allocUnsafe(2048);
let pooled = '';
let offset = 0;

function randomHex(bytes: number): string {
  const chars = bytes * 2;
  for (;;) {
    if (offset + chars > pooled.length) {
      randomFillSync(POOL);
      pooled = POOL.toString('hex');
      offset = 0;
    }
    const hex = pooled.slice(offset, offset + chars);
    offset += chars;
    // All-zero ids are invalid (§3.2.2.3): vanishingly rare, but never sent.
    if (hex !== ZERO_SPAN && hex !== ZERO_TRACE) return hex;
  }
}

export const newTraceId = (): string => randomHex(16);
export const newSpanId = (): string => randomHex(8);

/**
 * The fields for the backend: `headers` without any traceparent / tracestate, plus the gateway's.
 * Always a new array (the router never edits the request's fields).
 */
export function withTraceFields(headers: readonly string[], traceparent: string, tracestate: string | undefined): string[] {
  const out: string[] = [];
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i] as string;
    if ((name.length === 11 || name.length === 10) && (name.toLowerCase() === 'traceparent' || name.toLowerCase() === 'tracestate')) continue;
    out.push(name, headers[i + 1] as string);
  }
  out.push('traceparent', traceparent);
  if (tracestate !== undefined) out.push('tracestate', tracestate);
  return out;
}
