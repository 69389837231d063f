/**
 * A small, independent HTTP/1.1 message reader for the test side of the wire (raw clients read responses
 * with it, raw backends read requests). It is deliberately not the transport's parser: a test that used
 * the code under test to read its own output could not catch that code's mistakes.
 *
 * It understands what the tests send and expect: Content-Length, chunked (with extensions and trailers),
 * read-until-close responses, 1xx interim responses, 204/304 and responses to HEAD. Bodies can be kept
 * (small tests) or only streamed to a callback (the 100 MiB tests hash them instead).
 */

export interface Head {
  /** The start line without its CRLF, latin1. */
  readonly startLine: string;
  /** The head's exact bytes, from the start line to the blank line (CRLF CRLF) included. */
  readonly rawHead: Buffer;
  /** [name, value] pairs exactly as sent (latin1, case kept, values trimmed of OWS as RFC 9112 §5 says). */
  readonly rawHeaders: readonly (readonly [string, string])[];
  /** Lower-case name -> value; repeated fields joined with ", ". */
  readonly headers: Readonly<Record<string, string>>;
  readonly version: string;
  /** Requests. */
  readonly method: string;
  readonly url: string;
  /** Responses. */
  readonly status: number;
  readonly reason: string;
}

export interface Message extends Head {
  /** 1xx response: no body, the final response follows. */
  readonly interim: boolean;
  readonly chunked: boolean;
  /** The payload (chunk framing removed); empty when bodies are not kept. */
  readonly body: Buffer;
  /** The body bytes exactly as on the wire (chunk framing and trailers included); empty when not kept. */
  readonly rawBody: Buffer;
  /** Payload byte count (counted even when the body is not kept). */
  readonly bodyLength: number;
  /** The message ended at its framing's end (false: cut short by the connection closing). */
  readonly complete: boolean;
}

export interface ReaderOptions {
  /** Keep bodies in memory (default true). */
  readonly keepBody?: boolean;
  /** Every payload piece, as it arrives. */
  readonly onBody?: (piece: Buffer, head: Head) => void;
  /** Every head, as soon as it is complete. */
  readonly onHead?: (head: Head) => void;
}

const enum Phase {
  HEAD,
  LENGTH,
  CHUNK_SIZE,
  CHUNK_DATA,
  CHUNK_CRLF,
  TRAILERS,
  UNTIL_CLOSE,
}

const EMPTY = Buffer.alloc(0);
const CRLFCRLF = Buffer.from('\r\n\r\n', 'latin1');

/** Splits a head (latin1, without the final blank line) into its start line and fields. */
export function parseHead(raw: Buffer, type: 'request' | 'response'): Head {
  const text = raw.toString('latin1');
  const lines = text.slice(0, text.length - 4).split('\r\n');
  const startLine = lines[0] ?? '';
  const rawHeaders: [string, string][] = [];
  const headers: Record<string, string> = {};
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i] as string;
    const colon = line.indexOf(':');
    if (colon <= 0) throw new Error(`test reader: malformed header line ${JSON.stringify(line)}`);
    const name = line.slice(0, colon);
    const value = line.slice(colon + 1).replace(/^[ \t]+|[ \t]+$/g, '');
    rawHeaders.push([name, value]);
    const lower = name.toLowerCase();
    headers[lower] = headers[lower] === undefined ? value : headers[lower] + ', ' + value;
  }
  let method = '';
  let url = '';
  let version = '';
  let status = 0;
  let reason = '';
  if (type === 'request') {
    const m = /^(\S+) (\S+) (HTTP\/\d\.\d)$/.exec(startLine);
    if (m === null) throw new Error(`test reader: malformed request line ${JSON.stringify(startLine)}`);
    method = m[1] as string;
    url = m[2] as string;
    version = m[3] as string;
  } else {
    const m = /^(HTTP\/\d\.\d) (\d{3}) ?(.*)$/.exec(startLine);
    if (m === null) throw new Error(`test reader: malformed status line ${JSON.stringify(startLine)}`);
    version = m[1] as string;
    status = Number(m[2]);
    reason = m[3] as string;
  }
  return { startLine, rawHead: raw, rawHeaders, headers, version, method, url, status, reason };
}

export class MessageReader {
  /** Completed messages, in order (interim responses included). */
  readonly messages: Message[] = [];
  /** Responses to HEAD requests have no body (RFC 9110 §9.3.2): say so per expected response, in order. */
  readonly headRequests: boolean[] = [];
  private phase = Phase.HEAD;
  private pending: Buffer = EMPTY;
  private head: Head | undefined;
  private remaining = 0;
  private chunked = false;
  private bodyPieces: Buffer[] = [];
  private rawPieces: Buffer[] = [];
  private bodyLength = 0;
  private readonly keepBody: boolean;
  private waiters: (() => void)[] = [];

  constructor(
    readonly type: 'request' | 'response',
    private readonly options: ReaderOptions = {},
  ) {
    this.keepBody = options.keepBody ?? true;
  }

  /** Feed bytes as they arrive. */
  push(data: Buffer): void {
    let buf = this.pending.length === 0 ? data : Buffer.concat([this.pending, data]);
    while (buf.length > 0) {
      const rest = this.step(buf);
      if (rest.length === buf.length) break; // needs more bytes
      buf = rest;
    }
    this.pending = buf.length === 0 ? EMPTY : Buffer.from(buf);
  }

  /** The connection ended: a read-until-close body is complete, anything else in progress is cut short. */
  end(): void {
    if (this.head !== undefined && this.phase !== Phase.HEAD) this.finish(this.phase === Phase.UNTIL_CLOSE);
  }

  /** Bytes received that do not (yet) form a complete head or body part. */
  get leftover(): Buffer {
    return this.pending;
  }

  /** Resolves when at least `count` messages are complete. */
  async waitFor(count: number): Promise<void> {
    while (this.messages.length < count) await new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  /** Wake waiters (the owner calls it on close so they can re-check). */
  wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  private step(buf: Buffer): Buffer {
    switch (this.phase) {
      case Phase.HEAD: {
        const at = buf.indexOf(CRLFCRLF);
        if (at < 0) return buf;
        const head = parseHead(Buffer.from(buf.subarray(0, at + 4)), this.type);
        this.startMessage(head);
        return buf.subarray(at + 4);
      }
      case Phase.LENGTH: {
        const n = Math.min(this.remaining, buf.length);
        this.payload(buf.subarray(0, n));
        this.wire(buf.subarray(0, n));
        this.remaining -= n;
        if (this.remaining === 0) this.finish(true);
        return buf.subarray(n);
      }
      case Phase.UNTIL_CLOSE:
        this.payload(buf);
        this.wire(buf);
        return buf.subarray(buf.length);
      case Phase.CHUNK_SIZE: {
        const at = buf.indexOf('\r\n');
        if (at < 0) return buf;
        const line = buf.subarray(0, at).toString('latin1');
        this.wire(buf.subarray(0, at + 2));
        const size = parseInt(line.split(';')[0] as string, 16);
        if (!Number.isFinite(size)) throw new Error(`test reader: bad chunk size line ${JSON.stringify(line)}`);
        this.remaining = size;
        this.phase = size === 0 ? Phase.TRAILERS : Phase.CHUNK_DATA;
        return buf.subarray(at + 2);
      }
      case Phase.CHUNK_DATA: {
        const n = Math.min(this.remaining, buf.length);
        this.payload(buf.subarray(0, n));
        this.wire(buf.subarray(0, n));
        this.remaining -= n;
        if (this.remaining === 0) this.phase = Phase.CHUNK_CRLF;
        return buf.subarray(n);
      }
      case Phase.CHUNK_CRLF: {
        if (buf.length < 2) return buf;
        if (buf[0] !== 13 || buf[1] !== 10) throw new Error('test reader: chunk data not followed by CRLF');
        this.wire(buf.subarray(0, 2));
        this.phase = Phase.CHUNK_SIZE;
        return buf.subarray(2);
      }
      case Phase.TRAILERS: {
        const at = buf.indexOf('\r\n');
        if (at < 0) return buf;
        this.wire(buf.subarray(0, at + 2));
        if (at === 0) this.finish(true);
        return buf.subarray(at + 2);
      }
      default:
        return buf;
    }
  }

  private startMessage(head: Head): void {
    this.head = head;
    this.bodyPieces = [];
    this.rawPieces = [];
    this.bodyLength = 0;
    this.chunked = false;
    this.options.onHead?.(head);
    if (this.type === 'response' && head.status >= 100 && head.status < 200) {
      this.finish(true, true);
      return;
    }
    const isHead = this.type === 'response' ? (this.headRequests.shift() ?? false) : false;
    const te = head.headers['transfer-encoding'];
    const cl = head.headers['content-length'];
    if (this.type === 'response' && (isHead || head.status === 204 || head.status === 304)) {
      this.finish(true);
    } else if (te !== undefined && /(^|,)\s*chunked\s*$/i.test(te)) {
      this.chunked = true;
      this.phase = Phase.CHUNK_SIZE;
    } else if (cl !== undefined) {
      this.remaining = Number(cl);
      if (this.remaining === 0) this.finish(true);
      else this.phase = Phase.LENGTH;
    } else if (this.type === 'response') {
      this.phase = Phase.UNTIL_CLOSE;
    } else {
      this.finish(true);
    }
  }

  private payload(piece: Buffer): void {
    if (piece.length === 0) return;
    this.bodyLength += piece.length;
    if (this.keepBody) this.bodyPieces.push(Buffer.from(piece));
    this.options.onBody?.(piece, this.head as Head);
  }

  private wire(piece: Buffer): void {
    if (this.keepBody && piece.length > 0) this.rawPieces.push(Buffer.from(piece));
  }

  private finish(complete: boolean, interim = false): void {
    const head = this.head as Head;
    this.messages.push({
      ...head,
      interim,
      chunked: this.chunked,
      body: Buffer.concat(this.bodyPieces),
      rawBody: Buffer.concat(this.rawPieces),
      bodyLength: this.bodyLength,
      complete,
    });
    this.head = undefined;
    this.phase = Phase.HEAD;
    this.wake();
  }
}
