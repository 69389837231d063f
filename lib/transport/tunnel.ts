/**
 * WebSocket tunnels (RFC 6455): after the backend's 101, the client socket and the backend socket are
 * joined and bytes flow both ways unchanged, with backpressure (a side whose peer's buffer is full stops
 * reading until it drains), until either side closes. Frame headers are read only as far as counting
 * needs (RFC 6455 §5.2: opcode byte, length, mask): payloads are never unmasked or copied.
 *
 * State: the source connection stays in RESPONSE_BODY while the tunnel is open (its sweep then guards a
 * client that stops reading, like any response), CLOSING once a side ended. A failure is a transport
 * fault with the same codes as any exchange (101001/101000 client side, 101501/101505 backend side, at
 * state RESPONSE_BODY(5)); a frame the per-frame hook refuses closes the tunnel with close code 1008
 * (policy violation) and fault 103082. A tunnel whose hooks read client messages (onClientMessage,
 * GraphQL subscriptions) holds each client frame until it is whole, then forwards, answers or refuses it:
 * text and binary messages alike are read, and a frame it cannot read as sent (RSV bits, a reserved
 * opcode, fragments) is refused.
 * docs/websocket.md, docs/graphql.md.
 */
import { isUtf8 } from 'node:buffer';
import type { Socket } from 'node:net';
import { ProtocolState as S } from './states';
import { makeFault, type TransportFault } from './codes';
import type { TransportCore } from './core';
import { markResponseDone, type Exchange, type TunnelPort } from './exchange';
import { buildResponseHead } from './headers';
import type { TargetConnection } from './target';
import { keptBytes } from './read-buffers';
import type { ClientMessageVerdict, TunnelInfo, WebSocketHooks } from './types';
import { writesPending } from './direct-write';

/**
 * Counts frames in one direction of a WebSocket byte stream: reads each frame header (2 to 14 bytes,
 * possibly split across reads) and skips its payload by length.
 */
export class FrameCounter {
  frames = 0;
  /** Payload bytes of the current frame still to come. */
  private remaining = 0;
  private readonly hdr = Buffer.alloc(14);
  private hdrLen = 0;

  /** Between frames: a close frame may be inserted here without corrupting the stream. */
  get atBoundary(): boolean {
    return this.remaining === 0 && this.hdrLen === 0;
  }

  /**
   * Scans buf[start, end). For every frame whose header completes here, `onFrame(offset)` is called with
   * the offset where the header began (-1 if it began in an earlier read); when it returns false, scanning
   * stops and that offset (or -1) is returned. Otherwise returns `end`.
   */
  scan(buf: Buffer, start: number, end: number, onFrame: ((headerStart: number) => boolean) | undefined): number {
    let i = start;
    while (i < end) {
      if (this.remaining > 0) {
        const n = Math.min(this.remaining, end - i);
        this.remaining -= n;
        i += n;
        continue;
      }
      const headerStart = this.hdrLen === 0 ? i : -1;
      // Collect header bytes until the whole header is known.
      while (i < end) {
        this.hdr[this.hdrLen++] = buf[i++] as number;
        if (this.hdrLen >= 2 && this.hdrLen === headerLength(this.hdr)) break;
      }
      if (this.hdrLen < 2 || this.hdrLen !== headerLength(this.hdr)) return end;
      this.remaining = payloadLength(this.hdr);
      this.hdrLen = 0;
      this.frames++;
      if (onFrame !== undefined && !onFrame(headerStart)) return headerStart;
    }
    return end;
  }
}

function headerLength(h: Buffer): number {
  const len7 = (h[1] as number) & 0x7f;
  const mask = ((h[1] as number) & 0x80) !== 0 ? 4 : 0;
  return 2 + (len7 === 126 ? 2 : len7 === 127 ? 8 : 0) + mask;
}

function payloadLength(h: Buffer): number {
  const len7 = (h[1] as number) & 0x7f;
  if (len7 === 126) return h.readUInt16BE(2);
  if (len7 === 127) return h.readUInt32BE(2) * 0x1_0000_0000 + h.readUInt32BE(6);
  return len7;
}

/** A close frame (RFC 6455 §5.5.1) with `code`; masked when it goes to a server (§5.3). */
export function closeFrame(code: number, reason: string, masked: boolean): Buffer {
  const payload = Buffer.alloc(2 + Buffer.byteLength(reason));
  payload.writeUInt16BE(code, 0);
  payload.write(reason, 2);
  const head = Buffer.from([0x88, (masked ? 0x80 : 0) | payload.length]);
  if (!masked) return Buffer.concat([head, payload]);
  const key = Buffer.from([0x37, 0xfa, 0x21, 0x3d]);
  for (let i = 0; i < payload.length; i++) payload[i] = (payload[i] as number) ^ (key[i % 4] as number);
  return Buffer.concat([head, key, payload]);
}

/** Policy violation (RFC 6455 §7.4.1). */
const CLOSE_POLICY = 1008;
/**
 * Protocol error (an RSV bit or a reserved opcode), unsupported data (a fragmented message where whole
 * ones are inspected), a payload that is not UTF-8, message too big (RFC 6455 §7.4.1).
 */
const CLOSE_PROTOCOL = 1002;
const CLOSE_UNSUPPORTED = 1003;
const CLOSE_NOT_UTF8 = 1007;
const CLOSE_TOO_BIG = 1009;
/** The default bound of a held client frame: 64 KiB of payload and the longest header. */
const DEFAULT_MAX_MESSAGE = 65536 + 14;

/** An unmasked text frame (RFC 6455 §5.2) from the server side. */
export function textFrame(text: string): Buffer {
  const payload = Buffer.from(text, 'utf8');
  const n = payload.length;
  const head =
    n < 126
      ? Buffer.from([0x81, n])
      : n < 0x10000
        ? Buffer.from([0x81, 126, n >> 8, n & 0xff])
        : Buffer.concat([Buffer.from([0x81, 127]), bigLength(n)]);
  return Buffer.concat([head, payload]);
}

function bigLength(n: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeUInt32BE(Math.floor(n / 0x1_0000_0000), 0);
  b.writeUInt32BE(n >>> 0, 4);
  return b;
}

/**
 * Holds the client's bytes until each frame is complete, for WebSocketHooks.onClientMessage: whole
 * frames are handed to `frame` (header and payload, a copy: read buffers are reused); a frame longer
 * than `max` is reported as too big before it is held.
 */
class FrameHolder {
  private held: Buffer | undefined;
  constructor(private readonly max: number) {}

  /** Feeds bytes; calls `frame` per complete frame; returns false when a frame is over the bound. */
  feed(buf: Buffer, n: number, frame: (f: Buffer) => boolean): boolean {
    let data = this.held === undefined ? Buffer.from(buf.subarray(0, n)) : Buffer.concat([this.held, buf.subarray(0, n)]);
    this.held = undefined;
    for (;;) {
      if (data.length < 2) break;
      const hl = headerLength(data);
      if (data.length < hl) break;
      const total = hl + payloadLength(data);
      if (total > this.max) return false;
      if (data.length < total) break;
      if (!frame(data.subarray(0, total))) return true;
      data = data.subarray(total);
    }
    if (data.length > 0) this.held = data.length > this.max ? undefined : data;
    return data.length <= this.max;
  }
}

/** The payload of a whole client frame, unmasked (RFC 6455 §5.3), a copy. */
function unmasked(f: Buffer): Buffer {
  const hl = headerLength(f);
  const masked = ((f[1] as number) & 0x80) !== 0;
  const payload = Buffer.from(f.subarray(hl));
  if (masked) {
    const key = f.subarray(hl - 4, hl);
    for (let i = 0; i < payload.length; i++) payload[i] = (payload[i] as number) ^ (key[i & 3] as number);
  }
  return payload;
}

export class Tunnel implements TunnelInfo {
  clientFrames = 0;
  backendFrames = 0;
  clientBytes = 0;
  backendBytes = 0;
  state: 'open' | 'closing' | 'closed' = 'open';
  fault: TransportFault | undefined = undefined;
  readonly connectionId: number;
  private readonly up = new FrameCounter();
  private readonly down = new FrameCounter();
  private clientClosed = false;
  private backendClosed = false;
  private refused = false;
  /** onClientMessage: the client's frames held until whole; replies waiting for a frame boundary toward the client. */
  private readonly holder: FrameHolder | undefined;
  private toClient: Buffer[] | undefined;

  constructor(
    private readonly core: TransportCore,
    private readonly source: TunnelPort,
    private readonly client: Socket,
    private readonly backend: Socket,
    private readonly target: TargetConnection,
    private readonly hooks: WebSocketHooks,
  ) {
    this.connectionId = source.id;
    const hook = hooks.onClientFrame;
    this.onClientFrame =
      hook === undefined
        ? undefined
        : () => {
            this.clientFrames = this.up.frames;
            return hook(this);
          };
    this.holder = hooks.onClientMessage === undefined ? undefined : new FrameHolder(hooks.maxClientMessage ?? DEFAULT_MAX_MESSAGE);
    core.tunnels.add(this);
    client.on('data', this.onClientData);
    client.on('end', this.onClientEnd);
    client.on('drain', this.onClientDrain);
    client.on('close', this.onClientClose);
    client.on('error', this.onClientError);
    backend.on('data', this.onBackendData);
    backend.on('end', this.onBackendEnd);
    backend.on('drain', this.onBackendDrain);
    backend.on('close', this.onBackendClose);
    backend.on('error', this.onBackendError);
    // Sockets reading into connection-owned buffers (net's onread) deliver here instead of 'data'.
    // A detached backend connection reads into its own buffers (target.ts nextReadBuffer); a read of the
    // shared buffer that still came would be held by the client's write, so it is copied (keptBytes).
    target.redirectReads({ onRead: (buf, n) => this.fromBackend(keptBytes(buf, 0, n), n) });
    source.reader.redirectReads((buf, n) => this.fromClient(buf, n));
  }

  /** The per-frame hook, called with the counts including the frame just read (made once, not per read). */
  private readonly onClientFrame: ((headerStart: number) => boolean) | undefined;

  private readonly onClientData = (chunk: Buffer): void => this.fromClient(chunk, chunk.length);
  private readonly onBackendData = (chunk: Buffer): void => this.fromBackend(chunk, chunk.length);

  /** Bytes from the client toward the backend. */
  fromClient(buf: Buffer, n: number): void {
    if (this.refused) return;
    this.source.lastActive = this.core.now;
    const stop = this.up.scan(buf, 0, n, this.onClientFrame);
    this.clientFrames = this.up.frames;
    if (stop !== n) {
      this.refuse(buf, stop);
      return;
    }
    this.clientBytes += n;
    if (this.holder !== undefined) {
      this.inspect(buf, n, this.holder);
      return;
    }
    const ok = this.backend.write(n === buf.length ? buf : buf.subarray(0, n));
    if (writesPending(this.backend)) this.source.reader.holdReadBuffer();
    if (!ok) this.client.pause();
  }

  /**
   * onClientMessage: whole frames judged one by one; data messages (text or binary: a backend may read
   * either as the same JSON) forwarded, answered or the tunnel closed. What cannot be judged whole and as
   * sent is refused: an RSV bit (RFC 6455 §5.2: no extension is negotiated on such a tunnel, so
   * permessage-deflate's RSV1 is a protocol error, 1002), a reserved opcode (§5.2, 1002), a fragmented
   * message (1003), a payload that is not UTF-8 (§8.1, 1007).
   */
  private inspect(buf: Buffer, n: number, holder: FrameHolder): void {
    const judge = this.hooks.onClientMessage as (text: string) => ClientMessageVerdict;
    let ok = true;
    const fits = holder.feed(buf, n, (f) => {
      const b0 = f[0] as number;
      const opcode = b0 & 0x0f;
      const data = opcode === 1 || opcode === 2;
      if ((b0 & 0x70) !== 0) {
        this.closeBoth(CLOSE_PROTOCOL, 'no extension was negotiated: RSV bits must be 0');
        return false;
      }
      if (opcode === 0 || (data && (b0 & 0x80) === 0)) {
        this.closeBoth(CLOSE_UNSUPPORTED, 'fragmented message');
        return false;
      }
      if (!data && opcode < 8) {
        this.closeBoth(CLOSE_PROTOCOL, 'reserved opcode');
        return false;
      }
      let v: ClientMessageVerdict;
      if (data) {
        const payload = unmasked(f);
        if (!isUtf8(payload)) {
          this.closeBoth(CLOSE_NOT_UTF8, 'the message is not UTF-8');
          return false;
        }
        v = judge(payload.toString('utf8'));
      }
      if (v === undefined) {
        ok = this.backend.write(f) && ok;
        return true;
      }
      if ('reply' in v) {
        this.sendToClient(textFrame(v.reply));
        return true;
      }
      this.closeBoth(v.close, v.reason);
      return false;
    });
    if (!fits) this.closeBoth(CLOSE_TOO_BIG, 'message too big');
    else if (!ok) this.client.pause();
  }

  /** A frame of the gateway's own toward the client, at the next frame boundary of the backend's stream. */
  private sendToClient(frame: Buffer): void {
    if (this.down.atBoundary && this.toClient === undefined) {
      this.client.write(frame);
      return;
    }
    (this.toClient ??= []).push(frame);
  }

  /** Close code `code` to both sides (the backend's at once: the holder keeps its stream between frames). */
  private closeBoth(code: number, reason: string): void {
    if (this.refused) return;
    this.refused = true;
    this.backend.write(closeFrame(code, reason, true));
    if (this.down.atBoundary) this.client.write(closeFrame(code, reason, false));
    this.client.pause();
    this.backend.end();
    this.source.close();
  }

  /** Bytes from the backend toward the client. */
  fromBackend(buf: Buffer, n: number): void {
    this.source.lastActive = this.core.now;
    this.down.scan(buf, 0, n, undefined);
    this.backendFrames = this.down.frames;
    this.backendBytes += n;
    if (this.refused) return;
    const ok = this.client.write(n === buf.length ? buf : buf.subarray(0, n));
    if (writesPending(this.client)) this.target.holdReadBuffer(this.client);
    if (this.toClient !== undefined && this.down.atBoundary) {
      for (const f of this.toClient) this.client.write(f);
      this.toClient = undefined;
    }
    if (!ok) this.backend.pause();
  }

  /** The per-frame hook refused a client frame: close code 1008 both ways, at frame boundaries only. */
  private refuse(buf: Buffer, frameStart: number): void {
    const holder = this.holder;
    if (holder !== undefined) {
      // The frames before the refused one are judged like any (onClientMessage); the holder forwards
      // whole frames only, so the backend's stream is between frames for the close frame.
      if (frameStart > 0) {
        this.clientBytes += frameStart;
        this.inspect(buf, frameStart, holder);
        if (this.refused) return;
      }
      this.refused = true;
      this.backend.write(closeFrame(CLOSE_POLICY, 'throttled', true));
    } else {
      this.refused = true;
      if (frameStart > 0) {
        this.clientBytes += frameStart;
        this.backend.write(Buffer.from(buf.subarray(0, frameStart)));
      }
      // Only where the stream is between frames can a close frame go in; elsewhere the socket just ends.
      if (frameStart >= 0) this.backend.write(closeFrame(CLOSE_POLICY, 'throttled', true));
    }
    if (this.down.atBoundary) this.client.write(closeFrame(CLOSE_POLICY, 'throttled', false));
    const fault = makeFault('ws_frame_refused', S.RESPONSE_BODY, false, `client frame ${this.clientFrames} refused`);
    this.fault = fault;
    this.core.reportFault(fault, undefined);
    this.client.pause();
    this.backend.end();
    this.source.close();
  }

  private readonly onClientDrain = (): void => {
    this.backend.resume();
  };

  private readonly onBackendDrain = (): void => {
    if (!this.refused) this.client.resume();
  };

  private readonly onClientEnd = (): void => {
    // The client half-closed: pass it on (RFC 6455 §7.1.1: the server closes the TCP connection first).
    this.state = 'closing';
    this.backend.end();
  };

  private readonly onBackendEnd = (): void => {
    this.state = 'closing';
    this.source.close();
  };

  private readonly onClientError = (err: NodeJS.ErrnoException): void => {
    if (this.fault !== undefined) return;
    this.fail(makeFault('client_io_send', S.RESPONSE_BODY, false, err.code ?? err.message));
  };

  private readonly onBackendError = (err: NodeJS.ErrnoException): void => {
    if (this.fault !== undefined) return;
    this.fail(makeFault(err.code === 'ETIMEDOUT' ? 'socket_timeout' : 'io_receive', S.RESPONSE_BODY, true, err.code ?? err.message));
  };

  private fail(fault: TransportFault): void {
    this.fault = fault;
    this.core.reportFault(fault, undefined);
    this.client.destroy();
    this.backend.destroy();
  }

  private readonly onClientClose = (): void => {
    this.clientClosed = true;
    // Nobody is left to read the backend's bytes.
    if (!this.backendClosed) this.backend.destroy();
    this.closed();
  };

  private readonly onBackendClose = (): void => {
    this.backendClosed = true;
    // Graceful: bytes still queued toward the client are flushed before the FIN; the sweep ends a stuck one.
    if (!this.clientClosed) this.source.close();
    this.closed();
  };

  private closed(): void {
    if (!this.clientClosed || !this.backendClosed || this.state === 'closed') return;
    this.state = 'closed';
    this.core.tunnels.delete(this);
    this.target.releaseTunnelBuffers();
    this.hooks.onClose?.(this);
  }
}

const EMPTY: readonly string[] = [];

/**
 * The backend accepted a WebSocket handshake (101, RFC 6455 §4.2.2): the 101 head goes to the client
 * with Upgrade and Connection restored (they are hop-by-hop, so the head builder drops them), then both
 * sockets leave the HTTP machinery for a tunnel. Bytes after the head are tunnel bytes. Called by the
 * exchange's owner (ResponsePort.targetUpgraded, exchange.ts) when its target reads a 101 head.
 */
export function switchProtocols(source: TunnelPort, target: TargetConnection, chunk: Buffer, off: number, end: number): void {
  const ex = target.ex as Exchange;
  const p = target.parser;
  const core = target.core;
  const head = buildResponseHead(
    {
      statusCode: 101,
      statusText: p.statusText,
      headers: p.headers,
      connection: 'upgrade',
      dechunk: false,
      extra: ex.responseHeaders.length === 0 ? EMPTY : ex.responseHeaders,
    },
    core.settings,
  );
  ex.status = 101;
  const rest = off < end ? Buffer.from(chunk.subarray(off, end)) : undefined;
  const backend = target.leaveForTunnel(ex);
  startTunnel(core, source, ex, head, backend, target, rest);
}

/** The 101 is in hand: write it to the client and join the two sockets. */
function startTunnel(
  core: TransportCore,
  source: TunnelPort,
  ex: Exchange,
  head: string,
  backend: Socket,
  target: TargetConnection,
  rest: Buffer | undefined,
): void {
  const hooks = (ex.forward as { websocket?: WebSocketHooks }).websocket ?? {};
  // The 101 ends the exchange (status 101, recorded like any response), then parsing stops.
  ex.status = 101;
  source.startResponse(ex, true);
  markResponseDone(ex);
  source.writer.writeHead(head);
  source.endExchange(ex, undefined);
  const early = source.leaveForTunnel();
  const tunnel = new Tunnel(core, source, source.writer.socket, backend, target, hooks);
  // Backend bytes that came with the 101, then client bytes sent before it (both already framed).
  if (rest !== undefined) tunnel.fromBackend(rest, rest.length);
  for (const b of early) tunnel.fromClient(b, b.length);
}
