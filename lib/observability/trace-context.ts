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

/**
 * What v[from, to) is: HEX_ID when lower-case hex digits not all zero, HEX_ZERO when all '0', HEX_BAD
 * otherwise. One pass, no slice and no string comparison: comparing a slice with a string of zeros took the
 * runtime's slow string equality (about 0.7k instructions per call under callgrind; a RegExp test of the
 * whole value counted 0.2k more than this loop: docs/performance.md, "Counting instructions").
 */
const HEX_BAD = -1;
const HEX_ZERO = 0;
const HEX_ID = 1;
function hexRun(v: string, from: number, to: number): number {
  let seen = HEX_ZERO;
  // The digit ranges written out rather than hexDigit(): through it, 0.2k instructions more per traced call
  // (callgrind, three paired rounds: +320, +167, +185).
  for (let i = from; i < to; i++) {
    const c = v.charCodeAt(i);
    if (c === 48) continue;
    if (!((c > 48 && c <= 57) || (c >= 97 && c <= 102))) return HEX_BAD;
    seen = HEX_ID;
  }
  return seen;
}

/** The value of the two lower-case hex digits at v[at], v[at + 1]; -1 when either is not one. */
function hexByte(v: string, at: number): number {
  const hi = hexDigit(v.charCodeAt(at));
  const lo = hexDigit(v.charCodeAt(at + 1));
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

/** The value of a lower-case hex digit's char code, -1 for any other (NaN past the end included). */
function hexDigit(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  return -1;
}

/** Whether a value needs trim(): it starts or ends with something other than a hex digit. */
const untrimmed = (v: string): boolean => hexDigit(v.charCodeAt(0)) < 0 || hexDigit(v.charCodeAt(v.length - 1)) < 0;

/**
 * Parses one traceparent value; undefined when invalid (the receiver then starts a new trace, §3.2.2.1 and
 * §3.2.4). Version 00 must be exactly 55 characters; a higher version may carry more fields after the flags
 * (§3.2.4: "parse the first four fields"); version ff is invalid. The ids must not be all zeros (§3.2.2.3,
 * §3.2.2.4).
 */
export function parseTraceParent(value: string): TraceParent | undefined {
  // trim() changes nothing when the value starts and ends with a hex digit (the usual case): no new string.
  const v = untrimmed(value) ? value.trim() : value;
  if (v.length < 55 || v.charCodeAt(2) !== 45 || v.charCodeAt(35) !== 45 || v.charCodeAt(52) !== 45) return undefined;
  const version = hexByte(v, 0);
  if (version < 0 || version === 0xff) return undefined;
  if (version === 0 ? v.length !== 55 : v.length > 55 && v.charCodeAt(55) !== 45) return undefined;
  if (hexRun(v, 3, 35) !== HEX_ID || hexRun(v, 36, 52) !== HEX_ID) return undefined;
  const flags = hexByte(v, 53);
  if (flags < 0) return undefined;
  return { traceId: v.slice(3, 35), parentId: v.slice(36, 52), flags };
}

/**
 * Whether a field name is `lower` (given in lower case) in any letter case: the name as most clients send
 * it is compared first, `toLowerCase()` (a new string when it has capitals) only when that differs.
 */
function isField(name: string, lower: string): boolean {
  return name.length === lower.length && (name === lower || name.toLowerCase() === lower);
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
    if (isField(name, 'traceparent')) {
      tp = headers[i + 1] as string;
      count++;
    } else if (isField(name, 'tracestate')) {
      const v = (headers[i + 1] as string).trim();
      if (v !== '') state = state === undefined ? v : `${state},${v}`;
    }
  }
  const parent = count === 1 && tp !== undefined ? parseTraceParent(tp) : undefined;
  return { parent, state: parent === undefined ? undefined : state };
}

/** The 256 trace-flags texts, two lower-case hex digits each (§3.2.2.5). */
const FLAGS_HEX: readonly string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/** `00-<trace-id>-<span-id>-<flags>`: the version this gateway speaks. */
export function formatTraceParent(traceId: string, spanId: string, flags: number): string {
  return `00-${traceId}-${spanId}-${FLAGS_HEX[flags & 0xff] as string}`;
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
    const from = offset;
    offset += chars;
    // All-zero ids are invalid (§3.2.2.3): vanishingly rare, but never sent.
    if (!allZeros(pooled, from, offset)) return pooled.slice(from, offset);
  }
}

/** Whether v[from, to) is all '0' (false at the first other character: usually the first or second). */
function allZeros(v: string, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (v.charCodeAt(i) !== 48) return false;
  return true;
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
    if (isField(name, 'traceparent') || isField(name, 'tracestate')) continue;
    out.push(name, headers[i + 1] as string);
  }
  out.push('traceparent', traceparent);
  if (tracestate !== undefined) out.push('tracestate', tracestate);
  return out;
}
