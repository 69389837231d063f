/**
 * HTTP/2 to clients (docs/http2.md): the gateway listeners' handover (Transport ListenOptions.handover) for
 * connections that agreed on `h2` by ALPN, or that start with the client preface on the plain listener
 * when h2c is on. node:http2 (nghttp2) frames the connection; each stream goes through the chain as an
 * HTTP/1.1 request over an in-process pair (stream.ts).
 *
 * Defences, each bounded by a key of [throughway.http2] (docs/http2.md, "Defences"):
 * - rapid reset (CVE-2023-44487): streams the client resets are counted in a token bucket (reset_burst
 *   refilled by reset_rate per second, as nghttp2 1.57.0's limiter for this CVE, which is set to the same
 *   values); past it GOAWAY ENHANCE_YOUR_CALM;
 * - CONTINUATION flood (CVE-2024-27316): nghttp2 1.61.0 bounds the CONTINUATION frames of one header
 *   block (8) and max_header_list_size bounds their decoded size; past either the connection ends;
 * - HPACK bombs: max_header_list_size counts decoded bytes (RFC 9113 §6.5.2), however few bytes the
 *   dynamic table let the client send: the stream is reset with ENHANCE_YOUR_CALM;
 * - SETTINGS and PING floods (CVE-2019-9515, CVE-2019-9512): nghttp2 stops at 1000 queued ACKs, and this
 *   module counts the frames themselves: max_control_frames per flood_window, then GOAWAY
 *   ENHANCE_YOUR_CALM (Envoy's max_outbound_control_frames and nginx's per-connection frame budget bound
 *   the same work);
 * - zero-window stalls: a response that cannot be written for stall_timeout is reset (stream.ts), and a
 *   connection without streams is closed after idle_timeout.
 */
import * as http2 from 'node:http2';
import type * as net from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { ProtocolHandover } from '../transport';
import { silentLogger, type Logger } from '../log';
import { resetByGateway, serveStream, type StreamLimits, type StreamPeer, type StreamServe } from './stream';
import type { Http2Settings } from './settings';
import { isGrpcContentType, serveGrpc, type GrpcServe } from './grpc';

export { http2Settings, DEFAULT_HTTP2_SETTINGS, type Http2Settings } from './settings';
export type { StreamServe } from './stream';
export type { GrpcServe } from './grpc';

/** The client connection preface (RFC 9113 §3.4): what a prior-knowledge h2c connection starts with. */
export const CLIENT_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

const { NGHTTP2_ENHANCE_YOUR_CALM, NGHTTP2_NO_ERROR } = http2.constants;
/** How long a refused connection stays open after its GOAWAY, for the frame to be written. */
const GOAWAY_FLUSH_MS = 50;

export interface Http2Handover extends ProtocolHandover {
  /** Open HTTP/2 connections. */
  sessions(): number;
  /** Connections closed by a defence, by reason ("control_frames"), since start. */
  readonly refused: Readonly<Record<string, number>>;
}

/**
 * The handover for one gateway: `serve` is its Transport.handleConnection; with `grpc`, streams of gRPC
 * calls (content-type application/grpc) are relayed over HTTP/2 instead (grpc.ts, docs/grpc.md).
 */
export function http2Handover(serve: StreamServe, s: Http2Settings, logger: Logger = silentLogger, grpc?: GrpcServe): Http2Handover {
  const engine = http2.createServer({
    settings: {
      maxConcurrentStreams: s.maxConcurrentStreams,
      maxHeaderListSize: s.maxHeaderListSize,
      initialWindowSize: s.initialWindowSize,
      enablePush: false,
    },
    maxHeaderListPairs: 256,
    // nghttp2's own rapid-reset limiter, on the Node.js lines that take these (26 does, 20 does not;
    // @types/node does not declare them, hence the cast). The gateway's bucket below acts on every line.
    streamResetBurst: s.resetBurst,
    streamResetRate: s.resetRate,
  } as http2.ServerOptions);
  const limits: StreamLimits = Object.freeze({ stallTimeout: s.stallTimeout, maxHeaderListSize: s.maxHeaderListSize });
  const open = new Set<http2.ServerHttp2Session>();
  const refused: Record<string, number> = {};
  const refusing = new WeakSet<http2.ServerHttp2Session>();
  const refuse = (session: http2.ServerHttp2Session, reason: string): void => {
    if (refusing.has(session)) return;
    refusing.add(session);
    refused[reason] = (refused[reason] ?? 0) + 1;
    if (logger.enabled('warn')) logger.log('warn', 'http2_refused', { reason, remote: session.socket?.remoteAddress });
    // GOAWAY first (no new stream is taken after it, RFC 9113 §6.8); the socket closes once it is written
    // (destroying at once dropped it on the wire in tests).
    session.goaway(NGHTTP2_ENHANCE_YOUR_CALM);
    setTimeout(() => session.destroy(), GOAWAY_FLUSH_MS).unref();
  };

  engine.on('session', (session: http2.ServerHttp2Session) => {
    open.add(session);
    session.once('close', () => open.delete(session));
    session.on('error', () => session.destroy());
    // The connection's window as large as a stream's: uploads are not held to the default 65,535 bytes.
    session.once('connect', () => {
      if (s.initialWindowSize > 65535) session.setLocalWindowSize(s.initialWindowSize);
    });
    let frames = 0;
    let since = Date.now();
    const control = (): void => {
      const now = Date.now();
      if (now - since >= s.floodWindow) {
        since = now;
        frames = 0;
      }
      if (++frames > s.maxControlFrames && !session.destroyed) refuse(session, 'control_frames');
    };
    session.on('ping', control);
    session.on('remoteSettings', control);
    let streams = 0;
    // Rapid reset (CVE-2023-44487): streams the client reset before their response ended, in a token
    // bucket of reset_burst refilled by reset_rate per second, as nghttp2 1.57.0 counts them.
    let tokens = s.resetBurst;
    let filled = Date.now();
    // Called once per stream as it closes: from StreamSocket's 'close' listener (stream-socket.ts), or as
    // onClose, the 'close' listener of a stream that has none (a gRPC call, a stream refused its head).
    const closed = (stream: http2.ServerHttp2Stream): void => {
      streams--;
      if (stream.rstCode === NGHTTP2_NO_ERROR || resetByGateway.has(stream) || session.destroyed) return;
      const now = Date.now();
      tokens = Math.min(s.resetBurst, tokens + ((now - filled) / 1000) * s.resetRate);
      filled = now;
      if (--tokens < 0) refuse(session, 'rapid_reset');
    };
    function onClose(this: http2.ServerHttp2Stream): void {
      closed(this);
    }
    // The peer, read once per session: session.socket is a Proxy in node:http2, and the three reads through
    // it cost about 3,700 instructions per stream (docs/performance.md, "Per-stream costs of the h2c path").
    const socket = session.socket as net.Socket | TLSSocket | undefined;
    const peer: StreamPeer = Object.freeze({
      address: socket?.remoteAddress ?? '',
      port: socket?.remotePort ?? 0,
      secure: (socket as TLSSocket | undefined)?.encrypted === true,
    });
    session.on('stream', (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, _flags: number, raw: string[]) => {
      streams++;
      if (grpc !== undefined && isGrpcContentType(headers['content-type'])) {
        serveGrpc(stream, raw, grpc, peer);
        stream.on('close', onClose);
      } else if (!serveStream(stream, raw, serve, limits, peer, closed)) stream.on('close', onClose);
    });
    session.setTimeout(s.idleTimeout, () => {
      if (streams === 0 && !session.destroyed) {
        session.goaway(NGHTTP2_NO_ERROR);
        session.close();
      }
    });
  });

  return {
    alpn: 'h2',
    preface: s.h2c ? CLIENT_PREFACE : undefined,
    serve(socket: net.Socket) {
      engine.emit('connection', socket);
    },
    sessions: () => open.size,
    refused,
    async close(ms: number) {
      const waits = [...open].map(
        (session) =>
          new Promise<void>((resolve) => {
            if (session.destroyed) return resolve();
            const timer = setTimeout(() => session.destroy(), ms);
            session.once('close', () => {
              clearTimeout(timer);
              resolve();
            });
            // GOAWAY: no new streams; open ones finish (RFC 9113 §6.8).
            session.close();
          }),
      );
      await Promise.all(waits);
      // The backends' sessions of the relayed gRPC calls, once no client stream is left.
      await grpc?.sessions.close();
    },
  };
}
