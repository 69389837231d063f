/**
 * Diagnostics of the gateway's own files (API definitions in apis/, the fault templates file): one value
 * per problem, naming file, line and field, printed like the configuration's diagnostics
 * (lib/config/diagnostics.ts) so `throughway apis list` and the server log read the same way.
 */

export type ApiDiagnosticLevel = 'error' | 'warning' | 'info';

/** Every code, listed once so docs/apis.md and the tests can enumerate them. */
export const API_DIAGNOSTIC_CODES = {
  API_IO: 'The file cannot be read.',
  API_SYNTAX: 'The file is not valid TOML (also a key defined twice).',
  API_UNKNOWN_FIELD: 'A field the API definition does not know (a warning, with the closest known field).',
  API_TYPE: 'A value of the wrong type.',
  API_REQUIRED: 'A required field is missing.',
  API_ALLOWED: 'A value outside the allowed values of the field.',
  API_VALUE: 'A value of the right type that is still not valid (a context, path, URL, duration or code).',
  API_DUPLICATE_RESOURCE: 'Two resources of one API with the same path and method.',
  API_DUPLICATE_CONTEXT: 'Another deployed API already has this context and version: this one is refused.',
  API_DEFAULT_VERSION_TAKEN: 'Another deployed version of the context is already the default version: this one is deployed without default-version routing.',
  API_NOT_ENFORCED: 'A field that is accepted but not enforced yet (the message says which step enforces it).',
  API_LABELS: 'The API is not deployed on this gateway: none of its labels is in gateway_labels.',
  API_KEPT_PREVIOUS: 'A changed file is invalid: the previous valid version stays deployed.',
} as const;

export type ApiDiagnosticCode = keyof typeof API_DIAGNOSTIC_CODES;

export interface ApiDiagnostic {
  readonly level: ApiDiagnosticLevel;
  readonly code: ApiDiagnosticCode;
  readonly file: string;
  /** 1-based; 0 when the problem has no line (a missing field of the file's top level, an I/O error). */
  readonly line: number;
  readonly column?: number;
  /** Dotted field path, with array entries as [n]: `resources[2].methods`; '' for the whole file. */
  readonly field: string;
  readonly message: string;
  readonly expected?: string;
}

export function formatApiDiagnostic(d: ApiDiagnostic): string {
  const where = d.line > 0 ? `${d.file}:${d.line}${d.column !== undefined ? `:${d.column}` : ''}` : d.file;
  const field = d.field === '' ? '' : ` ${d.field}`;
  const expected = d.expected !== undefined ? ` (expected ${d.expected})` : '';
  return `${where}: ${d.level} ${d.code}${field}: ${d.message}${expected}`;
}

/**
 * A `toml` parse error as a diagnostic. The package puts line and column on duplicate-key errors, and only
 * in `location.start` on syntax errors (the toml package's error object).
 */
export function syntaxDiagnostic(err: unknown, file: string, _text: string): ApiDiagnostic {
  const e = err as { message?: string; line?: number; column?: number; location?: { start?: { line?: number; column?: number } } };
  const line = e.line ?? e.location?.start?.line ?? 0;
  const column = e.column ?? e.location?.start?.column;
  const d: ApiDiagnostic = { level: 'error', code: 'API_SYNTAX', file, line, field: '', message: `not valid TOML: ${e.message ?? String(err)}` };
  return column !== undefined ? { ...d, column } : d;
}
