/**
 * The `(req, res)` handler for node:http, Express and Fastify apps: the slower path (docs/embedding.md).
 *
 * node:http has already parsed the request (and de-chunked its body), so the raw bytes the transport
 * wants are gone. The handler writes the request again over an in-process socket pair (pair.ts) into the
 * transport, then copies the response onto `res`, streaming both bodies with backpressure. Per request
 * that is a second HTTP serialisation and parse on each side, which is why mounting sockets
 * (handleConnection) is the fast path; this one suits an app whose server is already node:http.
 *
 * Hop-by-hop fields (RFC 9110 §7.6.1) are not copied either way: node:http frames `res` itself.
 */
import * as http from 'node:http';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { GatewayOwnCode } from '../faults';
import type { ConnectionHandler } from './inject';
import { socketPair } from './pair';

/** Hop-by-hop fields (RFC 9110 §7.6.1), with Proxy-Connection and Keep-Alive of HTTP/1.0 practice. */
export const HOP_BY_HOP: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
]);

/** Flat raw pairs without hop-by-hop fields and without those the Connection field names. */
export function endToEnd(raw: readonly string[]): string[] {
  let named: Set<string> | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    if ((raw[i] as string).toLowerCase() !== 'connection') continue;
    named ??= new Set();
    for (const n of (raw[i + 1] as string).split(',')) named.add(n.trim().toLowerCase());
  }
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const lower = (raw[i] as string).toLowerCase();
    if (HOP_BY_HOP.has(lower) || named?.has(lower) === true) continue;
    out.push(raw[i] as string, raw[i + 1] as string);
  }
  return out;
}

/** Answers one of the handler's own faults (103141, 103143) on `res`, rendered like every fault. */
export type FaultAnswer = (
  res: http.ServerResponse,
  req: http.IncomingMessage,
  code: typeof GatewayOwnCode.EMBEDDED_RESPONSE_INCOMPLETE | typeof GatewayOwnCode.EMBEDDED_BODY_CONSUMED,
) => void;

/** A body parser (express.json(), Fastify's content parsers) read the body before the gateway could. */
function bodyConsumed(req: http.IncomingMessage): boolean {
  if (!req.readableEnded) return false;
  const length = req.headers['content-length'];
  return (length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined;
}

export function requestListener(
  serve: ConnectionHandler,
  answerFault: FaultAnswer,
): (req: http.IncomingMessage, res: http.ServerResponse) => void {
  return (req, res) => {
    if (bodyConsumed(req)) {
      // Forwarding the head without its body would leave the backend waiting for bytes that never come.
      answerFault(res, req, GatewayOwnCode.EMBEDDED_BODY_CONSUMED);
      return;
    }
    const socket = req.socket as Socket | undefined;
    const [client, server] = socketPair({ remoteAddress: socket?.remoteAddress ?? '127.0.0.1', remotePort: socket?.remotePort ?? 0 });
    const out = http.request({
      method: req.method,
      // Express strips a mount path from req.url and keeps the request's own in originalUrl.
      path: (req as { originalUrl?: string }).originalUrl ?? req.url,
      // The body is re-framed by node:http's client: Content-Length kept, chunked when it was chunked.
      headers: endToEnd(req.rawHeaders) as unknown as http.OutgoingHttpHeaders,
      setHost: false,
      createConnection: () => client as unknown as Socket,
    });
    let answered = false;
    const fail = (): void => {
      if (answered) return;
      answered = true;
      if (!res.headersSent) answerFault(res, req, GatewayOwnCode.EMBEDDED_RESPONSE_INCOMPLETE);
      else res.destroy();
    };
    out.once('error', fail);
    out.once('response', (gw) => {
      answered = true;
      res.writeHead(gw.statusCode ?? 502, gw.statusMessage, endToEnd(gw.rawHeaders) as unknown as http.OutgoingHttpHeaders);
      gw.pipe(res);
      gw.once('error', () => res.destroy());
      gw.once('end', () => client.destroy());
    });
    // The app's client went away: so does the in-process connection (the transport sees the close).
    res.once('close', () => {
      if (!res.writableFinished) client.destroy();
    });
    serve(server as unknown as Socket, (socket as TLSSocket | undefined)?.encrypted === true);
    req.pipe(out);
  };
}
