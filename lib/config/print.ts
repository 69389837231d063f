/**
 * The effective configuration as text: TOML-like (tables, `[[entries]]`, one `key = value` a line) or
 * JSON, for `throughway config print`. Defaults are filled and references resolved (it prints what the
 * node runs with); every secret is `****` (docs/configuration.md: any password, secret, token, key_password, ...).
 *
 * The TOML-like form is for reading, not for feeding back: durations print as milliseconds and paths
 * as absolute paths, which the loader accepts but which differ from what was written.
 */
import type { LoadResult } from './load';
import { MASK } from './diagnostics';
import { type Segment, pathKey } from './locate';
import { isSecretName, isTable } from './schema-index';

/** Whether the value at `segments` is a secret in this loaded configuration. */
export function secretAt(loaded: Pick<LoadResult, 'secrets'>, segments: readonly Segment[], value: unknown): boolean {
  if (loaded.secrets.includes(pathKey(segments))) return true;
  const last = segments[segments.length - 1];
  return typeof last === 'string' && isSecretName(last, value);
}

/** A copy of the configuration with every secret replaced by `****`. */
export function maskedConfig(loaded: Pick<LoadResult, 'secrets' | 'config'>): unknown {
  const walk = (value: unknown, segments: Segment[]): unknown => {
    if (isTable(value)) {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value)) {
        Object.defineProperty(out, k, { value: walk(v, [...segments, k]), enumerable: true, writable: true, configurable: true });
      }
      return out;
    }
    if (secretAt(loaded, segments, value)) return MASK;
    if (Array.isArray(value)) return value.map((v, i) => (isTable(v) ? walk(v, [...segments, i]) : v));
    return value;
  };
  return walk(loaded.config, []);
}

export function tomlKey(key: string): string {
  return /^[A-Za-z0-9_-]+$/.test(key) ? key : JSON.stringify(key);
}

export function tomlValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return `[${value.map(tomlValue).join(', ')}]`;
  if (isTable(value))
    return `{ ${Object.entries(value)
      .map(([k, v]) => `${tomlKey(k)} = ${tomlValue(v)}`)
      .join(', ')} }`;
  return JSON.stringify(value) ?? 'null';
}

const isEntryList = (v: unknown): v is Record<string, unknown>[] => Array.isArray(v) && v.length > 0 && v.every(isTable);

/** TOML-like text of an already masked configuration. */
export function toTomlText(config: unknown): string {
  const out: string[] = [];
  const emit = (table: Record<string, unknown>, header: string[], array: boolean): void => {
    const leaves = Object.entries(table).filter(([, v]) => !isTable(v) && !isEntryList(v));
    const subs = Object.entries(table).filter(([, v]) => isTable(v) || isEntryList(v));
    const name = header.map(tomlKey).join('.');
    if (array) out.push('', `[[${name}]]`);
    else if (leaves.length > 0 && header.length > 0) out.push('', `[${name}]`);
    for (const [k, v] of leaves) out.push(`${tomlKey(k)} = ${tomlValue(v)}`);
    for (const [k, v] of subs) {
      if (isEntryList(v)) for (const entry of v) emit(entry, [...header, k], true);
      else emit(v as Record<string, unknown>, [...header, k], false);
    }
  };
  if (isTable(config)) emit(config, [], false);
  return `${out.join('\n').replace(/^\n+/, '')}\n`;
}

/** The text `throughway config print` writes. */
export function printConfig(loaded: Pick<LoadResult, 'secrets' | 'config'>, format: 'toml' | 'json' = 'toml'): string {
  const masked = maskedConfig(loaded);
  return format === 'json' ? `${JSON.stringify(masked, null, 2)}\n` : toTomlText(masked);
}
