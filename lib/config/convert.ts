/**
 * Turning a written (or defaulted, or referenced) value into the typed value of its key, and checking it.
 *
 * Real deployment.toml files bend the spec's types (docs/configuration.md): string keys get booleans and numbers,
 * comma-list keys get TOML arrays, booleans are written 'TRUE'/'FALSE', durations are written "900s" or
 * "15 m" or as a bare number in the key's unit. Everything accepted here is accepted on purpose; anything
 * else becomes one diagnostic with the expected form.
 */
import { isIPv4, isIPv6 } from 'node:net';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { storeCandidates } from './security-dir';
import type { KeyDef } from './schema-types';
import type { DiagnosticCode } from './diagnostics';

export type Converted =
  | { readonly ok: true; readonly value: unknown }
  /** `entries`: the array entries at fault, each with its own problem (one diagnostic each, at the entry). */
  | {
      readonly ok: false;
      readonly code: DiagnosticCode;
      readonly problem: string;
      readonly expected: string;
      readonly entries?: readonly BadEntry[];
    };

/** One entry of an array value that is refused: its index and why. */
export interface BadEntry {
  readonly index: number;
  readonly problem: string;
}

const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
type Unit = keyof typeof UNIT_MS;

const UNIT_WORDS: Readonly<Record<string, Unit>> = {
  ms: 'ms',
  msec: 'ms',
  msecs: 'ms',
  millis: 'ms',
  millisecond: 'ms',
  milliseconds: 'ms',
  s: 's',
  sec: 's',
  secs: 's',
  second: 's',
  seconds: 's',
  m: 'm',
  min: 'm',
  mins: 'm',
  minute: 'm',
  minutes: 'm',
  h: 'h',
  hr: 'h',
  hrs: 'h',
  hour: 'h',
  hours: 'h',
  d: 'd',
  day: 'd',
  days: 'd',
};

/** Milliseconds per unit, for docs and for the min/max of duration keys (written in the key's unit). */
export function unitMs(unit: string | undefined): number {
  return UNIT_MS[(unit ?? 'ms') as Unit] ?? 1;
}

/**
 * A duration in milliseconds. Bare numbers are in the key's unit (spec 000 states it per row: "900s",
 * "15 m", "2m" are all written in the samples). A negative bare number is the spec's "-1 = disabled"
 * sentinel and is kept as written rather than scaled.
 */
export function parseDuration(value: unknown, unit: string | undefined): number | undefined {
  const scale = unitMs(unit);
  if (typeof value === 'number' && Number.isFinite(value)) return value < 0 ? value : Math.round(value * scale);
  if (typeof value !== 'string') return undefined;
  const m = /^\s*(-?\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$/.exec(value);
  if (m === null) return undefined;
  const amount = Number(m[1]);
  const word = (m[2] ?? '').toLowerCase();
  if (word === '') return amount < 0 ? amount : Math.round(amount * scale);
  const u = UNIT_WORDS[word];
  if (u === undefined || amount < 0) return undefined;
  return Math.round(amount * UNIT_MS[u]);
}

const BYTE_UNITS: Readonly<Record<string, number>> = {
  '': 1,
  b: 1,
  k: 1024,
  kb: 1024,
  kib: 1024,
  m: 1024 ** 2,
  mb: 1024 ** 2,
  mib: 1024 ** 2,
  g: 1024 ** 3,
  gb: 1024 ** 3,
  gib: 1024 ** 3,
};

/** A byte count: a number, or "16k", "1 MiB" (binary multiples, as buffer sizes are meant). */
export function parseBytes(value: unknown): number | undefined {
  if (typeof value === 'number' && Number.isInteger(value)) return value;
  if (typeof value !== 'string') return undefined;
  const m = /^\s*(-?\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$/.exec(value);
  if (m === null) return undefined;
  const scale = BYTE_UNITS[(m[2] ?? '').toLowerCase()];
  if (scale === undefined) return undefined;
  const n = Number(m[1]) * scale;
  return Number.isInteger(n) ? n : Math.round(n);
}

/** Whether a value still holds a runtime `${name}` token (spec 000, part 1): such values are not checked. */
export function hasRuntimeToken(value: unknown): boolean {
  return typeof value === 'string' && value.includes('${');
}

function scalarText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return undefined;
}

function toBoolean(value: unknown): boolean | undefined {
  if (typeof value === 'boolean') return value;
  if (typeof value === 'string') {
    const t = value.trim().toLowerCase();
    if (t === 'true') return true;
    if (t === 'false') return false;
  }
  return undefined;
}

function toNumber(value: unknown, integer: boolean): number | undefined {
  let n: number | undefined;
  if (typeof value === 'number') n = value;
  else if (typeof value === 'string' && /^\s*[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\s*$/.test(value)) n = Number(value);
  if (n === undefined || !Number.isFinite(n)) return undefined;
  if (integer && !Number.isInteger(n)) return undefined;
  return n;
}

/** A comma list: "a, b" or ["a", "b"] → ['a', 'b'] (docs/configuration.md: CORS and preserve lists are written both ways). */
function toList(value: unknown, commaSplit: boolean): string[] | undefined {
  if (Array.isArray(value)) {
    const out: string[] = [];
    for (const v of value) {
      const t = scalarText(v);
      if (t === undefined) return undefined;
      out.push(t);
    }
    return out;
  }
  const t = scalarText(value);
  if (t === undefined) return undefined;
  if (!commaSplit) return [t];
  return t
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/** What a key accepts, in words (the `expected` of a diagnostic). */
export function describe(def: KeyDef): string {
  if (def.format === 'list') return 'a comma-separated string or an array of strings';
  if (def.format === 'duration') return `a duration: a number of ${unitName(def.unit)} or a string such as "900s", "15m", "1000ms"`;
  if (def.format === 'port') return 'a port number 0..65535';
  if (def.format === 'bytes') return 'a number of bytes (or "16k", "1m")';
  if (def.boolString === true || def.type === 'b') return 'true or false';
  if (def.allowed !== undefined) return `one of ${def.allowed.join(', ')}`;
  switch (def.type) {
    case 's':
      return 'a string';
    case 'i':
      return 'an integer';
    case 'f':
      return 'a number';
    case 'a':
      return 'an array of strings';
    case 'map':
      return 'a table';
  }
}

export function unitName(unit: string | undefined): string {
  switch (unit ?? 'ms') {
    case 's':
      return 'seconds';
    case 'm':
      return 'minutes';
    case 'h':
      return 'hours';
    default:
      return 'milliseconds';
  }
}

const fail = (code: DiagnosticCode, problem: string, expected: string): Converted => ({ ok: false, code, problem, expected });

/** An address or a CIDR range, as node:net's BlockList.addSubnet takes it. */
export interface Subnet {
  readonly address: string;
  readonly bits: number;
  readonly family: 'ipv4' | 'ipv6';
}

/** IPv4-mapped IPv6 (::ffff:a.b.c.d, what a dual-stack listener reports) as plain IPv4. */
export function unmappedIp(ip: string): string {
  return ip.length > 7 && ip.startsWith('::ffff:') && ip.indexOf('.') > 0 ? ip.slice(7) : ip;
}

/**
 * `10.0.0.0/8`, `2001:db8::/32`, `127.0.0.1` (a /32) or `::1` (a /128); undefined for anything else (a host
 * name, a prefix length out of range or missing after the slash). The one reading of format 'cidr' keys,
 * shared with the transport's matcher ([throughway] trusted_proxies).
 */
export function parseSubnet(text: string): Subnet | undefined {
  const entry = text.trim();
  const slash = entry.indexOf('/');
  const address = unmappedIp(slash < 0 ? entry : entry.slice(0, slash));
  const family = isIPv4(address) ? 'ipv4' : isIPv6(address) ? 'ipv6' : undefined;
  if (family === undefined) return undefined;
  const max = family === 'ipv4' ? 32 : 128;
  if (slash < 0) return { address, bits: max, family };
  const prefix = entry.slice(slash + 1);
  if (!/^\d{1,3}$/.test(prefix) || Number(prefix) > max) return undefined;
  return { address, bits: Number(prefix), family };
}

/** The typed value of `raw` for `def`, without checking allowed values or ranges (see `check`). */
export function convert(def: KeyDef, raw: unknown): Converted {
  const expected = describe(def);
  if (def.format === 'list') {
    const list = toList(raw, true);
    return list === undefined ? fail('CONFIG_TYPE', 'not a list of strings', expected) : { ok: true, value: list };
  }
  if (def.format === 'duration') {
    const ms = parseDuration(raw, def.unit);
    return ms === undefined ? fail('CONFIG_DURATION', 'not a duration', expected) : { ok: true, value: ms };
  }
  if (def.format === 'bytes') {
    const b = parseBytes(raw);
    return b === undefined ? fail('CONFIG_TYPE', 'not a byte count', expected) : { ok: true, value: b };
  }
  if (def.format === 'port') {
    const n = toNumber(raw, true);
    return n === undefined ? fail('CONFIG_TYPE', 'not a port number', expected) : { ok: true, value: n };
  }
  if (def.boolString === true || def.type === 'b') {
    const b = toBoolean(raw);
    return b === undefined ? fail('CONFIG_TYPE', 'not true or false', expected) : { ok: true, value: b };
  }
  switch (def.type) {
    case 's': {
      // Real files write booleans and numbers into string keys (docs/configuration.md); the typed value stays a string.
      const t = scalarText(raw);
      return t === undefined ? fail('CONFIG_TYPE', 'not a string', expected) : { ok: true, value: t };
    }
    case 'i': {
      const n = toNumber(raw, true);
      return n === undefined ? fail('CONFIG_TYPE', 'not an integer', expected) : { ok: true, value: n };
    }
    case 'f': {
      const n = toNumber(raw, false);
      return n === undefined ? fail('CONFIG_TYPE', 'not a number', expected) : { ok: true, value: n };
    }
    case 'a': {
      const list = toList(raw, false);
      return list === undefined ? fail('CONFIG_TYPE', 'not an array of strings', expected) : { ok: true, value: list };
    }
    case 'map':
      return raw !== null && typeof raw === 'object' && !Array.isArray(raw)
        ? { ok: true, value: raw }
        : fail('CONFIG_TYPE', 'not a table', expected);
  }
}

export interface CheckContext {
  /** Directory relative `path` values are resolved against (the config file's directory, docs/configuration.md). */
  readonly dir: string;
  /** Where each resolved 'store' value was looked for, in order (a missing store's message names them all). */
  readonly looked?: Map<string, readonly string[]>;
}

/**
 * Checks a converted value against the key's allowed values, range, URL and host forms, and returns the
 * final value (allowed values matched case-insensitively take the schema's spelling; paths become
 * absolute). Values holding runtime `${...}` tokens skip the URL, host and path checks: they are filled
 * at run time (spec 000, part 1). Numeric and enumerated keys take no tokens: their type is fixed.
 */
export function check(def: KeyDef, value: unknown, ctx: CheckContext): Converted {
  if (def.allowed !== undefined) {
    const allowed = def.allowed;
    const pick = (v: string): string | undefined => {
      if (allowed.includes(v)) return v;
      if (def.caseInsensitive === true) return allowed.find((a) => a.toLowerCase() === v.toLowerCase());
      return undefined;
    };
    const expected = `one of ${allowed.join(', ')}`;
    // Runtime `${...}` tokens are not allowed here: an enumerated key is read as written (typed as a union).
    if (typeof value === 'string') {
      const hit = pick(value);
      if (hit === undefined) return fail('CONFIG_ALLOWED', 'not an allowed value', expected);
      value = hit;
    } else if (Array.isArray(value)) {
      const out: string[] = [];
      for (const v of value as unknown[]) {
        const s = String(v);
        const hit = pick(s);
        if (hit === undefined) return fail('CONFIG_ALLOWED', `${JSON.stringify(s)} is not an allowed value`, expected);
        out.push(hit);
      }
      value = out;
    }
  }
  if (typeof value === 'number') {
    if (def.format === 'port' && (value < 0 || value > 65535)) return fail('CONFIG_RANGE', 'port out of range', 'a port number 0..65535');
    const scale = def.format === 'duration' ? unitMs(def.unit) : 1;
    // Duration bounds are written in the key's unit; a negative sentinel is compared unscaled.
    const inUnit = def.format === 'duration' && value >= 0 ? value / scale : value;
    if ((def.min !== undefined && inUnit < def.min) || (def.max !== undefined && inUnit > def.max)) {
      const unit = def.format === 'duration' ? ` ${unitName(def.unit)}` : '';
      const range =
        def.min !== undefined && def.max !== undefined
          ? `${def.min}..${def.max}`
          : def.min !== undefined
            ? `at least ${def.min}`
            : `at most ${String(def.max)}`;
      return fail('CONFIG_RANGE', 'out of range', `${range}${unit}`);
    }
  }
  if (def.format === 'url') {
    const list = Array.isArray(value) ? (value as unknown[]) : [value];
    for (const v of list) {
      if (typeof v !== 'string' || v === '' || hasRuntimeToken(v)) continue;
      if (!isUrl(v))
        return fail(
          'CONFIG_URL',
          `${list.length > 1 ? `${JSON.stringify(v)} is ` : ''}not a URL`,
          'an absolute URL such as https://host:port/path',
        );
    }
  }
  if (def.format === 'cidr') {
    const list = Array.isArray(value) ? (value as unknown[]) : [value];
    const bad: BadEntry[] = [];
    for (let i = 0; i < list.length; i++) {
      const v = list[i];
      if (typeof v !== 'string' || parseSubnet(v) === undefined)
        bad.push({ index: i, problem: `${shownEntry(v)} is neither an IP address nor a CIDR range` });
    }
    if (bad.length > 0) {
      const expected = 'IP addresses and CIDR ranges such as "10.0.0.0/8", "192.0.2.7", "2001:db8::/32"';
      const first = (bad[0] as BadEntry).problem;
      return Array.isArray(value)
        ? { ok: false, code: 'CONFIG_ADDRESS', problem: first, expected, entries: bad }
        : fail('CONFIG_ADDRESS', first, expected);
    }
  }
  if (def.format === 'host' && typeof value === 'string' && !hasRuntimeToken(value) && !/^[^\s/?#@]+$/.test(value)) {
    return fail('CONFIG_TYPE', 'not a host name', 'a host name or IP address');
  }
  if (def.format === 'regex' && typeof value === 'string' && !hasRuntimeToken(value)) {
    try {
      new RegExp(value);
    } catch (err) {
      return fail('CONFIG_TYPE', `not a regular expression: ${(err as Error).message}`, 'a JavaScript regular expression, such as ^0\\d+$');
    }
  }
  if (def.format === 'path' && typeof value === 'string' && value !== '' && !hasRuntimeToken(value)) {
    value = path.resolve(ctx.dir, value);
  }
  if (def.format === 'store' && typeof value === 'string' && value !== '' && !hasRuntimeToken(value)) {
    const places = storeCandidates(ctx.dir, value);
    const found = places.find(isFile) ?? (places[0] as string);
    ctx.looked?.set(found, places);
    value = found;
  }
  return { ok: true, value };
}

/** An entry as a message shows it: quoted, and cut when long (the value is never a secret here). */
function shownEntry(v: unknown): string {
  const text = JSON.stringify(v) ?? String(v);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

function isUrl(text: string): boolean {
  try {
    const u = new URL(text);
    return /^[a-z][a-z0-9+.-]*:$/i.test(u.protocol);
  } catch {
    return false;
  }
}

function isFile(file: string): boolean {
  try {
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}
