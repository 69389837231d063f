/**
 * The HTTP access log ([http_access_log], spec 001): one line per finished call, in the common log format
 * followed by four fields:
 *
 *   127.0.0.1 - - [22/Nov/2025:10:00:00 +0000] "GET /pizzashack/1.0.0/menu HTTP/1.1" 200 96 1.204 - - carbon.super
 *                                                                                     |   |  |     | |  ` tenant
 *                                                                                     |   |  |     | ` fault state
 *                                                                            status --'   |  |     `-- fault code
 *                                                                        body bytes ------'  `-- upstream ms
 *
 * Upstream ms: from the hand-off to a backend connection to the end of its response, "-" when no backend was
 * involved (a fault or preflight answered by the gateway). Fault code: the code of the fault behind the
 * response or abort, "-" for none. Fault state: for transport faults the protocol state that is part of
 * the code (spec 002 part 7, rule 1: code = base + state) written base+state, e.g. 101504+3; "-" for the
 * gateway's own codes, which carry no state. Tenant: the call's tenant (observability/tenant.ts callTenant:
 * `carbon.super` for the super tenant's calls, "-" for a `/t/<domain>/` URL whose domain is no tenant).
 *
 * Lines go to the file `[throughway] access_log_file` (under the working directory) or, with
 * `useLogger = true`, to the server log as `http_access` events. Credential-like query parameters
 * (`access_token`, `client_secret`, ...) are written masked (redactUrl, docs/operations.md). The date
 * part is built once per second. File lines are written byte by byte into a buffer as they come (put();
 * a line with a text outside ASCII is encoded from format()'s string instead, the same bytes), and the
 * buffer is handed to the file stream FLUSH_MS after the first of them waits, or as soon as 64 KiB are
 * waiting (nginx's `access_log ... buffer= flush=`): the same bytes in the same order. Handing them over
 * once per event-loop turn cost about 1 µs per call at 28,000 calls/s (a thread-pool write every few
 * calls; docs/performance.md).
 * close() writes what waits before ending the stream; a process that exits without close() writes it
 * synchronously on 'exit' (on a descriptor of its own if the stream has not opened its file yet).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
// From node:perf_hooks, not the global: the global `performance` is an accessor, and date() read it through a
// global-load IC on every call (about 170 instructions under callgrind; docs/performance.md).
import { performance } from 'node:perf_hooks';
import type { ExchangeRecord } from '../transport/types';
import { redactUrl, type Logger } from '../log';
import { SUPER_TENANT } from '../tenants';

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
  /** The wall clock (tests). */
  readonly now?: () => number;
  /** A monotonic clock in ms (tests): with it, or with the default wall clock, that is read once per second. */
  readonly mono?: () => number;
  /** ms a waiting line waits at most (tests; default FLUSH_MS). */
  readonly flushMs?: number;
}

/** Waiting lines are written at once when they reach this many bytes ... */
const FLUSH_AT = 65_536;
const monotonicNow = (): number => performance.now();
/** put()'s bound on a line's bytes beside its URL, address, method and version: the date, five numbers, separators. */
const PUT_FIXED = 256;

/*
 * put()'s writers: each returns the position after what it wrote, or -1 (carried through every later
 * call) when a character is outside ASCII, so one check at the end refuses the whole line.
 */
function putByte(b: Buffer, at: number, c: number): number {
  if (at < 0) return at;
  b[at] = c;
  return at + 1;
}

/**
 * Uint8Array's set(), read once: read from the buffer at each call, the optimised put() kept a generic load
 * of the method (its Buffers have several maps), as the transport's writers did (docs/performance.md).
 */
const bytesSet = Uint8Array.prototype.set;

/** ASCII bytes made once (the date part of a second, a fixed text). */
function putBytes(b: Buffer, at: number, bytes: Uint8Array): number {
  if (at < 0) return at;
  bytesSet.call(b, bytes, at);
  return at + bytes.length;
}

/** What follows the target in nearly every line. */
const HTTP11 = Buffer.from(' HTTP/1.1" ', 'latin1');
/** The end of a super tenant call's line. */
const SUPER_END = Buffer.from(` ${SUPER_TENANT}\n`, 'latin1');

function putAscii(b: Buffer, at: number, s: string): number {
  if (at < 0) return at;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c > 0x7e) return -1;
    b[at++] = c;
  }
  return at;
}

/**
 * Milliseconds with three decimals, rounded to the nearest microsecond (halves up). toFixed(3) gives the
 * same text but at halves, where it follows the double's exact binary value, and cost 0.1 us per call
 * under perf; values beyond 2^53 us (285 years) fall back to it.
 */
export function millis(ms: number): string {
  const us = microseconds(ms);
  if (us < 0) return ms.toFixed(3);
  const frac = us % 1000;
  return `${(us - frac) / 1000}.${frac < 10 ? '00' : frac < 100 ? '0' : ''}${frac}`;
}

/** millis(ms) written into `b`. */
function putMillis(b: Buffer, at: number, ms: number): number {
  const us = microseconds(ms);
  if (us < 0) return putAscii(b, at, ms.toFixed(3));
  const frac = us % 1000;
  at = putCount(b, at, (us - frac) / 1000);
  if (at < 0) return at;
  b[at] = 0x2e;
  b[at + 1] = 0x30 + Math.floor(frac / 100);
  b[at + 2] = 0x30 + (Math.floor(frac / 10) % 10);
  b[at + 3] = 0x30 + (frac % 10);
  return at + 4;
}

/** `ms` in whole microseconds, or -1 when that is not a safe non-negative integer (millis() then uses toFixed). */
function microseconds(ms: number): number {
  const us = Math.round(ms * 1000);
  return Number.isSafeInteger(us) && us >= 0 ? us : -1;
}

/** A non-negative integer (status, byte count, code) in decimal; anything else as String(n) would write it. */
function putCount(b: Buffer, at: number, n: number): number {
  if (at < 0) return at;
  if (!Number.isSafeInteger(n) || n < 0) return putAscii(b, at, String(n));
  let digits = 1;
  for (let x = n; x >= 10; x = Math.floor(x / 10)) digits++;
  let end = at + digits;
  let x = n;
  do {
    b[--end] = 0x30 + (x % 10);
    x = Math.floor(x / 10);
  } while (x > 0);
  return at + digits;
}
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
  /**
   * The bytes put() writes between the client's address and the method, ` - - <date> "`: the same for a
   * whole second, so copied in one step (written character by character they cost about 36 instructions
   * each under callgrind; docs/performance.md).
   */
  private afterAddress: Uint8Array = new Uint8Array(0);
  /** The monotonic clock date() keeps its text by (performance.now with the default wall clock). */
  private readonly mono: (() => number) | undefined;
  /** performance.now() before which the second of `dateText` has surely not ended; -1 before the first read. */
  private secondEnds = -1;
  constructor(options: AccessLogOptions) {
    this.now = options.now ?? Date.now;
    this.mono = options.mono ?? (options.now === undefined ? monotonicNow : undefined);
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
    const opened = (s as unknown as { fd?: number | null } | undefined)?.fd;
    if (this.buf === undefined || this.used === 0 || s === undefined || s.writableLength > 0) return;
    try {
      // Not opened yet (a loaded machine: the open had not come back): the stream has written nothing,
      // so a descriptor of our own keeps the order.
      const fd = typeof opened === 'number' ? opened : fs.openSync(s.path, 'a');
      fs.writeSync(fd, this.buf, 0, this.used);
      if (fd !== opened) fs.closeSync(fd);
      this.used = 0;
    } catch {
      // exiting anyway: nothing to report to
    }
  }

  /**
   * The date text of the current second. With the default clock the wall clock is read once per second
   * of the monotonic one: until performance.now() passes the end of the second read last, the text stands
   * (Date.now() cost 0.1 us per call under perf, a C++ runtime call; performance.now() is a fast API
   * call). A wall clock set back or forward shows from the next second's read on.
   */
  private date(): string {
    const clock = this.mono;
    const mono = clock === undefined ? 0 : clock();
    if (mono < this.secondEnds) return this.dateText;
    const t = this.now();
    const s = Math.floor(t / 1000);
    if (s !== this.second) {
      this.second = s;
      this.dateText = clfDate(t);
      this.afterAddress = Buffer.from(` - - ${this.dateText} "`, 'latin1');
    }
    // Date.now() is whole ms, so the second may end 999 - (t mod 1000) ms on at the earliest.
    if (clock !== undefined) this.secondEnds = mono + 999 - (t - s * 1000);
    return this.dateText;
  }

  /**
   * The line for one record (exported for tests through format()). `tenant` is the call's tenant ("-" for
   * none). A GraphQL call's line ends with its operation, `graphql=QUERY:name` (`-` for an anonymous one;
   * docs/graphql.md); a gRPC call's with the status its client was sent, `grpc-status=14` (`-` for none:
   * the client left first; docs/grpc.md), since its HTTP status is 200 whatever the call's outcome.
   */
  format(r: ExchangeRecord, op?: { readonly type: string; readonly name: string }, tenant: string = SUPER_TENANT): string {
    const fault = r.fault;
    const code = r.faultCode ?? fault?.code;
    const bytes = r.responseBytes > 0 ? String(r.responseBytes) : '-';
    const upstream = r.upstreamMs >= 0 ? millis(r.upstreamMs) : '-';
    const state = fault !== undefined && fault.code === code ? `${fault.base}+${fault.state}` : '-';
    const line = `${r.remoteAddress || '-'} - - ${this.date()} "${r.method} ${redactUrl(r.url)} HTTP/${r.httpVersion}" ${r.status || '-'} ${bytes} ${upstream} ${code ?? '-'} ${state} ${tenant}`;
    if (r.grpcStatus !== undefined) return `${line} grpc-status=${r.grpcStatus < 0 ? '-' : r.grpcStatus}`;
    return op === undefined ? line : `${line} graphql=${op.type}:${op.name === '' ? '-' : op.name}`;
  }

  record(r: ExchangeRecord, op?: { readonly type: string; readonly name: string }, tenant: string = SUPER_TENANT): void {
    if (this.logger !== undefined) {
      this.logger.log('info', 'http_access', { line: this.format(r, op, tenant) });
      return;
    }
    const stream = this.stream;
    if (stream === undefined) return;
    if (op === undefined && r.grpcStatus === undefined && this.put(r, tenant)) return this.written();
    const text = this.format(r, op, tenant) + '\n';
    if (text.length * 3 > BUFFER_SIZE) {
      // A line longer than the buffer (a very long URL) goes on its own, after those before it.
      this.flushNow();
      stream.write(text);
      return;
    }
    const buf = this.room(text.length * 3);
    this.used += buf.write(text, this.used);
    this.written();
  }

  /** The line buffer with at least `bytes` free (at most BUFFER_SIZE): the waiting lines go first when they leave less. */
  private room(bytes: number): Buffer {
    if (this.buf === undefined || this.buf.length - this.used < bytes) {
      this.flushNow();
      this.buf = Buffer.allocUnsafe(BUFFER_SIZE);
    }
    return this.buf;
  }

  /** After a line went into the buffer: written at FLUSH_AT, else FLUSH_MS after the first line waits. */
  private written(): void {
    if (this.used >= FLUSH_AT) this.flushNow();
    else if (this.timer === undefined) {
      this.timer = setTimeout(this.flushNow, this.flushMs);
      // The log's timer never keeps a stopping process alive; 'exit' writes what waits.
      this.timer.unref();
    }
  }

  /**
   * format(r)'s line and its newline, written byte by byte into the buffer without making the string:
   * false, with nothing written, when a text holds a character outside ASCII (record() then encodes
   * format()'s string as UTF-8) or the line could be longer than the buffer. The same bytes as format()
   * (test/gateway/access-log.test.ts compares them); a line made as a string and encoded cost 0.8 us per
   * call under perf on the full gateway, half of it flattening and encoding (docs/performance.md).
   */
  private put(r: ExchangeRecord, tenant: string): boolean {
    const url = redactUrl(r.url);
    const remote = r.remoteAddress;
    // Every other text is ASCII and short: the date (28), the version, numbers and codes.
    const most = url.length + remote.length + r.method.length + r.httpVersion.length + tenant.length + PUT_FIXED;
    if (most > BUFFER_SIZE) return false;
    const b = this.room(most);
    let at = this.used;
    const fault = r.fault;
    const code = r.faultCode ?? fault?.code;
    at = remote === '' ? putByte(b, at, 0x2d) : putAscii(b, at, remote);
    this.date(); // brings afterAddress to this second
    at = putBytes(b, at, this.afterAddress);
    at = putAscii(b, at, r.method);
    at = putByte(b, at, 0x20);
    at = putAscii(b, at, url);
    const version = r.httpVersion;
    if (version === '1.1') at = putBytes(b, at, HTTP11);
    else {
      at = putAscii(b, at, ' HTTP/');
      at = putAscii(b, at, version);
      at = putAscii(b, at, '" ');
    }
    at = r.status ? putCount(b, at, r.status) : putByte(b, at, 0x2d);
    at = putByte(b, at, 0x20);
    at = r.responseBytes > 0 ? putCount(b, at, r.responseBytes) : putByte(b, at, 0x2d);
    at = putByte(b, at, 0x20);
    at = r.upstreamMs >= 0 ? putMillis(b, at, r.upstreamMs) : putByte(b, at, 0x2d);
    at = putByte(b, at, 0x20);
    at = code === undefined ? putByte(b, at, 0x2d) : putCount(b, at, code);
    at = putByte(b, at, 0x20);
    if (fault !== undefined && fault.code === code) {
      at = putCount(b, at, fault.base);
      at = putByte(b, at, 0x2b);
      at = putCount(b, at, fault.state);
    } else at = putByte(b, at, 0x2d);
    if (tenant === SUPER_TENANT) at = putBytes(b, at, SUPER_END);
    else {
      at = putByte(b, at, 0x20);
      at = putAscii(b, at, tenant);
      at = putByte(b, at, 0x0a);
    }
    if (at < 0) return false;
    this.used = at;
    return true;
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
