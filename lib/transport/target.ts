/**
 * The target connection: throughway's side of one backend socket (the spec's "sender"), driven by the
 * protocol states of spec 002 part 3. One per socket; it serves exchanges one at a time and returns to its
 * pool between them.
 *
 * States: REQUEST_READY while connecting or idle; REQUEST_HEAD once the head is handed to a connected
 * socket; REQUEST_BODY while body bytes flow; REQUEST_DONE when the last request byte is handed over;
 * RESPONSE_HEAD from the first response byte; RESPONSE_BODY; RESPONSE_DONE; back to REQUEST_READY in the
 * pool, or CLOSING/CLOSED. Faults carry the state they happened in (code = base + state, spec 002 part 7).
 */
import type { Socket } from 'node:net';
import { HttpParser, ExecStatus, HEAD_CONTINUE, HEAD_SKIP_BODY, PAUSE, type ParserEvents } from './parser';
import { ProtocolState as S, canTransition, type ProtocolState } from './states';
import { makeFault, type FaultReason, type TransportFault } from './codes';
import { buildResponseHead, isFramingField, type ResponseHeadOut } from './headers';
import { ConnectTunnel, connectTls } from './outbound';
import type { Exchange, ExchangeTarget } from './exchange';
import { checkTargetAttach } from './invariants';
import { ListenerSet } from './listeners';
import { keptBytes, sharedRead, SHARED_READ_BUFFER, SMALL_READ_BUFFER, spanOf, type TargetReader } from './read-buffers';
import {
  directWrites,
  handleOf,
  STREAM_WRITES,
  writeBlocked,
  writeBuffer,
  writeLatin1,
  writesPending,
  type DirectHandle,
} from './direct-write';
import type { TransportCore } from './core';
import type { BufferedResponse, TargetEndpoint } from './types';

/** A response being gathered for ForwardDecision.bufferResponse: copies (the read buffer is reused). */
interface ResponseCollector {
  readonly status: number;
  readonly headers: readonly string[];
  readonly limit: number;
  readonly chunks: Buffer[];
  size: number;
}

/**
 * How the current response's body is read and where it goes: one value in place of five flags.
 *  - none: no response body under way;
 *  - counted: Content-Length bytes, relayed as counted bytes, never parsed (no copy into wasm memory);
 *  - parsed: a chunked body relayed raw, framing included;
 *  - dechunked: a chunked body to an HTTP/1.0 client: its payload, from the parser's onBody;
 *  - untilClose: a body delimited by the close (RFC 9112 §6.3 rule 8), relayed raw;
 *  - gather: gathered for the router (ForwardDecision.bufferResponse), framed as `framing` says.
 * `remaining` counts a Content-Length body (counted, and gather when framed so), 0 otherwise; `raw`: the
 * bytes execute() consumes are the payload as relayed (not dechunked).
 */
type ResponseBody =
  | { readonly kind: 'none' | 'parsed' | 'dechunked' | 'untilClose'; readonly remaining: 0; readonly raw: boolean }
  | { readonly kind: 'counted'; remaining: number; readonly raw: true }
  | {
      readonly kind: 'gather';
      readonly collector: ResponseCollector;
      readonly framing: 'counted' | 'chunked' | 'untilClose';
      remaining: number;
      readonly raw: boolean;
    };
const NO_BODY: ResponseBody = Object.freeze({ kind: 'none', remaining: 0, raw: false });
const PARSED: ResponseBody = Object.freeze({ kind: 'parsed', remaining: 0, raw: true });
const DECHUNKED: ResponseBody = Object.freeze({ kind: 'dechunked', remaining: 0, raw: false });
const UNTIL_CLOSE: ResponseBody = Object.freeze({ kind: 'untilClose', remaining: 0, raw: true });

/**
 * Where the parser stopped, as its callbacks record it for feed(): at a final head whose body follows, at
 * the end of a message, or inside an interim (1xx) response, whose completion is not the response's.
 */
const Stop = { NONE: 0, AT_HEAD: 1, AT_COMPLETE: 2, INTERIM: 3 } as const;
type Stop = (typeof Stop)[keyof typeof Stop];

/** The socket's link: connecting, TCP up under a TLS handshake (or a proxy's CONNECT), or connected. */
const Link = { CONNECTING: 0, TCP_UP: 1, CONNECTED: 2 } as const;
type Link = (typeof Link)[keyof typeof Link];

/**
 * The connection's life: open; handed to a WebSocket tunnel (the socket lives on, its read buffers with
 * it); closed (destroyed by us, failed, or closed by the peer: finalised either way).
 */
const Life = { OPEN: 0, DETACHED: 1, CLOSED: 2 } as const;
type Life = (typeof Life)[keyof typeof Life];

/** A failure a parser callback recorded, acted on after execute returns. */
interface PendingFailure {
  readonly reason: FaultReason;
  readonly why: string;
}

const EMPTY: readonly string[] = [];
/** The second result of buildResponseHead; one per process, read right after each call (single-threaded). */
const headOut: ResponseHeadOut = { keepAliveTimeout: -1 };
/** Largest first body piece copied next to its head for a single write; larger ones are written apart. */
const COMBINE_LIMIT = 16 * 1024;

/** What a target connection uses of its pool (pool.ts RoutePool). */
export interface TargetPool {
  readonly core: TransportCore;
  readonly endpoint: TargetEndpoint;
  /** `https://` routes: the latest TLS session, offered by the next connection (session reuse). */
  tlsSession: Buffer | undefined;
  /** The connection finished an exchange and can serve another. */
  release(t: TargetConnection): void;
  /** The connection closed or was destroyed. */
  removed(t: TargetConnection): void;
  /** The connection failed its exchange (counted for the runtime view). */
  failed(fault: TransportFault): void;
}

export class TargetConnection implements ParserEvents, ExchangeTarget {
  readonly core: TransportCore;
  readonly parser: HttpParser;
  state: ProtocolState = S.REQUEST_READY;
  /** TLS endpoints: TCP_UP before CONNECTED (a failure then is the handshake's). */
  private link: Link = Link.CONNECTING;
  private life: Life = Life.OPEN;
  ex: Exchange | null = null;
  lastActive: number;
  connectStart: number;
  idleSince = 0;
  idleLimit: number;
  /** The current response's body (ResponseBody above); `counted` is reused for every Content-Length one. */
  private body: ResponseBody = NO_BODY;
  private readonly counted = { kind: 'counted' as const, remaining: 0, raw: true as const };
  private stop: Stop = Stop.NONE;
  /** 1xx responses received for the current exchange (bounded by settings.maxInterimResponses). */
  private interimCount = 0;
  private socketPaused = false;
  private responseBytes = 0;
  /** llhttp's keep-alive verdict for the current response, taken at its head (reset() clears it). */
  private keepAliveAfter = false;
  /** A response head waiting for its first body bytes, to leave in the same write. */
  private pendingHead: string | null = null;
  /** Set by a parser callback that found the exchange cannot go on; acted on after execute returns. */
  private pendingFailure: PendingFailure | null = null;

  readonly socket: Socket;
  private readonly listeners: ListenerSet;
  /** The buffer the socket reads into (net's onread), and one still held by a pending client write. */
  private readBuf: Buffer | null = null;
  private lentBuf: Buffer | null = null;
  private lentTo: Socket | null = null;
  /**
   * The last response fitted the small read buffer: until the next response is under way this connection
   * reads into the shared one. After a larger response it keeps its own, so large responses still arrive
   * in one read.
   */
  private lastSmall = false;
  /** The client socket a write of readBuf's bytes is still pending on (null: readBuf is free to refill). */
  private busySocket: Socket | null = null;
  /** The socket's libuv handle once a write has read it (writeHandle). */
  private handle: DirectHandle | null = null;

  constructor(readonly pool: TargetPool) {
    const core = pool.core;
    this.core = core;
    this.lastActive = core.now;
    this.connectStart = core.now;
    this.idleLimit = core.settings.poolIdleTimeout;
    this.parser = new HttpParser('response', this, core.settings.maxResponseHeaderSize);
    // Reads land in a connection-owned buffer (settings.readBufferSize, 256 KiB by default), not a new
    // Buffer per read: fewer allocations and fewer, larger reads (a prototype measured 4.5 us
    // per small response, and 64 KiB responses 83 -> 72 us with 128 KiB reads).
    const ep = pool.endpoint;
    let socket: Socket;
    let connectEvent: string;
    if (ep.tls === undefined) {
      // Plain HTTP, directly or to an HTTP proxy (absolute-form request targets, source.ts).
      const to = ep.proxy ?? ep;
      socket = core.connect(to.host, to.port, { buffer: this.nextReadBuffer, callback: this.onSocketRead });
      connectEvent = 'connect';
    } else {
      // TLS (outbound.ts): reads arrive as 'data' events; connected once the handshake is done.
      const tunnel = ep.proxy === undefined ? undefined : new ConnectTunnel(ep.proxy, ep.host, ep.port);
      const s = connectTls(ep.host, ep.port, ep.tls, pool.tlsSession, core.settings.highWaterMark, tunnel);
      connectEvent = 'secureConnect';
      // TLS session reuse (RFC 8446 §2.2): the next connection of this pool resumes the latest session.
      s.on('session', (session: Buffer) => {
        pool.tlsSession = session;
      });
      if (tunnel === undefined) s.once('connect', this.onTcpUp);
      else tunnel.once('rawConnected', this.onTcpUp);
      socket = s;
    }
    this.socket = socket;
    core.targets.add(this);
    // Removed as one set when a tunnel takes the socket (leaveForTunnel).
    this.listeners = new ListenerSet(socket)
      .on(connectEvent, this.onConnect)
      .on('data', this.onData)
      .on('end', this.onEnd)
      .on('error', this.onError)
      .on('close', this.onClose)
      .on('drain', this.onDrain);
  }

  /** The socket's libuv handle, read once for the writes (direct-write.ts `DirectHandle`). */
  private writeHandle(): DirectHandle | null {
    if (!this.core.settings.directWrites) return STREAM_WRITES;
    return this.handle ?? (this.handle = handleOf(this.socket));
  }

  /** Has served an earlier exchange: a failure before any response byte may be a stale keep-alive socket. */
  get reused(): boolean {
    return this.idleSince !== 0;
  }

  isUsable(): boolean {
    return this.life === Life.OPEN && this.state === S.REQUEST_READY && !this.socket.destroyed;
  }

  private setState(to: ProtocolState): void {
    if (this.state === to) return;
    if (!canTransition(this.state, to)) this.core.illegalTransition('target', this.state, to);
    this.state = to;
  }

  /** Start serving `ex`: write its head (queued in the socket while still connecting). */
  attach(ex: Exchange): void {
    checkTargetAttach(this.state, this.ex !== null, this.life !== Life.OPEN, this.pendingHead !== null);
    this.ex = ex;
    ex.target = this;
    this.responseBytes = 0;
    this.body = NO_BODY;
    this.stop = Stop.NONE;
    this.interimCount = 0;
    this.lastActive = this.core.now;
    writeLatin1(this.socket, ex.requestHead, this.writeHandle());
    if (this.link === Link.CONNECTED) this.syncRequestState();
  }

  /** Body bytes from the source. Returns false when the socket buffer is full (pause the source). */
  writeBody(buf: Buffer): boolean {
    if (this.link === Link.CONNECTED && this.state === S.REQUEST_HEAD) this.setState(S.REQUEST_BODY);
    this.lastActive = this.core.now;
    return writeBuffer(this.socket, buf, this.writeHandle());
  }

  /** The source has handed over the last request byte. */
  endRequest(): void {
    if (this.link === Link.CONNECTED && this.state < S.REQUEST_DONE) this.syncRequestState();
  }

  /** Walk the request states forward to what the exchange has reached (after connect or on progress). */
  private syncRequestState(): void {
    const ex = this.ex;
    if (ex === null || this.state >= S.RESPONSE_HEAD) return;
    if (this.state === S.REQUEST_READY) this.setState(S.REQUEST_HEAD);
    if (ex.bodySent > 0 && this.state === S.REQUEST_HEAD) this.setState(S.REQUEST_BODY);
    if (ex.requestComplete && this.state < S.REQUEST_DONE) this.setState(S.REQUEST_DONE);
  }

  private readonly onTcpUp = (): void => {
    if (this.link === Link.CONNECTING) this.link = Link.TCP_UP;
  };

  private readonly onConnect = (): void => {
    this.link = Link.CONNECTED;
    this.lastActive = this.core.now;
    this.syncRequestState();
  };

  private readonly onDrain = (): void => {
    this.lastActive = this.core.now;
    const ex = this.ex;
    if (ex !== null) ex.toClient.targetDrained();
  };

  /** The source drained: resume reading the response. */
  resumeReading(): void {
    if (this.socketPaused) {
      this.socketPaused = false;
      this.socket.resume();
    }
  }

  /**
   * Who gets this socket's reads (net's onread): this connection, until a WebSocket tunnel takes them
   * (redirectReads). Held here and read by a closure, not set on the socket: read-buffers.ts (module
   * comment) says why the transport adds no property to its sockets.
   */
  private reader: TargetReader = this;

  /** net's onread callback. A read into the shared buffer is a view of it (sharedRead): the reader copies what it keeps. */
  private readonly onSocketRead = (nread: number, buf: Buffer): boolean => {
    this.reader.onRead(buf === SHARED_READ_BUFFER ? sharedRead(nread) : buf, nread);
    // Returning true keeps reading (pauses are explicit).
    return true;
  };

  /** The socket's reads go to `reader` from now on (a tunnel, tunnel.ts). */
  redirectReads(reader: TargetReader): void {
    this.reader = reader;
  }

  /** 'data' events: only sockets from an injected connect function that ignores onread. */
  private readonly onData = (chunk: Buffer): void => {
    this.onRead(chunk, chunk.length);
  };

  onRead(chunk: Buffer, end: number): void {
    this.lastActive = this.core.now;
    const ex = this.ex;
    if (ex === null) {
      // Bytes on an idle connection answer no request (RFC 9112 §9.3): the socket cannot be trusted.
      this.destroy();
      return;
    }
    if (this.state < S.RESPONSE_HEAD) this.setState(S.RESPONSE_HEAD);
    this.feed(chunk, 0, end);
    // A buffer a pending write still references must not be refilled: the read buffer is reusable only if every write of its bytes to the
    // client finished synchronously.
    const client = ex.writer.socket;
    // A read into the shared buffer is only viewed during onRead (what is kept was copied: keptBytes), so no
    // pending write can hold it.
    this.busySocket = this.readBuf !== SHARED_READ_BUFFER && writesPending(client) ? client : null;
  }

  /** net's onread buffer generator: called once at connect and after every read. */
  private readonly nextReadBuffer = (): Buffer => {
    const lent = this.lentBuf;
    if (lent !== null && !writesPending(this.lentTo as Socket)) {
      this.core.giveReadBuffer(lent);
      this.lentBuf = null;
      this.lentTo = null;
    }
    let buf = this.readBuf;
    if (this.lastSmall && this.body === NO_BODY && this.life !== Life.DETACHED && this.busySocket === null) {
      // No response under way (idle in the pool, or serving the next exchange at once) after a small
      // one: read the next into the shared buffer and give this connection's own back (read-buffers.ts).
      // Taking one per busy connection instead made 3,448 buffers of 128 KiB in 6 s at 1,000 clients
      // (400 backend connections, 64 spare): V8 answered that external memory with a mark-compact
      // every 0.2 s. A large response takes its own buffer from its second read on.
      if (buf !== null && buf !== SHARED_READ_BUFFER) this.core.giveReadBuffer(buf);
      this.readBuf = SHARED_READ_BUFFER;
      return SHARED_READ_BUFFER;
    }
    if (buf === SHARED_READ_BUFFER) buf = null;
    if (buf !== null && this.busySocket !== null) {
      // Still referenced by a queued client write: set it aside (an older one still lent is left to GC).
      this.lentBuf = buf;
      this.lentTo = this.busySocket;
      this.busySocket = null;
      buf = null;
    }
    if (buf === null) {
      buf = this.core.takeReadBuffer();
      this.readBuf = buf;
    }
    return buf;
  };

  private feed(chunk: Buffer, start: number, end: number): void {
    let off = start;
    try {
      for (;;) {
        const body = this.body;
        if (body.remaining > 0) {
          // A Content-Length body is relayed as counted bytes, not parsed (no copy into wasm memory).
          const n = Math.min(body.remaining, end - off);
          if (n > 0) {
            this.relay(chunk, off, off + n);
            off += n;
            (body as { remaining: number }).remaining -= n;
          }
          if (body.remaining > 0 || this.pendingFailure !== null) break;
          this.complete(off < end);
          break;
        }
        const raw = body.raw;
        const st = this.parser.execute(chunk, off, end);
        if (st === ExecStatus.OK) {
          if (raw && off < end) this.relay(chunk, off, end);
          return;
        }
        if (st === ExecStatus.ERROR || st === ExecStatus.UPGRADE || this.pendingFailure !== null) {
          // ERROR, or UPGRADE: throughway never asks a backend to switch protocols here.
          if (!this.failPending())
            this.fail('protocol', st === ExecStatus.UPGRADE ? 'unexpected 101 Switching Protocols' : this.parser.errorName);
          return;
        }
        const pos = off + this.parser.consumed;
        if (raw && pos > off) this.relay(chunk, off, pos);
        off = pos;
        const stop = this.stop;
        this.stop = Stop.NONE;
        if (stop === Stop.AT_HEAD) {
          if (this.parser.statusCode === 101 && this.ex?.forward?.websocket !== undefined) {
            this.ex.toClient.targetUpgraded(this.ex, chunk, off, end);
            return;
          }
          if (!this.relayHead(false)) break;
          // A counted body leaves the parser paused; complete() starts it over.
          if (this.body.remaining === 0) this.parser.resume();
          continue;
        }
        this.complete(off < end);
        return;
      }
      this.failPending();
    } finally {
      // A head whose body has not arrived yet goes out on its own.
      if (this.pendingHead !== null) this.flushHead();
    }
  }

  /** Fails the exchange with what a parser callback recorded; false when nothing was. */
  private failPending(): boolean {
    const pending = this.pendingFailure;
    if (pending === null) return false;
    this.pendingFailure = null;
    this.fail(pending.reason, pending.why);
    return true;
  }

  // --- parser events: they only record where the parser stopped; feed() acts ---
  onHead(): number {
    const ex = this.ex as Exchange;
    const status = this.parser.statusCode;
    if (status < 100 || status > 599) {
      // RFC 9110 §15: a status code is three digits, and only 1xx-5xx are defined. llhttp reads any three
      // digits; 000-099 would pass here as an interim response, 600-999 reach clients that cannot know
      // whether a body follows. Refused as a protocol violation (101506 + state, 502), nothing relayed.
      this.pendingFailure = { reason: 'protocol', why: `status code ${status} outside 100-599` };
      return PAUSE;
    }
    if (status < 200 && status !== 101) {
      // Interim response (RFC 9110 §15.2): relayed to HTTP/1.1 clients, never to 1.0 ones; the final
      // response follows on the same connection. Writing to the client never re-enters a parser. A
      // backend may send any number of them, so past [throughway] max_interim_responses it is faulted
      // (103163) before this one is relayed: the parser pauses and feed() fails the exchange.
      if (++this.interimCount > this.core.settings.maxInterimResponses) {
        this.pendingFailure = { reason: 'too_many_interim', why: `more than ${this.core.settings.maxInterimResponses} interim responses` };
        return PAUSE;
      }
      this.stop = Stop.INTERIM;
      if (ex.versionMinor >= 1 && !ex.responseStarted) ex.writer.writeInterim(status, this.parser.statusText, this.parser.headers);
      return HEAD_SKIP_BODY;
    }
    const p = this.parser;
    if (status !== 101 && (ex.isHead || status === 204 || status === 304 || (!p.chunked && p.contentLength === 0))) {
      // No body bytes follow (RFC 9112 §6.3 rules 1-2, or Content-Length: 0), so no offset is needed:
      // relay the head now (writing to the client never re-enters a parser) and tell llhttp to skip any
      // body a Content-Length would otherwise announce. Pausing here would strand the message: after
      // resume, llhttp needs another input byte before it reports completion.
      this.relayHead(true);
      return HEAD_SKIP_BODY;
    }
    this.stop = Stop.AT_HEAD;
    return PAUSE;
  }

  onBody(chunk: Buffer, start: number, end: number): void {
    const b = this.body;
    if (b.kind === 'gather') {
      // Chunked: the payload is here. Otherwise feed() hands the raw bytes (the payload) to relay().
      if (b.framing === 'chunked') this.gather(b.collector, chunk, start, end);
      return;
    }
    if (b.kind === 'dechunked') {
      if (this.pendingHead !== null) this.flushHead();
      this.responseBytes += end - start;
      const ex = this.ex as Exchange;
      if (!ex.writer.writeBody(keptBytes(chunk, start, end))) this.pauseForSource();
    }
  }

  onComplete(): number {
    if (this.stop === Stop.INTERIM) {
      this.stop = Stop.NONE;
      return HEAD_CONTINUE;
    }
    this.stop = Stop.AT_COMPLETE;
    return PAUSE;
  }

  /**
   * The WebSocket hand-over (tunnel.ts switchProtocols): the socket leaves the exchange, the pool and the
   * sweep, its HTTP listeners go, and the tunnel owns it from here.
   */
  leaveForTunnel(ex: Exchange): Socket {
    this.setState(S.RESPONSE_HEAD);
    this.ex = null;
    ex.target = null;
    this.life = Life.DETACHED;
    this.finalise();
    this.listeners.removeAll();
    this.resumeReading();
    return this.socket;
  }

  /** Back to its pool unused (ExchangeTarget.release). */
  release(): void {
    this.pool.release(this);
  }

  /** A tunnel write toward `to` still holds bytes of the current read buffer: set it aside on the next read. */
  holdReadBuffer(to: Socket): void {
    this.busySocket = to;
  }

  /** The tunnel closed: its read buffers are left to the garbage collector (a write may still view them). */
  releaseTunnelBuffers(): void {
    this.readBuf = null;
    this.lentBuf = null;
    this.lentTo = null;
  }

  /** Relay the parsed response head to the client. Returns false when the exchange cannot go on. */
  private relayHead(noBodyKnown: boolean): boolean {
    const ex = this.ex as Exchange;
    const p = this.parser;
    const status = p.statusCode;
    if (status === 101) {
      // Upgrade is hop-by-hop and never forwarded (RFC 9110 §7.8), so no request asked for this: a
      // protocol violation, answered with the fault before any byte of the 101 reaches the client.
      this.fail('protocol', 'unexpected 101 Switching Protocols');
      return false;
    }
    if (ex.responseStarted || ex.aborted) {
      this.pendingFailure = { reason: 'processing', why: 'response after the exchange ended' };
      return false;
    }
    const noBody = noBodyKnown || (!p.chunked && p.contentLength === 0);
    const hook = ex.forward?.bufferResponse;
    if (hook !== undefined && !ex.isHead && (hook.statuses === undefined || hook.statuses.includes(status))) {
      // Gathered for the router (mediation), nothing written to the client yet: a chunked body is taken
      // de-framed from onBody, a counted one from relay(), one delimited by the close at the end.
      const collector = { status, headers: p.headers.slice(), limit: hook.limit, chunks: [], size: 0 };
      const framing = noBody ? 'counted' : p.chunked ? 'chunked' : p.contentLength < 0 ? 'untilClose' : 'counted';
      this.body = {
        kind: 'gather',
        collector,
        framing,
        remaining: noBody || framing !== 'counted' ? 0 : p.contentLength,
        raw: !noBody && framing !== 'chunked',
      };
      this.keepAliveAfter = reusableAfter(p);
      ex.status = status;
      // A bodiless one completes at once (complete() reads the collector).
      if (!noBody) this.setState(S.RESPONSE_BODY);
      return true;
    }
    const dechunk = !noBody && p.chunked && ex.versionMinor === 0;
    const untilClose = !noBody && !p.chunked && p.contentLength < 0;
    const source = ex.toClient;
    const close = dechunk || untilClose || !source.keepAlive || ex.closeAfter || !ex.requestComplete || this.core.closing;
    if (close) ex.closeAfter = true;
    const headers = ex.dropResponseHeaders === undefined ? p.headers : dropFields(p.headers, ex.dropResponseHeaders);
    const head = buildResponseHead(
      {
        statusCode: status,
        statusText: p.statusText,
        headers,
        connection: close ? 'close' : ex.versionMinor === 0 ? 'keep-alive' : '',
        dechunk,
        extra: ex.responseHeaders.length === 0 ? EMPTY : ex.responseHeaders,
      },
      this.core.settings,
      headOut,
    );
    if (headOut.keepAliveTimeout >= 0) {
      // Stay below the backend's own idle limit so it never closes a socket just as we reuse it.
      this.idleLimit = Math.min(this.core.settings.poolIdleTimeout, Math.max(0, headOut.keepAliveTimeout * 1000 - 1000));
    }
    ex.status = status;
    this.keepAliveAfter = reusableAfter(p);
    source.startResponse(ex, noBody);
    if (noBody) {
      ex.writer.writeHead(head);
    } else {
      // Held until the first body bytes: head and body then leave in one write() (one syscall, no
      // writev; a prototype measured cork/writev 2.5 µs dearer per small response).
      this.pendingHead = head;
      this.body = dechunk ? DECHUNKED : untilClose ? UNTIL_CLOSE : p.chunked ? PARSED : this.countedBody(p.contentLength);
      this.setState(S.RESPONSE_BODY);
    }
    return true;
  }

  /** The reused counted mode, set to a Content-Length body's length. */
  private countedBody(length: number): ResponseBody {
    const c = this.counted;
    c.remaining = length;
    return c;
  }

  private gather(g: ResponseCollector, chunk: Buffer, start: number, end: number): void {
    this.responseBytes += end - start;
    g.size += end - start;
    if (g.size > g.limit) {
      this.pendingFailure = { reason: 'processing', why: `response body above the limit of ${g.limit} bytes for mediation` };
      return;
    }
    g.chunks.push(Buffer.from(chunk.subarray(start, end)));
  }

  private relay(chunk: Buffer, start: number, end: number): void {
    const b = this.body;
    if (b.kind === 'gather') {
      this.gather(b.collector, chunk, start, end);
      return;
    }
    this.responseBytes += end - start;
    const ex = this.ex as Exchange;
    const head = this.pendingHead;
    if (head !== null) {
      this.pendingHead = null;
      const n = end - start;
      if (n <= COMBINE_LIMIT) {
        // Copied after the head at once (a view of a shared-buffer read will do). A plain view: Buffer's
        // copy() cost about 1k instructions here under callgrind, its argument handling and a view of
        // its own (docs/performance.md, "Counting instructions").
        if (!ex.writer.writeJoined(head, spanOf(chunk, start, end))) this.pauseForSource();
        return;
      }
      if (directWrites && this.core.settings.directWrites) {
        if (!ex.writer.writeHeadAndBody(head, keptBytes(chunk, start, end))) this.pauseForSource();
        return;
      }
      ex.writer.writeHead(head);
    }
    if (!ex.writer.writeBody(keptBytes(chunk, start, end))) this.pauseForSource();
  }

  private flushHead(): void {
    const head = this.pendingHead as string;
    this.pendingHead = null;
    const ex = this.ex;
    if (ex !== null) ex.writer.writeHead(head);
  }

  private pauseForSource(): void {
    if (!this.socketPaused) {
      this.socketPaused = true;
      this.socket.pause();
    }
  }

  /** The response is complete. */
  private complete(trailing: boolean): void {
    if (this.pendingHead !== null) this.flushHead();
    const ex = this.ex as Exchange;
    this.setState(S.RESPONSE_DONE);
    const b = this.body;
    this.body = NO_BODY;
    ex.responseBytes = this.responseBytes;
    this.lastSmall = this.responseBytes <= SMALL_READ_BUFFER / 2;
    const g = b.kind === 'gather' ? b.collector : null;
    const untilClose = b.kind === 'untilClose' || (b.kind === 'gather' && b.framing === 'untilClose');
    const reusable =
      !trailing && this.keepAliveAfter && !untilClose && ex.requestComplete && !this.core.settings.disableKeepAlive && !this.core.closing;
    this.ex = null;
    ex.target = null;
    if (reusable) {
      // A paused node:net socket never reads on its own: a socket paused for backpressure must be resumed before reuse.
      this.resumeReading();
      // reset() is right both after a pause at message completion and after a counted body.
      this.parser.reset();
      this.setState(S.REQUEST_READY);
      this.idleSince = this.core.now;
      // Back in the pool first, so the client's next (pipelined) request can reuse this very socket.
      this.pool.release(this);
    } else {
      this.destroy();
    }
    if (g === null) ex.toClient.responseDone(ex);
    else
      ex.toClient.gatheredResponse(ex, {
        status: g.status,
        headers: g.headers,
        body: g.chunks.length === 1 ? (g.chunks[0] as Buffer) : Buffer.concat(g.chunks, g.size),
      } satisfies BufferedResponse);
  }

  private readonly onEnd = (): void => {
    const ex = this.ex;
    const b = this.body;
    if (ex !== null && (b.kind === 'untilClose' || (b.kind === 'gather' && b.framing === 'untilClose'))) {
      // A body delimited by the close (RFC 9112 §6.3 rule 8) ends here.
      const st = this.parser.finish();
      if (st === ExecStatus.PAUSED && this.stop === Stop.AT_COMPLETE) {
        this.stop = Stop.NONE;
        this.complete(false);
        return;
      }
    }
    if (ex !== null) this.fail('closed', 'EOF');
    else this.destroy();
  };

  private readonly onError = (err: NodeJS.ErrnoException): void => {
    if (this.ex === null) {
      this.destroy();
      return;
    }
    // A proxy's refusal says what the proxy answered (its status line), not just EPROXY.
    this.fail(this.classify(err.code), err.code === 'EPROXY' ? err.message : (err.code ?? err.message));
  };

  private classify(code: string | undefined): FaultReason {
    if (this.link !== Link.CONNECTED) {
      if (code === 'EPROXY') return 'proxy_refused';
      if (code === 'ECONNREFUSED') return 'connect_refused';
      if (code === 'ETIMEDOUT') return 'connect_timeout';
      if (this.link === Link.TCP_UP) return 'tls_handshake';
      return 'connect_failed';
    }
    if (code === 'ETIMEDOUT') return 'socket_timeout';
    // Once the whole request is handed to the socket (REQUEST_DONE) the connection is waiting to receive:
    // a reset then (ECONNRESET from a read) is a receive error, 101501 + 3, not a send error, whose
    // 101500 + 3 is the number of "connection refused" (101503 + 0). A write that fails there (EPIPE)
    // is still the sending's.
    if (this.state === S.REQUEST_DONE) return code === 'EPIPE' ? 'io_send' : 'io_receive';
    return this.state < S.REQUEST_DONE ? 'io_send' : 'io_receive';
  }

  private readonly onClose = (): void => {
    if (this.ex !== null) this.fail('closed', 'socket closed');
    this.finalise();
  };

  /** Fail the current exchange with `reason` at the current state; retries a stale reused socket once. */
  fail(reason: FaultReason, cause: string | undefined, deadlineHit = false): void {
    const ex = this.ex;
    const state = this.state;
    // Destroyed or failed already: the exchange (if any) was dealt with then.
    if (this.life !== Life.OPEN && ex === null) return;
    this.destroy();
    if (ex === null) return;
    this.ex = null;
    ex.target = null;
    if (ex.aborted) return;
    const staleCandidate =
      this.reused &&
      this.responseBytes === 0 &&
      !ex.responseStarted &&
      (reason === 'closed' || reason === 'io_send' || reason === 'io_receive');
    // RFC 9110 §9.2.2: a proxy must not automatically retry a non-idempotent request. A request whose head
    // was written may have reached the backend (it may have read it and closed before answering), so only
    // an idempotent method is resent then; before the connection was up no byte of it left the gateway.
    const resendable = this.link !== Link.CONNECTED || idempotent(ex.method);
    if (staleCandidate && resendable && this.core.settings.retryStale && !ex.retried && ex.bodySent === 0) {
      // The backend closed a kept-alive socket as we reused it, before any response byte, and no body
      // byte is lost. Retry once on a fresh connection.
      ex.retried = true;
      this.core.stats.retries++;
      ex.toClient.retry(ex, 'stale reused connection');
      return;
    }
    const fault = makeFault(reason, state, this.reused, cause);
    this.pool.failed(fault);
    const policy = ex.forward?.retry;
    if (
      policy !== undefined &&
      resendable &&
      ex.retries < policy.count &&
      !deadlineHit &&
      ex.bodySent === 0 &&
      this.responseBytes === 0 &&
      !ex.responseStarted &&
      (policy.codes.includes(fault.code) || policy.codes.includes(fault.base))
    ) {
      // Endpoint advanced configuration (spec 002 part 7 rule 3): retry on the listed codes, only while
      // resending loses nothing (no body byte sent, no response byte received).
      ex.retries++;
      this.core.stats.retries++;
      this.core.log.log('info', 'endpoint_retry', {
        code: fault.code,
        base: fault.base,
        state: fault.state,
        attempt: ex.retries + 1,
        url: ex.url,
      });
      ex.toClient.retry(ex, `fault ${fault.code}`);
      return;
    }
    ex.toClient.targetFailed(ex, fault);
  }

  /** Sweep: connect timeout, inactivity (spec 001 [passthru_http] 'http.socket.timeout'). */
  checkTimeouts(now: number): void {
    const ex = this.ex;
    if (ex === null) return; // idle ones are evicted by the pool's sweep
    const settings = this.core.settings;
    if (ex.responseDeadline !== 0 && this.state < S.RESPONSE_HEAD && now > ex.responseDeadline) {
      // [mediation] engine.global_timeout_interval (spec 001): the response must arrive within it; the
      // socket is closed, so a response arriving later is dropped, and the spec asks for a warning.
      this.core.log.log('warn', 'global_timeout', {
        url: ex.url,
        target: this.pool.endpoint.key,
        timeoutMs: settings.globalTimeout,
        message: 'no backend response within the global timeout; a late response is dropped',
      });
      this.fail('global_timeout', `no response within ${settings.globalTimeout} ms`, true);
      return;
    }
    if (ex.deadline !== 0 && now > ex.deadline) {
      this.fail('socket_timeout', `endpoint timeout of ${(ex.forward as { timeout?: number }).timeout} ms`, true);
      return;
    }
    if (this.link !== Link.CONNECTED) {
      if (now - this.connectStart > settings.connectTimeout)
        this.fail('connect_timeout', `no connection within ${settings.connectTimeout} ms`);
      return;
    }
    // Waiting on the client (its body, or its reading of the response) is not the backend's inactivity:
    // the source's own timeout covers that side.
    if (this.socketPaused) return;
    if (this.state === S.REQUEST_BODY && !writeBlocked(this.socket)) return;
    if (now - this.lastActive > settings.socketTimeout) this.fail('socket_timeout', `no data for ${settings.socketTimeout} ms`);
  }

  /** Close now; the exchange (if any) has been or will be dealt with by the caller. */
  destroy(): void {
    if (this.life !== Life.OPEN) return;
    // The caller owns the exchange from here: the socket's later 'close' must not fail it a second time.
    this.ex = null;
    if (this.state !== S.CLOSED) this.setState(S.CLOSING);
    this.socket.destroy();
    this.finalise();
  }

  /** Runs once: when the connection closes (Life.CLOSED), or when a tunnel takes its socket (Life.DETACHED, set by the caller). */
  private finalised = false;
  private finalise(): void {
    if (this.finalised) return;
    this.finalised = true;
    const detached = this.life === Life.DETACHED;
    if (!detached) {
      this.life = Life.CLOSED;
      if (this.state !== S.CLOSING && this.state !== S.CLOSED) this.setState(S.CLOSING);
      this.setState(S.CLOSED);
    }
    this.parser.destroy();
    // The read buffer goes back unless a client write may still hold its bytes (or a tunnel reads into it).
    if (!detached) {
      if (this.readBuf !== null && this.readBuf !== SHARED_READ_BUFFER && this.busySocket === null) this.core.giveReadBuffer(this.readBuf);
      this.readBuf = null;
    }
    this.core.targets.delete(this);
    this.pool.removed(this);
  }
}

/**
 * Whether the backend connection may serve another request after this response: llhttp's verdict, except
 * that an HTTP/1.0 response with Transfer-Encoding has faulty framing and its connection is closed after
 * it, whatever Keep-Alive it announced (RFC 9112 §6.1). One compare on the common path (not chunked).
 */
function reusableAfter(p: HttpParser): boolean {
  return p.keepAlive && !(p.chunked && p.versionMinor === 0);
}

/**
 * The methods RFC 9110 §9.2.2 defines as idempotent: GET, HEAD, OPTIONS, TRACE, PUT, DELETE. Length first,
 * then one compare (methods arrive upper-case from the strict parser).
 */
export function idempotent(method: string): boolean {
  switch (method.length) {
    case 3:
      return method === 'GET' || method === 'PUT';
    case 4:
      return method === 'HEAD';
    case 5:
      return method === 'TRACE';
    case 6:
      return method === 'DELETE';
    case 7:
      return method === 'OPTIONS';
    default:
      return false;
  }
}

/**
 * A new field list without the given lower-case names ([apim.transport_headers] excludeRequestHeaders,
 * ForwardDecision.dropResponseHeaders). Content-Length and Transfer-Encoding stay whatever the list says:
 * the body is relayed with the backend's framing, and a head without it would let the client read the
 * next response on its kept-alive connection as part of this body (docs/security.md, "Request smuggling").
 */
function dropFields(headers: readonly string[], drop: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i] as string;
    if (isFramingField(name) || !drop.includes(name.toLowerCase())) out.push(name, headers[i + 1] as string);
  }
  return out;
}
