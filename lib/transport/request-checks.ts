/**
 * Checks of a parsed request head before it is routed, and the request target for the backend.
 * Module functions over the source connection (source.ts).
 */
import { makeFault, type TransportFault } from './codes';
import { isChunked, sameLower } from './headers';
import type { Exchange } from './exchange';
import type { ProtocolState } from './states';

/** What the checks use of the source connection. */
export interface RequestChecker {
  readonly state: ProtocolState;
  /** Answer the exchange with a fault; `mustClose`: the rest of the request will not be read. */
  answerFault(ex: Exchange, fault: TransportFault, mustClose: boolean): void;
}

/**
 * What strict llhttp still lets through (RFC 9112 §3.2, §2.3), and what the transport refuses to forward.
 * Returns true when the exchange was answered with a fault (the connection closes).
 */
export function refuseRequest(conn: RequestChecker, ex: Exchange, maxRequestBody: number): boolean {
  // A 1.1 request needs exactly one Host (two could route differently at the gateway and at the
  // backend), and only 1.x is spoken here.
  if (ex.versionMajor !== 1) {
    conn.answerFault(ex, makeFault('version_not_supported', conn.state, false, `HTTP/${ex.versionMajor}.${ex.versionMinor}`), true);
    return true;
  }
  if (ex.method === 'CONNECT') {
    // RFC 9110 §9.3.6: CONNECT asks for a tunnel. The pass-through listener relays HTTP exchanges; a
    // CONNECT forwarded as one would hand the backend a request it was never routed for.
    conn.answerFault(ex, makeFault('connect_method', conn.state, false, ex.url), true);
    return true;
  }
  // RFC 9112 §3.2: a client sends no fragment; a '#' the strict parser let through could route one way at
  // the gateway and another at a backend that cuts the target there.
  if (ex.url.indexOf('#') !== -1) {
    conn.answerFault(ex, makeFault('fragment', conn.state, false), true);
    return true;
  }
  const fields = countFields(ex.headers);
  const moreHosts = (fields & HOST_MORE) !== 0;
  if (moreHosts || ((fields & HOST_ONE) === 0 && ex.versionMinor === 1)) {
    conn.answerFault(ex, makeFault('client_protocol', conn.state, false, moreHosts ? 'more than one Host field' : 'no Host field'), true);
    return true;
  }
  if ((fields & TE_SEEN) !== 0 && ex.versionMinor === 0) {
    // RFC 9112 §6.1: an HTTP/1.0 message with Transfer-Encoding MUST be treated as having faulty framing,
    // and the connection closed after it. HTTP/1.0 has no chunked coding, so a 1.0 hop before the gateway
    // may have read the body otherwise: 400 and close, nothing forwarded.
    conn.answerFault(ex, makeFault('client_protocol', conn.state, false, 'Transfer-Encoding in an HTTP/1.0 request'), true);
    return true;
  }
  if ((fields & TE_BAD) !== 0) {
    // Only one Transfer-Encoding field whose value is exactly `chunked`: `identity`, a list of codings or
    // repeated fields are relayed differently by backends that do not combine them (RFC 9112 §6.1, §11.2).
    conn.answerFault(ex, makeFault('te_refused', conn.state, false), true);
    return true;
  }
  if (maxRequestBody >= 0 && ex.contentLength > maxRequestBody) {
    conn.answerFault(ex, makeFault('body_too_large', conn.state), true);
    return true;
  }
  return false;
}

/** Bits of countFields: a Host field; more than one; a Transfer-Encoding field; one that is not a lone `chunked`. */
const HOST_ONE = 1;
const HOST_MORE = 2;
const TE_SEEN = 4;
const TE_BAD = 8;

/** One pass over the fields: Host count and whether Transfer-Encoding is anything but one `chunked`. */
function countFields(headers: readonly string[]): number {
  let n = 0;
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i] as string;
    if (sameLower(name, 'host')) {
      n |= (n & HOST_ONE) !== 0 ? HOST_MORE : HOST_ONE;
    } else if (sameLower(name, 'transfer-encoding')) {
      if ((n & TE_SEEN) !== 0 || !isChunked(headers[i + 1] as string)) n |= TE_BAD;
      n |= TE_SEEN;
    }
  }
  return n;
}

/**
 * The request target for the backend in origin-form: a client talking to an origin server sends only the
 * path and query (RFC 9112 §3.2.1). A client may send absolute-form, which a server must accept
 * (§3.2.2); forwarded as is, the backend would take the URI's authority over the Host the proxy sets.
 */
export function originForm(url: string): string {
  if (url.charCodeAt(0) === 0x2f /* '/' */) return url;
  const authority = ABSOLUTE_FORM.exec(url);
  if (authority === null) return url; // asterisk-form, authority-form
  const rest = url.slice(authority[0].length);
  return rest === '' || rest.charCodeAt(0) !== 0x2f ? '/' + rest : rest;
}
const ABSOLUTE_FORM = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i;
