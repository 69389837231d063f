/**
 * The HTTP access log ([http_access_log], spec 001): one line per finished call, in the common log format
 * followed by three fields:
 *
 *   127.0.0.1 - - [22/Nov/2025:10:00:00 +0000] "GET /pizzashack/1.0.0/menu HTTP/1.1" 200 96 1.204 - -
 *                                                                                     |   |  |     | ` fault state
 *                                                                            status --'   |  |     `-- fault code
 *                                                                        body bytes ------'  `-- upstream ms
 *
 * Upstream ms: from the hand-off to a backend connection to the end of its response, "-" when no backend was
 * involved (a fault or preflight answered by the gateway). Fault code: the code of the fault behind the
 * response or abort, "-" for none. Fault state: for transport faults the protocol state that is part of
 * the code (spec 002 part 7, rule 1: code = base + state) written base+state, e.g. 101504+3; "-" for the
 * gateway's own codes, which carry no state.
 *
 * Lines go to the file `[throughway] access_log_file` (under the working directory) or, with
 * `useLogger = true`, to the server log as `http_access` events. Credential-like query parameters
 * (`access_token`, `client_secret`, ...) are written masked (redactUrl, docs/operations.md). The hot path formats one string; the date
 * part is built once per second. File lines are encoded into a buffer as they come and handed to the file
 * stream FLUSH_MS after the first of them waits, or as soon as 64 KiB are waiting (nginx's
 * `access_log ... buffer= flush=`): the same bytes in the same order. Handing them over once per event-loop
 * turn cost about 1 µs per call at 28,000 calls/s (a thread-pool write every few calls; docs/performance.md).
 * close() writes what waits before ending the stream; a process that exits without close() writes it
 * synchronously on 'exit' (once the stream has opened its file).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ExchangeRecord } from '../transport/types';
import { redactUrl, type Logger } from '../log';

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const pad = (n: number): string => (n < 10 ? '0' + n : String(n));

/** `[10/Oct/2000:13:55:36 +0000]` for a time in ms (UTC). */
export function clfDate(ms: number): string {
  const d = new Date(ms);
  return `[${pad(d.getUTCDate())}/${MONTHS[d.getUTCMonth()]}/${d.getUTCFullYear()}:${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())} +0000]`;
}

export interface AccessLogOptions {
  readonly file?: string;
  readonly logger?: Logger;
  /** The clock (tests). */
  readonly now?: () => number;
  /** ms a waiting line waits at most (tests; default FLUSH_MS). */
  readonly flushMs?: number;
}

/** Waiting lines are written at once when they reach this many bytes ... */
const FLUSH_AT = 65_536;
/** Each line is encoded into a buffer of this size as it comes (a line's UTF-8 takes at most 3 bytes per UTF-16 unit). */
const BUFFER_SIZE = 81_920;
/** ... else this many ms after the first of them (a `tail -f` sees a line within this time). */
export const FLUSH_MS = 100;

/** Logs with a file open, so an exit without close() still writes their waiting lines. */
const open = new Set<AccessLog>();
let exitHooked = false;

export class AccessLog {
  private stream: fs.WriteStream | undefined;
  /**
   * The waiting lines, UTF-8 in `buf` up to `used`. Each line is encoded as it is recorded: joining the
   * strings and encoding them at flush time spent 2 % of the full gateway's CPU flattening a string of a
   * thousand parts (perf, docs/performance.md).
   */
  private buf: Buffer | undefined;
  private used = 0;
  /** Armed by the first waiting line, cleared by every flush. */
  private timer: NodeJS.Timeout | undefined;
  private readonly flushNow = (): void => {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    const buf = this.buf;
    const used = this.used;
    this.buf = undefined;
    this.used = 0;
    // The stream keeps the buffer until written: the next line gets a new one.
    if (buf !== undefined && used > 0) this.stream?.write(buf.subarray(0, used));
  };
  private readonly logger: Logger | undefined;
  private readonly now: () => number;
  private readonly flushMs: number;
  private second = -1;
  private dateText = '';
  constructor(options: AccessLogOptions) {
    this.now = options.now ?? Date.now;
    this.flushMs = options.flushMs ?? FLUSH_MS;
    if (options.logger !== undefined) {
      this.logger = options.logger;
    } else if (options.file !== undefined) {
      fs.mkdirSync(path.dirname(options.file), { recursive: true });
      this.stream = fs.createWriteStream(options.file, { flags: 'a' });
      // A full disk must not crash the gateway: the log is lost, the traffic is not.
      this.stream.on('error', () => undefined);
      open.add(this);
      if (!exitHooked) {
        exitHooked = true;
        process.on('exit', () => {
          for (const log of open) log.flushSync();
        });
      }
    }
  }

  /** At exit: the waiting lines, written at once when the stream has nothing in flight (else in order is impossible). */
  private flushSync(): void {
    const s = this.stream;
    // fs.WriteStream has its descriptor once opened (Node's fs docs; not in @types/node).
    const fd = (s as unknown as { fd?: number | null } | undefined)?.fd;
    if (this.buf === undefined || this.used === 0 || s === undefined || typeof fd !== 'number' || s.writableLength > 0) return;
    try {
      fs.writeSync(fd, this.buf, 0, this.used);
      this.used = 0;
    } catch {
      // exiting anyway: nothing to report to
    }
  }

  private date(): string {
    const t = this.now();
    const s = Math.floor(t / 1000);
    if (s !== this.second) {
      this.second = s;
      this.dateText = clfDate(t);
    }
    return this.dateText;
  }

  /**
   * The line for one record (exported for tests through format()). A GraphQL call's line ends with its
   * operation, `graphql=QUERY:name` (`-` for an anonymous one; docs/graphql.md).
   */
  format(r: ExchangeRecord, op?: { readonly type: string; readonly name: string }): string {
    const fault = r.fault;
    const code = r.faultCode ?? fault?.code;
    const bytes = r.responseBytes > 0 ? String(r.responseBytes) : '-';
    const upstream = r.upstreamMs >= 0 ? r.upstreamMs.toFixed(3) : '-';
    const state = fault !== undefined && fault.code === code ? `${fault.base}+${fault.state}` : '-';
    const line = `${r.remoteAddress || '-'} - - ${this.date()} "${r.method} ${redactUrl(r.url)} HTTP/${r.httpVersion}" ${r.status || '-'} ${bytes} ${upstream} ${code ?? '-'} ${state}`;
    return op === undefined ? line : `${line} graphql=${op.type}:${op.name === '' ? '-' : op.name}`;
  }

  record(r: ExchangeRecord, op?: { readonly type: string; readonly name: string }): void {
    const line = this.format(r, op);
    if (this.logger !== undefined) {
      this.logger.log('info', 'http_access', { line });
      return;
    }
    if (this.stream === undefined) return;
    const text = line + '\n';
    if (this.buf === undefined || this.buf.length - this.used < text.length * 3) {
      this.flushNow();
      if (text.length * 3 > BUFFER_SIZE) {
        // A line longer than the buffer (a very long URL) goes on its own, after those before it.
        this.stream.write(text);
        return;
      }
      this.buf = Buffer.allocUnsafe(BUFFER_SIZE);
    }
    this.used += this.buf.write(text, this.used);
    if (this.used >= FLUSH_AT) this.flushNow();
    else if (this.timer === undefined) {
      this.timer = setTimeout(this.flushNow, this.flushMs);
      // The log's timer never keeps a stopping process alive; 'exit' writes what waits.
      this.timer.unref();
    }
  }

  close(): Promise<void> {
    this.flushNow();
    open.delete(this);
    const s = this.stream;
    this.stream = undefined;
    if (s === undefined) return Promise.resolve();
    return new Promise((resolve) => s.end(() => resolve()));
  }
}
