/**
 * One HTTP/2 stream through the gateway's chain (docs/http2.md): its request is written again as HTTP/1.1
 * over an in-process socket pair (lib/embed/pair.ts) into the transport, as the embedding handler does
 * (lib/embed/handler.ts), so routing, CORS, authentication, subscriptions, throttling, mediation, faults
 * and the access log are the HTTP/1.1 path's own code; the pair's connection names the client's version
 * "2.0" (Transport.handleConnection). Bodies stream both ways with backpressure: the stream is read only
 * as fast as the pair takes its bytes (so flow-control windows open only as the backend reads), and a
 * response waits for the stream's window ('drain') before the pair is read again.
 *
 * Field translation (RFC 9113 §8.3 and §8.2.3): :method and :path make the request line, :authority the
 * Host field when there is none, cookie fields are joined with "; "; the response's hop-by-hop fields
 * (RFC 9110 §7.6.1) are not copied, and names are sent in lower case (RFC 9113 §8.2.2).
 */
import * as http from 'node:http';
import * as http2 from 'node:http2';
import type { Socket } from 'node:net';
import { socketPair } from '../embed/pair';
import { endToEnd } from '../embed/handler';

/** What a stream needs of the gateway: a way to serve one in-process connection. */
export type StreamServe = (socket: Socket, secure: boolean, clientVersion: string) => void;

const { NGHTTP2_CANCEL, NGHTTP2_ENHANCE_YOUR_CALM, NGHTTP2_INTERNAL_ERROR, NGHTTP2_PROTOCOL_ERROR } = http2.constants;

/** Streams the gateway reset itself (the rapid-reset count, index.ts, counts only the client's). */
export const resetByGateway = new WeakSet<http2.ServerHttp2Stream>();
function reset(stream: http2.ServerHttp2Stream, code: number): void {
  resetByGateway.add(stream);
  stream.close(code);
}

/** Flat HTTP/1.1 fields of an HTTP/2 request's raw pairs: no pseudo-fields, cookies joined, Host from :authority. */
export function requestFields(raw: readonly string[]): { method: string; path: string; fields: string[] } {
  let method = 'GET';
  let path: string | undefined;
  let authority: string | undefined;
  let host = false;
  let cookies: string[] | undefined;
  const fields: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    const value = raw[i + 1] as string;
    if (name.charCodeAt(0) === 0x3a) {
      if (name === ':method') method = value;
      else if (name === ':path') path = value;
      else if (name === ':authority') authority = value;
      continue;
    }
    if (name === 'cookie') (cookies ??= []).push(value);
    // TE: only "trailers" is allowed in HTTP/2 (RFC 9113 §8.2.2); hop-by-hop toward HTTP/1.1.
    else if (name === 'te') continue;
    else {
      if (name === 'host') host = true;
      fields.push(name, value);
    }
  }
  if (!host && authority !== undefined) fields.unshift('host', authority);
  if (cookies !== undefined) fields.push('cookie', cookies.join('; '));
  // CONNECT has no :path (RFC 9113 §8.5): the transport refuses CONNECT by its request-target.
  return { method, path: path ?? authority ?? '/', fields };
}

/** The response fields for stream.respond(): end-to-end only, lower case, repeated ones joined (set-cookie kept apart). */
export function responseFields(status: number, raw: readonly string[]): http2.OutgoingHttpHeaders {
  const out: Record<string, string | string[] | number> = { ':status': status };
  const kept = endToEnd(raw);
  for (let i = 0; i < kept.length; i += 2) {
    const name = (kept[i] as string).toLowerCase();
    const value = kept[i + 1] as string;
    const had = out[name];
    if (had === undefined) out[name] = name === 'set-cookie' ? [value] : value;
    else if (Array.isArray(had)) had.push(value);
    else out[name] = `${had as string}, ${value}`;
  }
  return out;
}

export interface StreamLimits {
  /** stall_timeout: ms a response may wait for the client's window before the stream is reset. */
  readonly stallTimeout: number;
  /** max_header_list_size: decoded bytes of a request's fields (RFC 9113 §6.5.2). */
  readonly maxHeaderListSize: number;
}

/** Serves one stream: its request over a fresh pair into `serve`, the answer copied back. */
export function serveStream(
  stream: http2.ServerHttp2Stream,
  raw: readonly string[],
  serve: StreamServe,
  limits: StreamLimits,
  peer: { address: string; port: number; secure: boolean },
): void {
  // The decoded list's size as SETTINGS_MAX_HEADER_LIST_SIZE counts it (RFC 9113 §6.5.2): an HPACK bomb
  // sends few bytes that index one large field many times.
  // A reset stream reports its own code as an error; the session's defences have counted what matters.
  stream.on('error', () => undefined);
  let size = 0;
  for (let i = 0; i < raw.length; i++) size += (raw[i] as string).length + (i % 2 === 0 ? 32 : 0);
  if (size > limits.maxHeaderListSize) {
    reset(stream, NGHTTP2_ENHANCE_YOUR_CALM);
    return;
  }
  const { method, path, fields } = requestFields(raw);
  const [client, server] = socketPair({ remoteAddress: peer.address, remotePort: peer.port });
  let out: http.ClientRequest;
  try {
    out = http.request({
      method,
      path,
      headers: fields as unknown as http.OutgoingHttpHeaders,
      setHost: false,
      createConnection: () => client as unknown as Socket,
    });
  } catch {
    // node:http refuses a target or field it cannot write (nghttp2 checked the fields' bytes already).
    client.destroy();
    reset(stream, NGHTTP2_PROTOCOL_ERROR);
    return;
  }
  let stall: NodeJS.Timeout | undefined;
  const done = (): void => {
    if (stall !== undefined) clearTimeout(stall);
    stall = undefined;
    client.destroy();
    // A close, not only a FIN: the transport keeps answering a half-closed client (allowHalfOpen), and a
    // reset stream has no one to answer.
    server.destroy();
  };
  out.once('error', () => {
    done();
    if (!stream.destroyed) reset(stream, NGHTTP2_INTERNAL_ERROR);
  });
  out.once('response', (gw) => {
    if (stream.destroyed || stream.closed) {
      done();
      return;
    }
    const status = gw.statusCode ?? 502;
    const noBody = method === 'HEAD' || status === 204 || status === 304;
    try {
      stream.respond(responseFields(status, gw.rawHeaders), { endStream: noBody });
    } catch {
      done();
      reset(stream, NGHTTP2_INTERNAL_ERROR);
      return;
    }
    if (noBody) {
      gw.resume();
      gw.once('end', done);
      return;
    }
    gw.on('data', (chunk: Buffer) => {
      if (stream.write(chunk)) return;
      // The client's window is full: read the gateway again when it opens, or reset the stream when it
      // stays shut for stall_timeout (a zero-window stall holds the backend connection otherwise).
      gw.pause();
      stall ??= setTimeout(() => {
        stall = undefined;
        done();
        if (!stream.destroyed) reset(stream, NGHTTP2_CANCEL);
      }, limits.stallTimeout);
    });
    stream.on('drain', () => {
      if (stall !== undefined) clearTimeout(stall);
      stall = undefined;
      gw.resume();
    });
    gw.once('end', () => {
      if (!stream.destroyed) stream.end();
      done();
    });
    gw.once('error', () => {
      done();
      if (!stream.destroyed) reset(stream, NGHTTP2_INTERNAL_ERROR);
    });
  });
  // The client reset or closed the stream first: the in-process connection closes (the transport sees its client leave).
  stream.once('close', done);
  stream.once('error', done);
  serve(server as unknown as Socket, peer.secure, '2.0');
  if (stream.endAfterHeaders) out.end();
  else stream.pipe(out);
}
