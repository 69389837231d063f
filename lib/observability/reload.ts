/**
 * SIGHUP (docs/operations.md): deployment.toml is read and validated again. A configuration with
 * errors is refused, every error logged with its file and line, and the running one stays. A valid one
 * becomes the node's configuration: what can change while running is applied at once (the log level;
 * the API files and fault templates the gateway re-reads; not the throttling policies file), and every other changed key is
 * named in one `config_reload_restart_needed` line (listeners, pools and the store are built once at
 * start; changing them under live connections is what a restart is for).
 */
import type { LoadResult } from '../config/load';
import { formatDiagnostic } from '../config/diagnostics';
import type { Logger, LogLevel, ReloadableLogger } from '../log';

/** Keys applied on reload without a restart: the log level, and the plugins (loaded again by a node that runs some, docs/plugins.md). */
export const HOT_KEYS: ReadonlySet<string> = new Set([
  'throughway.log_level',
  'throughway.plugins',
  'throughway.api_plugins',
  'throughway.plugin',
]);

/** Dotted keys (two levels: section.key or section.table) whose values differ between two configurations. */
export function changedKeys(a: Readonly<Record<string, unknown>>, b: Readonly<Record<string, unknown>>): string[] {
  const out: string[] = [];
  const names = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const name of [...names].sort()) {
    const x = a[name];
    const y = b[name];
    if (JSON.stringify(x) === JSON.stringify(y)) continue;
    const isTable = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
    if (isTable(x) && isTable(y)) {
      for (const k of [...new Set([...Object.keys(x), ...Object.keys(y)])].sort()) {
        if (JSON.stringify(x[k]) !== JSON.stringify(y[k])) out.push(`${name}.${k}`);
      }
    } else out.push(name);
  }
  return out;
}

export interface ReloadResult {
  readonly ok: boolean;
  /** Errors of a refused configuration, formatted (file:line:column: message). */
  readonly errors: readonly string[];
  readonly applied: readonly string[];
  readonly restartNeeded: readonly string[];
  /** The configuration in force afterwards (the previous one when refused). */
  readonly loaded: LoadResult;
}

/**
 * Decides and applies a reload: `next` is the freshly read configuration. The logger's level follows
 * `[throughway] log_level` when it can be changed (a ReloadableLogger).
 */
export function applyReload(current: LoadResult, next: LoadResult, logger: Logger): ReloadResult {
  if (!next.ok) {
    const errors = next.diagnostics.filter((d) => d.level === 'error').map((d) => formatDiagnostic(d));
    for (const e of errors) logger.log('error', 'config_reload_error', { message: e });
    logger.log('error', 'config_reload_refused', {
      errors: errors.length,
      message: 'the configuration has errors: the running configuration stays',
    });
    return { ok: false, errors, applied: [], restartNeeded: [], loaded: current };
  }
  const changed = changedKeys(current.config as unknown as Record<string, unknown>, next.config as unknown as Record<string, unknown>);
  const applied: string[] = [];
  const restartNeeded: string[] = [];
  for (const k of changed) {
    if (!HOT_KEYS.has(k)) {
      restartNeeded.push(k);
      continue;
    }
    if (k === 'throughway.log_level' && typeof (logger as Partial<ReloadableLogger>).setLevel === 'function') {
      (logger as ReloadableLogger).setLevel(next.config.throughway.log_level as LogLevel);
      applied.push(k);
    } else if (k.startsWith('throughway.plugin') || k === 'throughway.api_plugins') {
      // Applied by the node after this (lib/node/signals.ts reloadPlugins).
      applied.push(k);
    } else restartNeeded.push(k);
  }
  logger.log('info', 'config_reloaded', { applied, restartNeeded: restartNeeded.length });
  if (restartNeeded.length > 0)
    logger.log('warn', 'config_reload_restart_needed', { keys: restartNeeded, message: 'these changes take effect at the next start' });
  return { ok: true, errors: [], applied, restartNeeded, loaded: next };
}
