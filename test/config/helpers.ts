/**
 * Shared helpers of the configuration tests: load a TOML text with an empty environment (tests never
 * read the real one), find diagnostics, and locate the repository's files from dist/test/config.
 */
import * as path from 'node:path';
import { loadConfig, type LoadOptions, type LoadResult } from '../../lib/config/load';
import type { Diagnostic } from '../../lib/config/diagnostics';

export const REPO = path.resolve(__dirname, '..', '..', '..');
export const FIXTURES = path.join(REPO, 'test', 'fixtures', 'deployment-toml');
export const CLI = path.join(REPO, 'dist', 'lib', 'cli.js');

export function load(text: string, options: Omit<LoadOptions, 'text'> = {}): LoadResult {
  return loadConfig({ file: 'test.toml', env: {}, ...options, text });
}

export function errors(r: LoadResult): Diagnostic[] {
  return r.diagnostics.filter((d) => d.level === 'error');
}

export function warnings(r: LoadResult): Diagnostic[] {
  return r.diagnostics.filter((d) => d.level === 'warning');
}

/** A compact view for assertion messages: `CODE key @line`. */
export function brief(r: LoadResult): string[] {
  return r.diagnostics.map((d) => `${d.level} ${d.code} ${d.key} @${d.line}: ${d.message}`);
}

/** The value at a dotted path with `[n]` entries. */
export function at(value: unknown, dotted: string): unknown {
  let cur: unknown = value;
  for (const part of dotted.split('.')) {
    const m = /^([^[]*)((?:\[\d+\])*)$/.exec(part);
    const name = m?.[1] ?? part;
    if (name !== '') cur = cur !== null && typeof cur === 'object' ? (cur as Record<string, unknown>)[name] : undefined;
    for (const idx of (m?.[2] ?? '').matchAll(/\[(\d+)\]/g)) cur = Array.isArray(cur) ? cur[Number(idx[1])] : undefined;
  }
  return cur;
}
