/**
 * WebSocket APIs at the gateway (docs/websocket.md): the handshake is a call like any other, routed by
 * context and version through the whole phase chain (authentication and throttling apply to it), then
 * the transport tunnels the connection (lib/transport/tunnel.ts).
 *
 * Browsers cannot set an Authorization field on a WebSocket handshake, so a handshake may carry its
 * bearer token as the `access_token` query parameter (RFC 6750 §2.3). It becomes an
 * `Authorization: Bearer` field before the chain runs, and leaves the request target, so it reaches
 * neither the backend nor the access log. A handshake that already has an Authorization field keeps it.
 */
import type { SourceRequest } from '../transport/types';

/** Upgrade: websocket (RFC 6455 §4.1: the field value is case-insensitive). */
export function isWebSocketHandshake(req: SourceRequest): boolean {
  if (req.upgrade !== true) return false;
  const h = req.headers;
  for (let i = 0; i < h.length; i += 2) {
    if (
      (h[i] as string).length === 7 &&
      (h[i] as string).toLowerCase() === 'upgrade' &&
      (h[i + 1] as string)
        .toLowerCase()
        .split(',')
        .some((v) => v.trim() === 'websocket')
    )
      return true;
  }
  return false;
}

const TOKEN_PARAM = /(^|&)access_token=([^&]*)/;

/**
 * The handshake as the chain should see it: `access_token` moved into an Authorization field. The
 * transport's request object owns writable url and headers fields: they are replaced (new values, the
 * old arrays untouched), so logs and the backend see the target without the token; any other
 * SourceRequest is wrapped instead.
 */
export function handshakeRequest(req: SourceRequest): SourceRequest {
  const q = req.url.indexOf('?');
  if (q < 0) return req;
  const query = req.url.slice(q + 1);
  const m = TOKEN_PARAM.exec(query);
  if (m === null) return req;
  const h = req.headers;
  for (let i = 0; i < h.length; i += 2) if ((h[i] as string).toLowerCase() === 'authorization') return req;
  let token: string;
  try {
    token = decodeURIComponent(m[2] as string);
  } catch {
    return req;
  }
  const rest = (query.slice(0, m.index) + query.slice(m.index + m[0].length)).replace(/^&/, '');
  const url = req.url.slice(0, q) + (rest === '' ? '' : '?' + rest);
  const headers = [...h, 'Authorization', `Bearer ${token}`];
  const d = Object.getOwnPropertyDescriptor(req, 'url');
  if (d?.writable === true && Object.getOwnPropertyDescriptor(req, 'headers')?.writable === true) {
    const w = req as { url: string; headers: readonly string[] };
    w.url = url;
    w.headers = headers;
    return req;
  }
  return Object.create(req, { url: { value: url }, headers: { value: headers } }) as SourceRequest;
}
