/**
 * handleUpgrade(req, socket, head) for a node:http server's 'upgrade' event.
 *
 * node:http has parsed the upgrade request and detached from the socket; `head` holds what the client sent
 * after it (the first tunnel bytes). The request head is written again, byte for byte as far as node:http
 * keeps it (rawHeaders: original case and order), and put back in front of the socket's stream together
 * with `head`, so the transport (which tunnels upgrades: Transport.tunnelsUpgrades) reads the exchange as if
 * it had accepted the socket: a WebSocket handshake to a WS API becomes a tunnel (docs/websocket.md), any
 * other upgrade is forwarded without its Upgrade field (hop-by-hop, RFC 9110 §7.8) as a plain call.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';

/** The request head as node:http received it (HTTP/1.1 framing, RFC 9112 §2.1). */
export function requestHead(req: IncomingMessage): Buffer {
  let head = `${req.method ?? 'GET'} ${req.url ?? '/'} HTTP/${req.httpVersion}\r\n`;
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) head += `${raw[i]}: ${raw[i + 1]}\r\n`;
  return Buffer.from(head + '\r\n', 'latin1');
}

/** Puts the request head and the bytes after it back in front of the socket's readable side. */
export function replay(req: IncomingMessage, socket: Duplex, head: Buffer | undefined): void {
  const again = head !== undefined && head.length > 0 ? Buffer.concat([requestHead(req), head]) : requestHead(req);
  socket.unshift(again);
}

/** Writes a complete response on a socket node:http no longer manages, then closes it. */
export function answerOnSocket(
  socket: Duplex,
  status: number,
  statusText: string,
  headers: readonly string[],
  body: string | Buffer | undefined,
): void {
  const bytes = body === undefined ? Buffer.alloc(0) : typeof body === 'string' ? Buffer.from(body) : body;
  let head = `HTTP/1.1 ${status} ${statusText}\r\n`;
  for (let i = 0; i < headers.length; i += 2) head += `${headers[i]}: ${headers[i + 1]}\r\n`;
  head += `Content-Length: ${bytes.length}\r\nConnection: close\r\n\r\n`;
  // An error after node:http let go of the socket would otherwise be unhandled.
  socket.on('error', () => socket.destroy());
  socket.end(Buffer.concat([Buffer.from(head, 'latin1'), bytes]));
}
