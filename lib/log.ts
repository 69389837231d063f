/**
 * Structured JSON-lines logging over pino (docs/operations.md). One line per event:
 *
 *   {"level":"warn","time":"2026-11-24T10:00:00.000Z","event":"transport_fault","code":101503,...}
 *
 * level as a name, ISO time, the event name, then the event's fields (faults always carry code, base,
 * state and the request id: docs/operations.md). pino because its serialisation is the fastest measured
 * for Node (pino's own benchmarks; measured on a prototype): the hot path only calls a level method when the level is
 * enabled, and pino serialises once, synchronously, into the sink.
 *
 * Secrets never reach a line: fields named like credentials (password, client_secret, token, ...,
 * authorization) are replaced by "****" (pino's redact, the same mask as `config print`), and the query
 * strings of `url` and `path` fields have the values of credential-like parameters masked (redactUrl),
 * since a client may send `?access_token=` or `?client_secret=` (RFC 6750 §2.3 allows the former).
 */
import { pino, type Logger as PinoLogger } from 'pino';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export const LOG_LEVELS: readonly LogLevel[] = Object.freeze(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);

export interface Logger {
  readonly level: LogLevel;
  enabled(level: Exclude<LogLevel, 'silent'>): boolean;
  log(level: Exclude<LogLevel, 'silent'>, event: string, fields?: Record<string, unknown>): void;
}

/** A logger whose level can change while it runs (SIGHUP re-reads `[throughway] log_level`). */
export interface ReloadableLogger extends Logger {
  setLevel(level: LogLevel): void;
}

export interface LogSink {
  write(line: string): unknown;
}

/** The mask written in place of a secret (as `config print` does). */
export const MASK = '****';

/** Field names whose values are secrets, at the top level and one level down (pino redact paths). */
const SECRET_FIELDS = [
  'password',
  'passwd',
  'secret',
  'client_secret',
  'consumerSecret',
  'consumer_secret',
  'token',
  'access_token',
  'refresh_token',
  'id_token',
  'assertion',
  'authorization',
  'Authorization',
  'cookie',
  'apikey',
  'api_key',
];
const REDACT_PATHS = [...SECRET_FIELDS, ...SECRET_FIELDS.map((f) => `*.${f}`)];

/** Query parameter names whose values are masked in logged URLs (lower case, compared case-insensitively). */
const SECRET_PARAMS = /^(access_token|refresh_token|id_token|token|client_secret|password|passwd|secret|apikey|api_key|assertion|code)$/i;

/**
 * The URL with the values of credential-like query parameters masked: `/a?access_token=x&b=1` becomes
 * `/a?access_token=****&b=1`. The path and other parameters are kept byte for byte.
 */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  const parts = url.slice(q + 1).split('&');
  let changed = false;
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i] as string;
    const eq = p.indexOf('=');
    if (eq <= 0) continue;
    let name = p.slice(0, eq);
    try {
      name = decodeURIComponent(name);
    } catch {
      // keep the raw name
    }
    if (SECRET_PARAMS.test(name)) {
      parts[i] = `${p.slice(0, eq)}=${MASK}`;
      changed = true;
    }
  }
  return changed ? `${url.slice(0, q)}?${parts.join('&')}` : url;
}

function cleanFields(fields: Record<string, unknown>): Record<string, unknown> {
  const url = fields.url;
  const path = fields.path;
  if ((typeof url === 'string' && url.includes('?')) || (typeof path === 'string' && path.includes('?'))) {
    const copy = { ...fields };
    if (typeof url === 'string') copy.url = redactUrl(url);
    if (typeof path === 'string') copy.path = redactUrl(path);
    return copy;
  }
  return fields;
}

export function createLogger(level: LogLevel = 'info', sink: LogSink = process.stderr): ReloadableLogger {
  const p: PinoLogger = pino(
    {
      level,
      // The event name is the line's message; no pid/hostname on every line (the supervisor adds those).
      messageKey: 'event',
      base: null,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label: string) => ({ level: label }) },
      redact: { paths: REDACT_PATHS, censor: MASK },
    },
    sink as pino.DestinationStream,
  );
  return {
    get level() {
      return p.level as LogLevel;
    },
    setLevel(l: LogLevel) {
      p.level = l;
    },
    enabled: (l) => p.isLevelEnabled(l),
    log(l, event, fields) {
      if (!p.isLevelEnabled(l)) return;
      try {
        if (fields === undefined) p[l](event);
        // A field named `event` would clash with the event name: it is kept as `event_field`.
        else if ('event' in fields) {
          const { event: inner, ...rest } = fields;
          p[l]({ ...cleanFields(rest), event_field: inner }, event);
        } else p[l](cleanFields(fields), event);
      } catch {
        p[l]({ note: 'fields not serialisable' }, event);
      }
    },
  };
}

/** A logger that drops everything (embedding default when the host application passes none). */
export const silentLogger: Logger = createLogger('silent', { write: () => true });
