/**
 * Structured JSON-lines logging. One line per event: time, level, event name, and the event's fields
 * (faults always carry code, base and state). The hot path only calls a level method when the level is
 * enabled; serialising happens once, here.
 */
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

const LEVELS: Readonly<Record<LogLevel, number>> = { fatal: 60, error: 50, warn: 40, info: 30, debug: 20, trace: 10, silent: Infinity };

export interface Logger {
  readonly level: LogLevel;
  enabled(level: Exclude<LogLevel, 'silent'>): boolean;
  log(level: Exclude<LogLevel, 'silent'>, event: string, fields?: Record<string, unknown>): void;
}

export interface LogSink {
  write(line: string): unknown;
}

export function createLogger(level: LogLevel = 'info', sink: LogSink = process.stderr): Logger {
  const threshold = LEVELS[level];
  return {
    level,
    enabled: (l) => LEVELS[l] >= threshold,
    log(l, event, fields) {
      if (LEVELS[l] < threshold) return;
      let line: string;
      try {
        line = JSON.stringify({ time: new Date().toISOString(), level: l, event, ...fields });
      } catch {
        line = JSON.stringify({ time: new Date().toISOString(), level: l, event, note: 'fields not serialisable' });
      }
      sink.write(line + '\n');
    },
  };
}

/** A logger that drops everything (embedding default when the host application passes none). */
export const silentLogger: Logger = createLogger('silent', { write: () => true });
