/**
 * One HTTP/2 stream through the gateway's chain (docs/http2.md): its request is handed to the transport
 * as HTTP/1.1 over an in-process connection bound to the stream (stream-socket.ts), so routing, CORS,
 * authentication, subscriptions, throttling, mediation, faults and the access log are the HTTP/1.1 path's
 * own code; the connection names the client's version "2.0" (Transport.handleConnection). Bodies stream
 * both ways with backpressure: the stream is read only as fast as the transport takes its bytes (so
 * flow-control windows open only as the backend reads), and a response waits for the stream's window
 * ('drain') before the backend is read again.
 *
 * Field translation (RFC 9113 §8.3 and §8.2.3): :method and :path make the request line, :authority the
 * Host field when there is none, cookie fields are joined with "; "; the response's hop-by-hop fields
 * (RFC 9110 §7.6.1) are not copied, and names are sent in lower case (RFC 9113 §8.2.2).
 */
import * as http2 from 'node:http2';
import type { Socket } from 'node:net';
import { StreamSocket } from './stream-socket';
import { breaksLine } from '../transport/headers';

/** What a stream needs of the gateway: a way to serve one in-process connection. */
export type StreamServe = (socket: Socket, secure: boolean, clientVersion: string) => void;

const { NGHTTP2_ENHANCE_YOUR_CALM, NGHTTP2_PROTOCOL_ERROR } = http2.constants;

/** A request head built from a stream's fields, as the transport parses it. */
export interface RequestHead {
  readonly method: string;
  readonly head: string;
  /** The body is sent chunked (the stream has DATA frames and no content-length). */
  readonly chunked: boolean;
}
/** A stream whose fields make no head: it is reset with `refused`, an RST_STREAM code (RFC 9113 §7). */
export interface HeadRefused {
  readonly refused: number;
}
/** Past max_header_list_size (RFC 9113 §6.5.2): ENHANCE_YOUR_CALM, as for the HPACK bomb it stops. */
export const TOO_LARGE: HeadRefused = Object.freeze({ refused: NGHTTP2_ENHANCE_YOUR_CALM });
/** A field that would split the HTTP/1.1 head (RFC 9113 §8.2.1, §8.1.1): malformed, PROTOCOL_ERROR. */
export const MALFORMED: HeadRefused = Object.freeze({ refused: NGHTTP2_PROTOCOL_ERROR });

/** Streams the gateway reset itself (the rapid-reset count, index.ts, counts only the client's). */
export const resetByGateway = new WeakSet<http2.ServerHttp2Stream>();
function reset(stream: http2.ServerHttp2Stream, code: number): void {
  resetByGateway.add(stream);
  stream.close(code);
}

/**
 * An HTTP/2 request's raw pairs as the HTTP/1.1 head the transport parses, in one pass: the request line from
 * :method and :path, no other pseudo-fields, cookies joined, Host from :authority when there is none, TE
 * dropped; a body without content-length sent chunked (`body`: the stream has DATA frames); `connection:
 * close`, as the transport closes the in-process connection after the one response of its stream.
 * TOO_LARGE past `maxSize`, the decoded list's size as SETTINGS_MAX_HEADER_LIST_SIZE counts it (RFC 9113
 * §6.5.2): an HPACK bomb sends few bytes that index one large field many times, and no head is built of it.
 * MALFORMED for a name or value with CR, LF or NUL, or a :path with a space or tab (RFC 9113 §8.2.1,
 * §8.3.1): nghttp2 drops such a regular field and resets a stream whose pseudo-field has one
 * (test/http2/fields.test.ts), and this check keeps the head whole should a Node.js line pass one on.
 */
export function requestHead(raw: readonly string[], body: boolean, maxSize: number): RequestHead | HeadRefused {
  let method = 'GET';
  let path: string | undefined;
  let authority: string | undefined;
  let host = false;
  let counted = false;
  let cookies: string | undefined;
  let fields = '';
  let size = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    const value = raw[i + 1] as string;
    size += name.length + value.length + 32;
    if (size > maxSize) return TOO_LARGE;
    if (breaksLine(value) || breaksLine(name)) return MALFORMED;
    if (name.charCodeAt(0) === 0x3a) {
      if (name === ':method') method = value;
      else if (name === ':path') {
        if (value.indexOf(' ') !== -1 || value.indexOf('\t') !== -1) return MALFORMED;
        path = value;
      } else if (name === ':authority') authority = value;
      continue;
    }
    if (name === 'cookie') cookies = cookies === undefined ? value : cookies + '; ' + value;
    // TE: only "trailers" is allowed in HTTP/2 (RFC 9113 §8.2.2), and hop-by-hop toward HTTP/1.1; nghttp2
    // refused the other hop-by-hop fields already, and the framing is this module's.
    else if (name === 'te' || name === 'connection' || name === 'transfer-encoding') continue;
    else {
      if (name === 'host') host = true;
      else if (name === 'content-length') counted = true;
      fields += name + ': ' + value + '\r\n';
    }
  }
  if (!host && authority !== undefined) fields = 'host: ' + authority + '\r\n' + fields;
  if (cookies !== undefined) fields += 'cookie: ' + cookies + '\r\n';
  const chunked = body && !counted;
  // CONNECT has no :path (RFC 9113 §8.5): the transport refuses CONNECT by its request-target.
  const head =
    method +
    ' ' +
    (path ?? authority ?? '/') +
    ' HTTP/1.1\r\n' +
    fields +
    (chunked ? 'transfer-encoding: chunked\r\n' : '') +
    'connection: close\r\n\r\n';
  return { method, head, chunked };
}

export interface StreamLimits {
  /** stall_timeout: ms a response may wait for the client's window before the stream is reset. */
  readonly stallTimeout: number;
  /** max_header_list_size: decoded bytes of a request's fields (RFC 9113 §6.5.2). */
  readonly maxHeaderListSize: number;
}

/** Who is at the other end of a stream's connection, read once per session (index.ts). */
export interface StreamPeer {
  readonly address: string;
  readonly port: number;
  readonly secure: boolean;
}

/** A reset stream reports its own code as an error; the session's defences have counted what matters. */
function ignore(): void {}

/**
 * Serves one stream: its request through an in-process connection bound to it (stream-socket.ts) into `serve`.
 * True when that connection took the stream's 'close' and calls `closed` from it; false for a stream reset
 * here, which has no listener of this module's on 'close'.
 */
export function serveStream(
  stream: http2.ServerHttp2Stream,
  raw: readonly string[],
  serve: StreamServe,
  limits: StreamLimits,
  peer: StreamPeer,
  closed: (stream: http2.ServerHttp2Stream) => void,
): boolean {
  stream.on('error', ignore);
  const body = !stream.endAfterHeaders;
  const request = requestHead(raw, body, limits.maxHeaderListSize);
  if ('refused' in request) {
    reset(stream, request.refused);
    return false;
  }
  const socket = new StreamSocket(stream, peer.address, peer.port, request.method, limits.stallTimeout, reset, closed);
  serve(socket as unknown as Socket, peer.secure, '2.0');
  socket.feed(Buffer.from(request.head, 'latin1'));
  if (body) socket.pipeBody(request.chunked);
  return true;
}
