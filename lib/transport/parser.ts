/**
 * HTTP/1.1 message parser: a thin adapter over llhttp's WebAssembly build (lib/transport/llhttp-wasm.ts).
 *
 * Shape taken from undici's lib/dispatcher/client-h1.js: one wasm instance per process, one input buffer
 * inside wasm memory shared by every parser (one copy per execute), and a module-level "current parser"
 * the wasm imports dispatch to. Body bytes are handed out as offsets into the caller's own Buffer (zero
 * copy); start line and header bytes are decoded as latin1 straight from the caller's Buffer too.
 *
 * Parsing is strict: no llhttp lenient flag is ever set, so CL+TE together, duplicate Content-Length,
 * invalid header tokens, obs-fold, NUL, bare LF and invalid chunk sizes are errors (the request smuggling
 * vectors of RFC 9112 sections 6.1, 6.3 and 11.2).
 *
 * Head size: `headBytes` counts every byte of the head, from the first byte of the start line to the end
 * of the empty line that ends the header section (RFC 9112 section 2.1). To know where a head starts and
 * ends inside a chunk, the adapter pauses llhttp internally at message-begin and at headers-complete
 * (the only way to learn the byte position of those two events) and resumes at once; the user's
 * `onHead` runs at that headers-complete pause, outside the wasm callback, after the size check.
 * Trailer fields are bounded by the same limit, and so is each run of chunk framing between two data
 * bytes (chunk extensions reach no callback in this build, so nothing else would bound them).
 */
import { instantiateLlhttp, LlhttpExports, LlhttpImports, LlhttpLoadError } from './llhttp-wasm';
import { InternalError } from '../errors';

/** What {@link HttpParser.execute} and {@link HttpParser.finish} report. */
export const enum ExecStatus {
  /** All bytes consumed; feed more when they arrive. */
  OK = 0,
  /** Stopped by a PAUSE from onHead or onComplete; `consumed` says where. resume(), then execute the rest. */
  PAUSED = 1,
  /** Connection upgraded (101 response, Upgrade request, CONNECT); `consumed` = first tunnel byte. */
  UPGRADE = 2,
  /** Malformed input or head over maxHeaderSize; see `errorName`, `errorReason`. The parser stays failed. */
  ERROR = 3,
}

/** onHead / onComplete return value: carry on. */
export const HEAD_CONTINUE = 0;
/** onHead return value: this message has no body whatever its headers say (response to HEAD, RFC 9110 9.3.2). */
export const HEAD_SKIP_BODY = 1;
/** onHead / onComplete return value: stop right after the head / the message (exact byte offset in `consumed`). */
export const PAUSE = -1;

export interface ParserEvents {
  /** The head is complete; read parser.method/url/statusCode/headers/... Return HEAD_CONTINUE, HEAD_SKIP_BODY (response to HEAD), or PAUSE (stop right after the head; execute() returns PAUSED with `consumed` = offset of the first body byte). */
  onHead(parser: HttpParser): number;
  /** Body bytes chunk[start, end) of the Buffer passed to execute (zero copy: offsets into the caller's chunk, not into wasm memory). Chunked framing is already removed. */
  onBody(chunk: Buffer, start: number, end: number): void;
  /** The message is complete. Return PAUSE to stop right after it (execute() returns PAUSED, `consumed` = offset of the next message's first byte) or HEAD_CONTINUE. */
  onComplete(parser: HttpParser): number;
}

// llhttp constants, each checked against the module when it loads (see checkModule).
const TYPE_REQUEST = 1;
const TYPE_RESPONSE = 2;
const HPE_OK = 0;
const HPE_PAUSED = 21;
const HPE_PAUSED_UPGRADE = 22;
const HPE_USER = 24;

// Fields of llhttp_t (llhttp.h, wasm32 layout) read or written directly. Checked at load and by selfTest.
const OFF_CONTENT_LENGTH = 32; // uint64_t content_length
const OFF_TYPE = 40; // uint8_t type
const OFF_METHOD = 41; // uint8_t method
const OFF_HTTP_MAJOR = 42; // uint8_t http_major
const OFF_HTTP_MINOR = 43; // uint8_t http_minor
const OFF_FLAGS = 50; // uint16_t flags
const OFF_STATUS_CODE = 52; // uint16_t status_code
const F_CHUNKED = 1 << 3;
const F_CONTENT_LENGTH = 1 << 5;
const F_SKIPBODY = 1 << 6;

// Why llhttp is paused: set by the callback that returned HPE_PAUSED.
const PAUSE_NONE = 0;
const PAUSE_BEGIN = 1; // internal, to learn where the head starts
const PAUSE_HEAD = 2; // internal, to learn where the head ends; onHead runs here
const PAUSE_COMPLETE = 3; // onComplete returned PAUSE

// Which kind of span llhttp reported last: a span split across two execute() calls arrives as two
// callbacks of the same kind, which are joined.
const SPAN_NONE = 0;
const SPAN_FIELD = 1;
const SPAN_VALUE = 2;

// Where the parser is in a message.
const PHASE_IDLE = 0; // between messages
const PHASE_HEAD = 1; // message begun, head not complete
const PHASE_BODY = 2; // head done, message not complete
const PHASE_UPGRADED = 3; // the rest of the connection is not HTTP/1.1
const PHASE_FAILED = 4;
const PHASE_DESTROYED = 5;

// Our own limits; errorName when one is hit.
const LIMIT_NONE = 0;
const LIMIT_HEAD = 1; // 'HPE_HEADER_OVERFLOW': head or trailer section over maxHeaderSize
const LIMIT_FRAMING = 2; // 'HPE_CHUNK_EXTENSIONS_OVERFLOW' (Node's name): chunk framing over maxHeaderSize

const UINT32 = 0x1_0000_0000;
const INPUT_GRANULE = 64 * 1024;
/**
 * execute() copies its chunk into wasm memory in windows that start at this size and double. A PAUSE
 * (taken at every head and, pipelining, at every message end) makes the caller execute the rest again,
 * and copying all of it each time would be quadratic in the number of messages per chunk; with windows
 * each execute copies at most about twice what it parses plus this much.
 */
const FIRST_WINDOW = 4096;

/** Buffer's latin1 decoder: present at runtime, missing from @types/node. One byte per char, no copy. */
interface Latin1Buffer extends Buffer {
  latin1Slice(start: number, end: number): string;
}
if (typeof (Buffer.prototype as Partial<Latin1Buffer>).latin1Slice !== 'function') {
  throw new LlhttpLoadError('this Node.js has no Buffer.prototype.latin1Slice; throughway needs Node 20 or later');
}
const EMPTY = Buffer.alloc(0) as Latin1Buffer;
/**
 * Buffer's methods, read once and called with `.call()`: read from the Buffer at each call (`chunk.latin1Slice`,
 * `buf.copy`), V8's optimising compiler left a generic property load in decoded() and execute() (these sites
 * see Buffers of several maps), about 77 instructions each under callgrind (docs/performance.md, "Counting
 * instructions"); a constant function is called directly.
 */
const latin1Slice = (Buffer.prototype as Latin1Buffer).latin1Slice;
const bufferCopy = Buffer.prototype.copy;

// ---- the one wasm instance, and the state shared by all parsers ------------------------------------------

/** The parser inside execute()/finish(); the wasm imports dispatch to it (never nested: one shared wasm instance). */
let current: HttpParser | null = null;
/** The Buffer being executed and the value that turns a wasm address into an offset in it. */
let chunk: Latin1Buffer = EMPTY;
let delta = 0;
let inputPtr = 0;
let inputCap = 0;
let heap: Uint8Array;
/** The same memory as `heap`, read four bytes at a time by sameOrDecoded. */
let heapView: DataView;

const imports: LlhttpImports = {
  wasm_on_message_begin: (p) => active(p).onMessageBegin(),
  wasm_on_url: (p, at, len) => active(p).onUrl(at, len),
  wasm_on_status: (p, at, len) => active(p).onStatus(at, len),
  wasm_on_header_field: (p, at, len) => active(p).onHeaderField(at, len),
  wasm_on_header_value: (p, at, len) => active(p).onHeaderValue(at, len),
  wasm_on_headers_complete: (p, statusCode, upgrade, keepAlive) => active(p).onHeadersComplete(statusCode, upgrade, keepAlive),
  wasm_on_body: (p, at, len) => active(p).onBodySpan(at, len),
  wasm_on_message_complete: (p) => active(p).onMessageComplete(),
};

const llhttp: LlhttpExports = instantiateLlhttp(imports);
refreshHeap();
growInput(INPUT_GRANULE);
const errnoNames: string[] = [];
const methodNames: string[] = [];
checkModule();

function active(p: number): HttpParser {
  const parser = current;
  if (parser === null || parser.ptr !== p) {
    throw new InternalError(`llhttp called back for parser ${p} outside its execute() (current: ${parser?.ptr ?? 'none'})`);
  }
  return parser;
}

/** Memory growth (any malloc may grow it) detaches the old ArrayBuffer, so the view is rebuilt after each. */
function refreshHeap(): void {
  if (heap === undefined || heap.buffer !== llhttp.memory.buffer) {
    heap = new Uint8Array(llhttp.memory.buffer);
    heapView = new DataView(llhttp.memory.buffer);
  }
}

function growInput(size: number): void {
  if (inputPtr !== 0) llhttp.free(inputPtr);
  inputCap = Math.ceil(size / INPUT_GRANULE) * INPUT_GRANULE;
  inputPtr = llhttp.malloc(inputCap);
  if (inputPtr === 0) throw new InternalError(`llhttp-wasm: cannot allocate a ${inputCap}-byte input buffer`);
  refreshHeap();
}

function cString(ptr: number): string {
  if (ptr === 0) return '';
  const end = heap.indexOf(0, ptr);
  return Buffer.from(heap.buffer, ptr, end - ptr).toString('latin1');
}

function errnoName(errno: number): string {
  let name = errnoNames[errno];
  if (name === undefined) name = errnoNames[errno] = cString(llhttp.llhttp_errno_name(errno));
  return name;
}

/** Method numbers come from llhttp itself; llhttp_method_name aborts on an unknown one, so never guess. */
function methodName(method: number): string {
  let name = methodNames[method];
  if (name === undefined) name = methodNames[method] = cString(llhttp.llhttp_method_name(method));
  return name;
}

function u16(addr: number): number {
  return heap[addr]! | (heap[addr + 1]! << 8);
}

function u32(addr: number): number {
  return (heap[addr]! | (heap[addr + 1]! << 8) | (heap[addr + 2]! << 16)) + heap[addr + 3]! * 0x100_0000;
}

/** The constants above are llhttp's own; a module that disagrees must not start. */
function checkModule(): void {
  const expect = (what: string, got: unknown, want: unknown): void => {
    if (got !== want) throw new LlhttpLoadError(`${what} is ${String(got)}, expected ${String(want)}`);
  };
  expect('errno 0', errnoName(HPE_OK), 'HPE_OK');
  expect('errno 21', errnoName(HPE_PAUSED), 'HPE_PAUSED');
  expect('errno 22', errnoName(HPE_PAUSED_UPGRADE), 'HPE_PAUSED_UPGRADE');
  expect('errno 24', errnoName(HPE_USER), 'HPE_USER');
  for (const type of [TYPE_REQUEST, TYPE_RESPONSE]) {
    const p = llhttp.llhttp_alloc(type);
    refreshHeap();
    try {
      expect(`llhttp_get_type(llhttp_alloc(${type}))`, llhttp.llhttp_get_type(p), type);
      expect('llhttp_t.type', heap[p + OFF_TYPE], type);
    } finally {
      llhttp.llhttp_free(p);
    }
  }
}

/** Trailing OWS is not part of a field value (RFC 9110 5.5, RFC 9112 5); llhttp only drops the leading OWS. */
function trimOws(value: string): string {
  let end = value.length;
  let c = value.charCodeAt(end - 1);
  if (c !== 0x20 && c !== 0x09) return value;
  do c = value.charCodeAt(--end - 1);
  while (c === 0x20 || c === 0x09);
  return value.slice(0, end);
}

/**
 * Strings of the last head's fields, by position in the field list, one table for requests and one for
 * responses: a keep-alive peer sends the same names, and mostly the same values, in the same order
 * message after message (Host, Content-Type, Content-Length, Connection; a Date changes once a second).
 * A field whose bytes equal the text at its position takes that string: no call into Buffer's C++
 * latin1 decoder and no new string (measured: docs/performance.md, "Changes that moved the figures").
 * Slot 0 holds the request target (requests) or the reason phrase (responses), slot 1 + i the i-th
 * name or value of the field list. Each text's bytes are kept beside it (SAME_MAX_LENGTH bytes per slot)
 * and compared four at a time through DataViews: a loop of charCodeAt against the input's bytes cost
 * about 47 instructions per byte under callgrind, 5.5k per small response (docs/performance.md,
 * "Counting instructions").
 */
const SAME_SLOTS = 33;
/** Longer texts are decoded every time: comparing them byte by byte costs more than the decoder saves. */
const SAME_MAX_LENGTH = 64;
const START_LINE_SLOT = 0;

/** One table of texts and their bytes (slot i's at i * SAME_MAX_LENGTH). */
interface SameTexts {
  readonly texts: string[];
  readonly bytes: DataView;
}

function sameTexts(): SameTexts {
  return { texts: new Array<string>(SAME_SLOTS).fill(''), bytes: new DataView(new ArrayBuffer(SAME_SLOTS * SAME_MAX_LENGTH)) };
}
const requestTexts = sameTexts();
const responseTexts = sameTexts();

/** The latin1 text at wasm address `at` (`len` bytes), decoded from the caller's Buffer. */
function decoded(at: number, len: number): string {
  return latin1Slice.call(chunk, at + delta, at + delta + len);
}

/**
 * decoded(at, len), or the table's text at `slot` when its bytes are the same; a new text is kept there
 * with its bytes. Every byte is compared whatever the first difference (the table is shared by all
 * connections: the time taken says nothing about how much of another client's field a text matched).
 */
function sameOrDecoded(table: SameTexts, slot: number, at: number, len: number): string {
  if (len > SAME_MAX_LENGTH || slot >= SAME_SLOTS) return decoded(at, len);
  const texts = table.texts;
  const kept = table.bytes;
  const input = heapView;
  const base = slot * SAME_MAX_LENGTH;
  const last = texts[slot] as string;
  if (last.length === len) {
    let diff = 0;
    let i = 0;
    for (; i + 4 <= len; i += 4) diff |= input.getInt32(at + i) ^ kept.getInt32(base + i);
    for (; i < len; i++) diff |= input.getUint8(at + i) ^ kept.getUint8(base + i);
    if (diff === 0) return last;
  }
  const text = decoded(at, len);
  texts[slot] = text;
  // Four bytes at a time, as compared: a value that changes every message (a traceparent, a request id)
  // is stored every time, and a byte loop cost about 20 instructions per byte under callgrind.
  let i = 0;
  for (; i + 4 <= len; i += 4) kept.setInt32(base + i, input.getInt32(at + i));
  for (; i < len; i++) kept.setUint8(base + i, input.getUint8(at + i));
  return text;
}

/** Size of the wasm memory in bytes (for tests and metrics that check parsers are freed). */
export function wasmHeapBytes(): number {
  return llhttp.memory.buffer.byteLength;
}

/**
 * One HTTP/1.1 parser per connection direction. Free it with destroy() when the socket closes.
 * Not re-entrant: never call execute()/finish() of any parser from inside a callback (the wasm instance is shared).
 */
export class HttpParser {
  /** @internal Address of the llhttp_t in wasm memory; 0 once destroyed. */
  ptr: number;
  readonly kind: 'request' | 'response';
  readonly maxHeaderSize: number;

  // Head of the current message, valid from onHead until the next message begins.
  /** Request method as llhttp names it ('GET', ...); '' for responses. */
  method = '';
  /** Request target exactly as sent (latin1; strict parsing admits only URL characters). */
  url = '';
  /** Response status code; 0 for requests. */
  statusCode = 0;
  /** Response reason phrase (latin1), '' when absent. */
  statusText = '';
  versionMajor = 0;
  versionMinor = 0;
  /**
   * Flat [name, value, name, value, ...], latin1, names in their original case, repeated fields kept
   * in order. Values without leading and trailing OWS (RFC 9112 5: OWS is not part of the value; llhttp
   * drops the leading OWS, the adapter the trailing); inner bytes exactly as sent. A new array per message.
   */
  headers: string[] = [];
  /** Trailer fields of a chunked message (RFC 9112 7.1.2), same layout, or null. Valid in onComplete. */
  trailers: string[] | null = null;
  /**
   * llhttp_should_keep_alive (RFC 9112 9.3: version and Connection). Recomputed when onHead returns
   * HEAD_SKIP_BODY: a response without length that has no body no longer needs the close.
   */
  keepAlive = false;
  /** Upgrade or CONNECT request, or 101 response: execute() returns UPGRADE once the message ends. */
  upgrade = false;
  /** Content-Length as llhttp parsed and validated it; -1 when absent. */
  contentLength = -1;
  /** Transfer-Encoding ends in chunked (RFC 9112 6.1). */
  chunked = false;
  /** Bytes of the head counted so far: first byte of the start line to the end of the empty line. */
  headBytes = 0;

  /** After PAUSED / UPGRADE (and ERROR): bytes of the executed range, counted from `start`, consumed. */
  consumed = 0;
  /** After ERROR: llhttp's errno name, or HPE_HEADER_OVERFLOW / HPE_CHUNK_EXTENSIONS_OVERFLOW for our limits. */
  errorName = '';
  errorReason = '';

  private readonly events: ParserEvents;
  /** requestTexts or responseTexts (sameOrDecoded). */
  private readonly texts: SameTexts;
  private phase = PHASE_IDLE;
  private paused = false;
  private pauseWhy = PAUSE_NONE;
  private span = SPAN_NONE;
  /** Offset in the wasm input where this execute's share of the current head starts. */
  private headFrom = 0;
  /** Wasm address past which the current head would exceed maxHeaderSize. */
  private headLimit = 0;
  private trailerBytes = 0;
  /** Chunked body: input offset where the current run of framing bytes starts, and its bytes in earlier reads. */
  private framingFrom = 0;
  private framingBytes = 0;
  /** Which of our limits stopped llhttp (a callback returned HPE_USER): LIMIT_*. */
  private limitHit = LIMIT_NONE;

  constructor(kind: 'request' | 'response', events: ParserEvents, maxHeaderSize: number) {
    if (!Number.isSafeInteger(maxHeaderSize) || maxHeaderSize <= 0) {
      throw new RangeError(`maxHeaderSize must be a positive integer, got ${maxHeaderSize}`);
    }
    this.kind = kind;
    this.events = events;
    this.texts = kind === 'request' ? requestTexts : responseTexts;
    this.maxHeaderSize = maxHeaderSize;
    this.ptr = llhttp.llhttp_alloc(kind === 'request' ? TYPE_REQUEST : TYPE_RESPONSE);
    if (this.ptr === 0) throw new InternalError('llhttp-wasm: out of memory allocating a parser');
    refreshHeap();
  }

  /**
   * Parses chunk[start, end). Callbacks run synchronously inside. Returns OK when all bytes were used,
   * PAUSED/UPGRADE with `consumed` set, or ERROR with `errorName`/`errorReason`/`consumed` set.
   */
  execute(buf: Buffer, start = 0, end = buf.length): ExecStatus {
    if (current !== null) {
      // Trap 1: the input buffer and `current` are shared; a nested execute would corrupt the outer parse.
      throw new InternalError('HttpParser.execute() called from inside a parser callback; return PAUSE and continue after');
    }
    if (this.phase >= PHASE_UPGRADED) return this.refuse();
    if (this.paused) throw new InternalError('HttpParser.execute() while paused; call resume() first');
    if (start < 0 || end > buf.length) throw new RangeError(`execute(${start}, ${end}) outside a ${buf.length}-byte Buffer`);
    const len = end > start ? end - start : 0;
    // An empty execute still runs llhttp: after a PAUSE at the head, what follows the head (completing a
    // message without body, arming read-until-EOF) happens only when llhttp runs again.
    if (len > inputCap) growInput(len);
    const ptr = this.ptr;
    current = this;
    chunk = buf as Latin1Buffer;
    // Input offset i holds chunk[start + i]; it is filled window by window (see FIRST_WINDOW).
    delta = start - inputPtr;
    this.headFrom = 0;
    this.headLimit = inputPtr + this.maxHeaderSize - this.headBytes;
    this.framingFrom = 0;
    let off = 0;
    let filled = 0;
    let window = FIRST_WINDOW;
    try {
      for (;;) {
        if (off === filled) {
          const to = len - filled > window ? filled + window : len;
          bufferCopy.call(buf, heap, inputPtr + filled, start + filled, start + to);
          filled = to;
          window *= 2;
        }
        const ret = llhttp.llhttp_execute(ptr, inputPtr + off, filled - off);
        if (ret === HPE_OK) {
          if (filled !== len) {
            off = filled;
            continue;
          }
          if (this.phase === PHASE_HEAD) {
            // The head continues in the next chunk (RFC 9112 2.1); count what this one held.
            this.headBytes += len - this.headFrom;
            if (this.headBytes > this.maxHeaderSize) return this.fail(HPE_USER, len, LIMIT_HEAD);
          } else if (this.phase === PHASE_BODY && this.chunked && this.trailers === null) {
            // The read ended in chunk framing (after the last data byte): carry its size over.
            this.framingBytes += len - this.framingFrom;
            if (this.framingBytes > this.maxHeaderSize) return this.fail(HPE_USER, len, LIMIT_FRAMING);
          }
          this.consumed = len;
          return ExecStatus.OK;
        }
        // Trap 3: read the error position before anything can reset it.
        const pos = llhttp.llhttp_get_error_pos(ptr) - inputPtr;
        if (ret === HPE_PAUSED) {
          const why = this.pauseWhy;
          this.pauseWhy = PAUSE_NONE;
          if (why === PAUSE_BEGIN) {
            this.headFrom = pos;
            this.headLimit = inputPtr + pos + this.maxHeaderSize;
          } else if (why === PAUSE_HEAD) {
            this.headBytes += pos - this.headFrom;
            if (this.headBytes > this.maxHeaderSize) return this.fail(HPE_USER, pos, LIMIT_HEAD);
            this.framingFrom = pos;
            this.framingBytes = 0;
            if (this.headComplete() === PAUSE) return this.stop(pos);
          } else {
            return this.stop(pos);
          }
          llhttp.llhttp_resume(ptr);
          off = pos;
          continue;
        }
        if (ret === HPE_PAUSED_UPGRADE) {
          // RFC 9110 7.8 / 9.3.6: the bytes after this message belong to the new protocol or tunnel.
          this.phase = PHASE_UPGRADED;
          this.consumed = pos;
          return ExecStatus.UPGRADE;
        }
        return this.fail(ret, pos, ret === HPE_USER ? this.limitHit : LIMIT_NONE);
      }
    } catch (err) {
      // A callback threw: llhttp stopped mid-state, so this parser cannot continue (reset() to reuse).
      this.phase = PHASE_FAILED;
      this.errorName = 'HPE_USER';
      this.errorReason = `callback threw: ${(err as Error)?.message ?? String(err)}`;
      throw err;
    } finally {
      current = null;
      chunk = EMPTY;
    }
  }

  /** Continues after execute() returned PAUSED; then execute() the bytes from `consumed` on. */
  resume(): void {
    if (!this.paused) throw new InternalError('HttpParser.resume() while not paused');
    this.paused = false;
    llhttp.llhttp_resume(this.ptr);
  }

  /**
   * The peer closed its side. A response delimited by the close (RFC 9112 6.3, rule 8) completes here
   * (onComplete runs; PAUSED if it returned PAUSE, else OK); OK between messages; EOF inside any other
   * message is an ERROR (HPE_INVALID_EOF_STATE).
   */
  finish(): ExecStatus {
    if (current !== null) throw new InternalError('HttpParser.finish() called from inside a parser callback');
    if (this.phase === PHASE_UPGRADED) return ExecStatus.OK;
    if (this.phase > PHASE_UPGRADED) return this.refuse();
    if (this.paused) {
      // llhttp_finish ignores a paused parser, so EOF ends the pause; an empty execute then runs what
      // follows the pause point (after a head: completing a body-less message, arming read-until-EOF).
      this.resume();
      const st = this.execute(EMPTY);
      if (st !== ExecStatus.OK) return st;
    }
    current = this;
    let ret: number;
    try {
      ret = llhttp.llhttp_finish(this.ptr);
    } catch (err) {
      this.phase = PHASE_FAILED;
      throw err;
    } finally {
      current = null;
    }
    this.pauseWhy = PAUSE_NONE;
    this.consumed = 0;
    if (ret === HPE_OK) return ExecStatus.OK;
    // onComplete returned PAUSE: reported as execute() would, so callers handle both alike.
    if (ret === HPE_PAUSED) return this.stop(0);
    this.phase = PHASE_FAILED;
    this.errorName = errnoName(ret);
    this.errorReason = cString(llhttp.llhttp_get_error_reason(this.ptr)) || this.errorName;
    return ExecStatus.ERROR;
  }

  /** Back to the start of a message, as new; also clears a failure or an upgrade. */
  reset(): void {
    if (current === this) throw new InternalError('HttpParser.reset() called from inside its own callback');
    if (this.phase === PHASE_DESTROYED) throw new InternalError('HttpParser.reset() after destroy()');
    llhttp.llhttp_reset(this.ptr);
    this.phase = PHASE_IDLE;
    this.paused = false;
    this.pauseWhy = PAUSE_NONE;
    this.consumed = 0;
    this.errorName = '';
    this.errorReason = '';
    this.beginMessage();
  }

  /** Frees the llhttp_t (the wasm heap is never garbage collected). Idempotent. */
  destroy(): void {
    if (this.phase === PHASE_DESTROYED) return;
    if (current === this) throw new InternalError('HttpParser.destroy() called from inside its own callback');
    llhttp.llhttp_free(this.ptr);
    this.ptr = 0;
    this.phase = PHASE_DESTROYED;
    this.paused = false;
  }

  // ---- wasm callbacks (reached through `current`; `at` is a wasm address inside the input buffer) ----------

  /** @internal */
  onMessageBegin(): number {
    this.beginMessage();
    this.phase = PHASE_HEAD;
    this.pauseWhy = PAUSE_BEGIN;
    return HPE_PAUSED;
  }

  /** @internal */
  onUrl(at: number, len: number): number {
    if (at + len > this.headLimit) return this.overflowed();
    if (len !== 0) this.url = this.url === '' ? sameOrDecoded(this.texts, START_LINE_SLOT, at, len) : this.url + decoded(at, len);
    return 0;
  }

  /** @internal */
  onStatus(at: number, len: number): number {
    if (at + len > this.headLimit) return this.overflowed();
    if (len !== 0)
      this.statusText = this.statusText === '' ? sameOrDecoded(this.texts, START_LINE_SLOT, at, len) : this.statusText + decoded(at, len);
    return 0;
  }

  /** @internal */
  onHeaderField(at: number, len: number): number {
    let list: string[] | null = this.headers;
    if (this.phase === PHASE_HEAD) {
      if (at + len > this.headLimit) return this.overflowed();
    } else {
      list = this.trailerList(len);
      if (list === null) return this.overflowed();
    }
    if (this.span === SPAN_FIELD) {
      if (len !== 0) list[list.length - 1] += decoded(at, len);
      return 0;
    }
    if (this.span === SPAN_VALUE) list[list.length - 1] = trimOws(list[list.length - 1]!);
    list.push(this.newText(list, at, len));
    this.span = SPAN_FIELD;
    return 0;
  }

  /** @internal */
  onHeaderValue(at: number, len: number): number {
    let list: string[] | null = this.headers;
    if (this.phase === PHASE_HEAD) {
      if (at + len > this.headLimit) return this.overflowed();
    } else {
      list = this.trailerList(len);
      if (list === null) return this.overflowed();
    }
    // Trap 2: an empty value is reported as a zero-length span at the start of the next line; it still
    // counts as the value, so the pairs stay aligned.
    if (this.span === SPAN_VALUE) {
      if (len !== 0) list[list.length - 1] += decoded(at, len);
      return 0;
    }
    list.push(this.newText(list, at, len));
    this.span = SPAN_VALUE;
    return 0;
  }

  /** The text of a name or value that starts a new entry of `list`: a head's (not a trailer's) is the last head's string at its position when the same. */
  private newText(list: string[], at: number, len: number): string {
    if (len === 0) return '';
    return list === this.headers ? sameOrDecoded(this.texts, 1 + list.length, at, len) : decoded(at, len);
  }

  /** @internal */
  onHeadersComplete(statusCode: number, upgrade: number, keepAlive: number): number {
    const p = this.ptr;
    if (this.span === SPAN_VALUE) {
      const last = this.headers.length - 1;
      this.headers[last] = trimOws(this.headers[last]!);
    }
    this.span = SPAN_NONE;
    this.statusCode = statusCode;
    this.upgrade = upgrade !== 0;
    this.keepAlive = keepAlive !== 0;
    this.versionMajor = heap[p + OFF_HTTP_MAJOR]!;
    this.versionMinor = heap[p + OFF_HTTP_MINOR]!;
    if (this.kind === 'request') this.method = methodName(heap[p + OFF_METHOD]!);
    const flags = u16(p + OFF_FLAGS);
    this.chunked = (flags & F_CHUNKED) !== 0;
    // llhttp has validated it (digits only, no duplicates, no overflow of 64 bits: RFC 9112 6.3). Exact
    // up to 2^53 - 1 bytes; a larger one is rounded, still larger than any body limit.
    this.contentLength = (flags & F_CONTENT_LENGTH) === 0 ? -1 : u32(p + OFF_CONTENT_LENGTH) + u32(p + OFF_CONTENT_LENGTH + 4) * UINT32;
    this.pauseWhy = PAUSE_HEAD;
    return HPE_PAUSED;
  }

  /** @internal */
  onBodySpan(at: number, len: number): number {
    if (this.chunked) {
      // Chunk extensions are parsed but reported nowhere, so without a bound a peer could send endless
      // framing that no body-size limit sees (Node's CVE-2024-22019). Bound each run of it between two
      // data bytes: CRLF, chunk-size line and extensions (RFC 9112 7.1.1).
      const from = at - inputPtr;
      if (this.framingBytes + from - this.framingFrom > this.maxHeaderSize) return this.limit(LIMIT_FRAMING);
      this.framingBytes = 0;
      this.framingFrom = from + len;
    }
    this.events.onBody(chunk, at + delta, at + delta + len);
    return 0;
  }

  /** @internal */
  onMessageComplete(): number {
    if (this.span === SPAN_VALUE && this.trailers !== null) {
      const last = this.trailers.length - 1;
      this.trailers[last] = trimOws(this.trailers[last]!);
    }
    this.span = SPAN_NONE;
    if (this.phase !== PHASE_UPGRADED) this.phase = PHASE_IDLE;
    if (this.events.onComplete(this) !== PAUSE) return 0;
    this.pauseWhy = PAUSE_COMPLETE;
    return HPE_PAUSED;
  }

  // ---- helpers ---------------------------------------------------------------------------------------------

  private beginMessage(): void {
    this.method = '';
    this.url = '';
    this.statusCode = 0;
    this.statusText = '';
    this.versionMajor = 0;
    this.versionMinor = 0;
    // Always a new array: callers keep the previous message's array (valid "until the next message
    // begins" means its contents stay theirs), so it must never be reused, even when empty.
    this.headers = [];
    this.trailers = null;
    this.keepAlive = false;
    this.upgrade = false;
    this.contentLength = -1;
    this.chunked = false;
    this.headBytes = 0;
    this.trailerBytes = 0;
    this.framingBytes = 0;
    this.span = SPAN_NONE;
    this.limitHit = LIMIT_NONE;
  }

  /** Called at the headers-complete pause; returns what onHead returned. */
  private headComplete(): number {
    this.phase = PHASE_BODY;
    const verdict = this.events.onHead(this);
    if (verdict === HEAD_SKIP_BODY) {
      // What returning 1 from on_headers_complete does (F_SKIPBODY); llhttp is paused past that point.
      const addr = this.ptr + OFF_FLAGS;
      const flags = u16(addr) | F_SKIPBODY;
      heap[addr] = flags & 0xff;
      heap[addr + 1] = flags >>> 8;
      // Without a body to read to EOF the connection may stay open (RFC 9112 9.3).
      this.keepAlive = llhttp.llhttp_should_keep_alive(this.ptr) !== 0;
    }
    return verdict;
  }

  private stop(pos: number): ExecStatus {
    this.paused = true;
    this.consumed = pos;
    return ExecStatus.PAUSED;
  }

  /** Trailers are bounded like a head: they are held in memory until onComplete. */
  private trailerList(len: number): string[] | null {
    this.trailerBytes += len;
    if (this.trailerBytes > this.maxHeaderSize) return null;
    return (this.trailers ??= []);
  }

  private overflowed(): number {
    return this.limit(LIMIT_HEAD);
  }

  private limit(which: number): number {
    this.limitHit = which;
    return HPE_USER;
  }

  private fail(errno: number, pos: number, limit: number): ExecStatus {
    this.phase = PHASE_FAILED;
    this.consumed = pos;
    if (limit === LIMIT_HEAD) {
      this.errorName = 'HPE_HEADER_OVERFLOW';
      this.errorReason = `Header section larger than ${this.maxHeaderSize} bytes`;
    } else if (limit === LIMIT_FRAMING) {
      this.errorName = 'HPE_CHUNK_EXTENSIONS_OVERFLOW';
      this.errorReason = `Chunk framing (size line and extensions) larger than ${this.maxHeaderSize} bytes`;
    } else {
      this.errorName = errnoName(errno);
      this.errorReason = cString(llhttp.llhttp_get_error_reason(this.ptr)) || this.errorName;
    }
    return ExecStatus.ERROR;
  }

  private refuse(): ExecStatus {
    if (this.phase === PHASE_DESTROYED) throw new InternalError('HttpParser used after destroy()');
    if (this.phase === PHASE_UPGRADED) throw new InternalError('HttpParser.execute() after an upgrade; reset() to reuse');
    this.consumed = 0;
    return ExecStatus.ERROR;
  }
}

// ---- start-up self-test -------------------------------------------------------------------------------------

/** What selfTest records of one parse; compared between the whole input and every split of it. */
class Recorder implements ParserEvents {
  log: string[] = [];
  skipBody = false;

  onHead(p: HttpParser): number {
    this.log.push(
      `head ${p.method}|${p.url}|${p.statusCode}|${p.statusText}|${p.versionMajor}.${p.versionMinor}|` +
        `${p.headers.join('|')}|ka=${p.keepAlive}|up=${p.upgrade}|cl=${p.contentLength}|chunked=${p.chunked}|` +
        `bytes=${p.headBytes}`,
    );
    return this.skipBody ? HEAD_SKIP_BODY : HEAD_CONTINUE;
  }

  onBody(buf: Buffer, start: number, end: number): void {
    // Body pieces may be split anywhere; join them into one entry so splits compare equal.
    const text = buf.toString('latin1', start, end);
    const last = this.log.length - 1;
    if (last >= 0 && this.log[last]!.startsWith('body ')) this.log[last] += text;
    else this.log.push(`body ${text}`);
  }

  onComplete(p: HttpParser): number {
    this.log.push(`complete trailers=${p.trailers === null ? '' : p.trailers.join('|')}`);
    return HEAD_CONTINUE;
  }
}

function parseAll(kind: 'request' | 'response', input: Buffer, cuts: number[], skipBody: boolean): string {
  const rec = new Recorder();
  rec.skipBody = skipBody;
  const parser = new HttpParser(kind, rec, 8192);
  try {
    let from = 0;
    for (const to of [...cuts, input.length]) {
      if (parser.execute(input, from, to) !== ExecStatus.OK) {
        throw new InternalError(`${parser.errorName} ${parser.errorReason} at ${from}+${parser.consumed}`);
      }
      from = to;
    }
    if (parser.finish() !== ExecStatus.OK) throw new InternalError(`finish: ${parser.errorName}`);
  } finally {
    parser.destroy();
  }
  return rec.log.join('\n');
}

const SELF_TEST_CASES: { kind: 'request' | 'response'; skipBody: boolean; input: string; expect: string }[] = [
  {
    kind: 'request',
    skipBody: false,
    input: 'POST /p?q=1 HTTP/1.1\r\nHost: a.example\r\nX-Empty:\r\nX-Latin: caf\xe9  \r\n' + 'Content-Length: 5\r\n\r\nhello',
    expect:
      'head POST|/p?q=1|0||1.1|Host|a.example|X-Empty||X-Latin|caf\xe9|Content-Length|5|ka=true|up=false|' +
      'cl=5|chunked=false|bytes=87\nbody hello\ncomplete trailers=',
  },
  {
    kind: 'response',
    skipBody: false,
    input: 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n0\r\nT: v\r\n\r\n',
    expect:
      'head ||200|OK|1.1|Transfer-Encoding|chunked|ka=true|up=false|cl=-1|chunked=true|bytes=47\n' + 'body abc\ncomplete trailers=T|v',
  },
  {
    // Content-Length above 2^32 checks the 64-bit read; the skipped body checks the F_SKIPBODY write.
    kind: 'response',
    skipBody: true,
    input: 'HTTP/1.0 299 \xe9\r\nContent-Length: 4294967301\r\n\r\n',
    expect: 'head ||299|\xe9|1.0|Content-Length|4294967301|ka=false|up=false|cl=4294967301|chunked=false|' + 'bytes=46\ncomplete trailers=',
  },
];

/**
 * Parses known messages whole and split at every byte and throws unless each gives the expected result.
 * Run at start-up: it proves the llhttp_t layout, the constants and the span joining on this build.
 */
export function selfTest(): void {
  for (const c of SELF_TEST_CASES) {
    const input = Buffer.from(c.input, 'latin1');
    for (let cut = 0; cut < input.length; cut++) {
      const got = parseAll(c.kind, input, cut === 0 ? [] : [cut], c.skipBody);
      if (got !== c.expect) {
        const where = cut === 0 ? 'whole' : `split at byte ${cut}`;
        throw new InternalError(`parser self-test failed on a ${c.kind} (${where}):\n${got}\n--- expected ---\n${c.expect}`);
      }
    }
  }
}

// The struct fields read and written directly are checked on import too, whole messages only (cheap):
// a module whose layout differs must not parse a single real message.
for (const c of SELF_TEST_CASES) {
  const got = parseAll(c.kind, Buffer.from(c.input, 'latin1'), [], c.skipBody);
  if (got !== c.expect) throw new LlhttpLoadError(`llhttp_t layout check failed:\n${got}\n--- expected ---\n${c.expect}`);
}
