/**
 * Configuration diagnostics: one value per problem found while loading deployment.toml, each naming the
 * key, the file and the line, so that `throughway config check` can list every problem at once.
 *
 * Codes are stable strings (tests, docs and scripts match on them); messages are for people. No message
 * ever carries the value of a secret: callers pass values through `shown()`, which prints `****` for them.
 */
import { ThroughwayError } from '../errors';

export type DiagnosticLevel = 'error' | 'warning';

/** Every code the configuration engine emits. Listed once here so docs and tests can enumerate them. */
export const DIAGNOSTIC_CODES = {
  CONFIG_IO: 'The configuration file cannot be read.',
  CONFIG_SYNTAX:
    'The file is not valid TOML. The broken statement is set aside (a table header that does not parse with its keys; a value left open, reported where it starts) and the rest is checked.',
  CONFIG_DUPLICATE: 'A key or table is defined twice (also a quoted dotted key and its nested form).',
  CONFIG_UNKNOWN_SECTION: 'A table the schema does not know (a warning; an error under --strict).',
  CONFIG_UNKNOWN_KEY: 'A key the schema does not know in a known table (a warning; an error under --strict).',
  CONFIG_TYPE: 'A value of the wrong type (for example text where an integer is expected).',
  CONFIG_ALLOWED: 'A value outside the allowed values of the key.',
  CONFIG_RANGE:
    'A number outside the minimum/maximum of the key, a port outside 0..65535, or an effective port (plus server.offset) above 65535.',
  CONFIG_URL: 'A value that does not parse as a URL.',
  CONFIG_ADDRESS:
    'An entry of an address list ([throughway] trusted_proxies) that is neither an IP address nor a CIDR range; the diagnostic points at the entry.',
  CONFIG_DURATION: 'A duration that is neither a number nor a number with a unit (ms, s, m, h, d).',
  CONFIG_REQUIRED: 'A required key of a running, enabled feature is missing and has no default.',
  CONFIG_REF_MISSING: 'A $ref{...} or $conf{...} names a key that does not exist.',
  CONFIG_REF_CYCLE: 'References that lead back to themselves.',
  CONFIG_REF_SYNTAX: 'A malformed $ref{...}, $conf{...}, $env{...} or $sys{...} placeholder.',
  CONFIG_ENV_MISSING: 'An $env{NAME} whose environment variable is not set.',
  CONFIG_SYS_MISSING: 'A $sys{name} with no value (give one with --sys name=value).',
  CONFIG_PORT_CONFLICT: 'Two listening ports that are the same after the offset.',
  CONFIG_FILE_MISSING:
    'A key or trust store file (or SSL profile file) a starting node opens does not exist (checked by `config check`, `start` and `apis list`).',
  CONFIG_FILE_INVALID:
    'A file a starting node reads is there but unusable: a [[oauth.grant_type.saml_bearer.identity_provider]] certificate_file that holds no PEM certificate, or one that does not parse (checked by `config check`, `start` and `apis list`).',
  CONFIG_UNSUPPORTED:
    'A value throughway accepts in the file but a starting node refuses: a [database.apim_db] type with no driver (or a [database.shared_db] one, when it has a url of its own) (checked by `config check`, `start` and `apis list`).',
  CONFIG_CONFLICT:
    'Two keys whose values a starting node refuses together: [apim.cors] allow_credentials = true with allow_origins "*" (spec 000, [apim.cors]).',
  CONFIG_INTEGER: 'An integer outside what TOML allows (64-bit signed) or what the key can hold (a duration beyond 2^53 ms).',
  CONFIG_NESTING: 'Arrays or inline tables nested deeper than the parser allows.',
  CONFIG_DEFAULT_ADMIN_PASSWORD:
    'The super admin has the built-in default password "admin" (a warning of `config check`; the management ports then listen on 127.0.0.1 only).',
} as const;

export type DiagnosticCode = keyof typeof DIAGNOSTIC_CODES;

export interface Diagnostic {
  readonly level: DiagnosticLevel;
  readonly code: DiagnosticCode;
  /** Full dotted key path, with array entries as `[n]` (e.g. `apim.gateway.environment[0].name`); '' for the file. */
  readonly key: string;
  readonly file: string;
  /** 1-based line; 0 when the key is not written in the file (a missing required key of an absent table). */
  readonly line: number;
  /** 1-based column, when known. */
  readonly column?: number;
  readonly message: string;
  /** What would have been accepted, e.g. 'integer 0..65535'. */
  readonly expected?: string;
  /** The offending source line, with any secret value already masked. */
  readonly source?: string;
}

/** How a secret is shown anywhere it would otherwise be printed. */
export const MASK = '****';

/** Renders a value for a message: `****` for secrets, JSON-ish quoting for the rest, long values cut. */
export function shown(value: unknown, secret: boolean): string {
  if (secret) return MASK;
  let text: string;
  if (typeof value === 'string') text = JSON.stringify(value);
  else if (Array.isArray(value) || (value !== null && typeof value === 'object')) text = JSON.stringify(value);
  else text = String(value);
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}

/** The name of a value's type in the words the spec's legend uses (spec 000, part 2). */
export function typeName(value: unknown): string {
  if (Array.isArray(value)) return 'array';
  if (value === null) return 'null';
  if (value instanceof Date) return 'date';
  if (typeof value === 'object') return 'table';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'float';
  return typeof value;
}

/**
 * One diagnostic as a compiler-style line, then the offending source line and a caret:
 *
 *     conf/deployment.toml:12:1: error CONFIG_TYPE server.offset: expected an integer, got "one" (expected integer)
 *        12 | offset = "one"
 *           | ^
 */
export function formatDiagnostic(d: Diagnostic): string {
  const where = d.line > 0 ? `${d.file}:${d.line}${d.column !== undefined ? `:${d.column}` : ''}` : d.file;
  const key = d.key === '' ? '' : ` ${d.key}`;
  const expected = d.expected !== undefined ? ` (expected ${d.expected})` : '';
  let out = `${where}: ${d.level} ${d.code}${key}: ${d.message}${expected}`;
  if (d.source !== undefined && d.line > 0) {
    const gutter = String(d.line);
    out += `\n  ${gutter} | ${d.source}`;
    if (d.column !== undefined && d.column > 0) {
      out += `\n  ${' '.repeat(gutter.length)} | ${' '.repeat(d.column - 1)}^`;
    }
  }
  return out;
}

/** Diagnostics in file order (how people fix them); on one position, in the order they were found. */
export function sortDiagnostics(list: readonly Diagnostic[]): Diagnostic[] {
  return [...list].sort((a, b) => {
    const la = a.line === 0 ? Number.MAX_SAFE_INTEGER : a.line;
    const lb = b.line === 0 ? Number.MAX_SAFE_INTEGER : b.line;
    if (la !== lb) return la - lb;
    return (a.column ?? 0) - (b.column ?? 0);
  });
}

/**
 * Levenshtein distance, used for "did you mean" suggestions on unknown keys. With `limit`, gives up as
 * soon as the distance must exceed it (returns limit + 1): suggestions only care about near names.
 */
export function editDistance(a: string, b: string, limit = Number.POSITIVE_INFINITY): number {
  if (a === b) return 0;
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  if (a.length === 0) return b.length;
  if (b.length === 0) return a.length;
  let prev = new Array<number>(b.length + 1);
  let cur = new Array<number>(b.length + 1);
  for (let j = 0; j <= b.length; j++) prev[j] = j;
  for (let i = 1; i <= a.length; i++) {
    cur[0] = i;
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a.charCodeAt(i - 1) === b.charCodeAt(j - 1) ? 0 : 1;
      const v = Math.min((prev[j] ?? 0) + 1, (cur[j - 1] ?? 0) + 1, (prev[j - 1] ?? 0) + cost);
      cur[j] = v;
      if (v < rowMin) rowMin = v;
    }
    if (rowMin > limit) return limit + 1;
    [prev, cur] = [cur, prev];
  }
  return prev[b.length] ?? 0;
}

/**
 * The closest candidate to `word`, or undefined when nothing is close enough to be a plausible typo
 * (at most 40% of the name's length, at least 2 edits; `maxDistance` caps it further). A difference
 * of case alone counts as half an edit, so `Port` finds `port`.
 */
export function closest(word: string, candidates: Iterable<string>, maxDistance = Number.POSITIVE_INFINITY): string | undefined {
  const lower = word.toLowerCase();
  let best: string | undefined;
  let bestScore = Number.POSITIVE_INFINITY;
  for (const c of candidates) {
    const cl = c.toLowerCase();
    const limit = Math.min(maxDistance, Math.max(2, Math.floor(Math.max(word.length, c.length) * 0.4)));
    const score = cl === lower ? 0.5 : editDistance(lower, cl, Math.min(limit, Math.floor(bestScore)));
    if (score > limit) continue;
    if (score < bestScore || (score === bestScore && best !== undefined && c < best)) {
      best = c;
      bestScore = score;
    }
  }
  return best;
}

/** Thrown at start-up when deployment.toml has errors; `throughway config check` lists them (docs/operations.md). */
export class ConfigInvalidError extends ThroughwayError {
  override readonly name = 'ConfigInvalidError';
  readonly code = 'CONFIG_INVALID';
}
