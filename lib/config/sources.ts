/**
 * The effective configuration with each value's source, for the runtime view (docs/operations.md,
 * "Runtime view"): every leaf of the loaded configuration (defaults filled, references resolved, secrets
 * masked as in `config print`) with where its value comes from:
 *
 *   `<file>:<line>`  written in deployment.toml at that line
 *   `$env`           written there as an `$env{NAME}` placeholder, resolved from the environment (`at` names the line)
 *   `$sys`           written as a `$sys{name}` placeholder, given with `--sys` (`at` names the line)
 *   `default`        not written: the schema's default (or a default built from a written value by `$ref`)
 *
 * The loader keeps which keys are written, not where; the positions come from the file's text, scanned
 * again by the loader's own scanner (locate.ts) when the view is asked for. A file edited since the
 * node loaded it (and not reloaded with SIGHUP) may name lines that moved: the view says which file it read.
 */
import * as fs from 'node:fs';
import type { LoadResult } from './load';
import { locateKeys, pathKey, type Segment, type SourceMap } from './locate';
import { maskedConfig } from './print';
import { isTable } from './schema-index';

export interface ConfigValue {
  /** Dotted path, entries of repeatable tables as `[n]` (`apim.gateway.environment[0].name`). */
  readonly key: string;
  /** The effective value; secrets are `****`. */
  readonly value: unknown;
  /** `<file>:<line>`, `$env`, `$sys` or `default` (above). */
  readonly source: string;
  /** For `$env` and `$sys`: `<file>:<line>` of the placeholder. */
  readonly at?: string;
}

const isEntryList = (v: unknown): v is Record<string, unknown>[] => Array.isArray(v) && v.length > 0 && v.every(isTable);

/** The source map of the loaded file, or undefined when it was loaded from text or cannot be read now. */
function sourceMapOf(loaded: Pick<LoadResult, 'file'>): SourceMap | undefined {
  if (loaded.file === '') return undefined;
  try {
    return locateKeys(fs.readFileSync(loaded.file, 'utf8').replace(/^\uFEFF/, ''));
  } catch {
    return undefined;
  }
}

/** Every leaf of the effective configuration with its source, in the configuration's order. */
export function configSources(loaded: Pick<LoadResult, 'secrets' | 'config' | 'file'>): ConfigValue[] {
  const map = sourceMapOf(loaded);
  const out: ConfigValue[] = [];
  const sourceOf = (segments: readonly Segment[]): { source: string; at?: string } => {
    const loc = map?.entries.get(pathKey(segments));
    if (loc === undefined || map === undefined) return { source: 'default' };
    const where = `${loaded.file}:${loc.line}`;
    const text = map.lines.slice(loc.line - 1, loc.endLine).join('\n');
    if (text.includes('$env{')) return { source: '$env', at: where };
    if (text.includes('$sys{')) return { source: '$sys', at: where };
    return { source: where };
  };
  const walk = (value: unknown, segments: Segment[]): void => {
    if (isTable(value)) {
      for (const [k, v] of Object.entries(value)) walk(v, [...segments, k]);
      return;
    }
    if (isEntryList(value)) {
      value.forEach((e, i) => walk(e, [...segments, i]));
      return;
    }
    out.push({ key: pathKey(segments), value, ...sourceOf(segments) });
  };
  walk(maskedConfig(loaded), []);
  return out;
}
