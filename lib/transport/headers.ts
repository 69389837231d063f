/**
 * Outgoing heads, built straight from the parsed header arrays as one latin1 string (one write per head).
 *
 * Names and values are forwarded byte for byte, case kept. Removed: the hop-by-hop fields of RFC 9110
 * §7.6.1 (Connection and every name it lists, Proxy-Connection, Keep-Alive, TE, Upgrade), and
 * Proxy-Authorization and Proxy-Authenticate, which belong to the proxy that asks for them (RFC 9110
 * §11.7). Transfer-Encoding is hop-by-hop too, but throughway relays message framing verbatim (chunked
 * bodies are not re-framed: cheaper, and the strict parser has already validated them), so the field that
 * describes that framing is kept: a request's must be exactly one `chunked` (request-checks.ts), a
 * response's goes out as one field without `identity` (repeated fields combined, RFC 9110 §5.3); it is
 * dropped when a chunked response is de-chunked for an HTTP/1.0 client (RFC 9112 §7.1).
 */
import type { TransportSettings } from './settings';

const enum Kind {
  OTHER = 0,
  DROP = 1, // hop-by-hop: Keep-Alive, Proxy-Connection, TE, Upgrade
  CONNECTION = 2,
  HOST = 3,
  TRANSFER_ENCODING = 4,
  USER_AGENT = 5,
  SERVER = 6,
  VIA = 7,
  X_FORWARDED_FOR = 8,
  X_FORWARDED_PROTO = 9,
  X_FORWARDED_HOST = 10,
  /** Forwarded (RFC 7239) and X-Real-IP: kept only from a trusted proxy. */
  FORWARDED = 11,
}

/**
 * Whether `name` equals `lower` (lower-case ASCII) ignoring ASCII case, without the new string
 * toLowerCase() makes of a name with capitals ("Host", "Date", "Connection": most fields on the wire).
 */
export function sameLower(name: string, lower: string): boolean {
  const n = lower.length;
  if (name.length !== n) return false;
  for (let i = 0; i < n; i++) {
    const c = name.charCodeAt(i);
    // 0x41-0x5a: A-Z; OR-ing 0x20 maps them to a-z and leaves the lower-case letters as they are.
    if (c !== lower.charCodeAt(i) && !(c >= 0x41 && c <= 0x5a && (c | 0x20) === lower.charCodeAt(i))) return false;
  }
  return true;
}

/** Classifies a field name without allocating (length first, then a case-insensitive compare). */
function classify(name: string): Kind {
  switch (name.length) {
    case 2:
      return sameLower(name, 'te') ? Kind.DROP : Kind.OTHER;
    case 3:
      return sameLower(name, 'via') ? Kind.VIA : Kind.OTHER;
    case 4:
      return sameLower(name, 'host') ? Kind.HOST : Kind.OTHER;
    case 6:
      return sameLower(name, 'server') ? Kind.SERVER : Kind.OTHER;
    case 7:
      return sameLower(name, 'upgrade') ? Kind.DROP : Kind.OTHER;
    case 9:
      return sameLower(name, 'forwarded') || sameLower(name, 'x-real-ip') ? Kind.FORWARDED : Kind.OTHER;
    case 10:
      if (sameLower(name, 'connection')) return Kind.CONNECTION;
      if (sameLower(name, 'keep-alive')) return Kind.DROP;
      if (sameLower(name, 'user-agent')) return Kind.USER_AGENT;
      return Kind.OTHER;
    case 15:
      return sameLower(name, 'x-forwarded-for') ? Kind.X_FORWARDED_FOR : Kind.OTHER;
    case 16:
      if (sameLower(name, 'proxy-connection')) return Kind.DROP;
      if (sameLower(name, 'x-forwarded-host')) return Kind.X_FORWARDED_HOST;
      return Kind.OTHER;
    case 17:
      if (sameLower(name, 'transfer-encoding')) return Kind.TRANSFER_ENCODING;
      if (sameLower(name, 'x-forwarded-proto')) return Kind.X_FORWARDED_PROTO;
      return Kind.OTHER;
    case 18:
      return sameLower(name, 'proxy-authenticate') ? Kind.DROP : Kind.OTHER;
    case 19:
      return sameLower(name, 'proxy-authorization') ? Kind.DROP : Kind.OTHER;
    default:
      return Kind.OTHER;
  }
}

/**
 * The names a Connection field's value lists beyond the usual options (close, keep-alive, upgrade, in any
 * letter case), lower-cased and added to `listed`; `listed` as it was when there are none. Allocates only
 * in that rare case.
 */
function listedNames(value: string, listed: string[] | undefined): string[] | undefined {
  if (sameLower(value, 'keep-alive') || sameLower(value, 'close') || sameLower(value, 'upgrade')) return listed;
  for (const token of value.toLowerCase().split(',')) {
    const t = token.trim();
    if (t === '' || t === 'close' || t === 'keep-alive' || t === 'upgrade') continue;
    (listed ??= []).push(t);
  }
  return listed;
}

/**
 * Extra names the Connection fields list (RFC 9110 §7.6.1: they are hop-by-hop too), or undefined when
 * they list only the usual options. The head builders read the fields once and call this, then start
 * over, only when a Connection field lists more (listedNames): a prior pass over every field for the rare
 * listed names cost about 350 instructions per head under callgrind (docs/performance.md, "Counting
 * instructions").
 */
function connectionListed(headers: readonly string[]): string[] | undefined {
  let listed: string[] | undefined;
  for (let i = 0; i < headers.length; i += 2) {
    if (sameLower(headers[i] as string, 'connection')) listed = listedNames(headers[i + 1] as string, listed);
  }
  return listed;
}

function isListed(listed: string[] | undefined, name: string): boolean {
  return listed !== undefined && listed.includes(name.toLowerCase());
}

function preserved(settings: TransportSettings, lowerName: string): boolean {
  return settings.preserveHeaders.length !== 0 && settings.preserveHeaders.includes(lowerName);
}

/**
 * Whether 'http.headers.preserve' names Host, User-Agent and Server, the three fields every head asks
 * about: read from the list once and kept until a head is built with another list (the settings are
 * frozen, settings.ts). Three `includes()` per exchange on the default list (['content-type']) cost
 * about 120 instructions under callgrind (docs/performance.md, "Counting instructions").
 */
interface PreservedFields {
  readonly list: readonly string[];
  readonly host: boolean;
  readonly userAgent: boolean;
  readonly server: boolean;
}

function preservedFieldsOf(list: readonly string[]): PreservedFields {
  return { list, host: list.includes('host'), userAgent: list.includes('user-agent'), server: list.includes('server') };
}

let lastPreserved: PreservedFields = preservedFieldsOf([]);

function preservedFields(settings: TransportSettings): PreservedFields {
  const list = settings.preserveHeaders;
  if (list !== lastPreserved.list) lastPreserved = preservedFieldsOf(list);
  return lastPreserved;
}

export interface RequestHeadInput {
  readonly method: string;
  /** The request target sent to the backend (origin-form). */
  readonly path: string;
  readonly headers: readonly string[];
  /** Host header value for the backend ("host" or "host:port"). */
  readonly hostHeader: string;
  /** The peer's address (the socket's), appended to X-Forwarded-For. */
  readonly remoteAddress: string;
  /** The peer is one of [throughway] trusted_proxies: its forwarding fields are kept. */
  readonly trustedPeer?: boolean;
  readonly proto: 'http' | 'https';
  /** Ask the backend to close after this exchange (disable_connection_keepalive). */
  readonly close: boolean;
  /** A WebSocket handshake: the protocol to ask for (Upgrade and Connection: Upgrade are then sent). */
  readonly upgrade?: string;
  /** Whole field lines added last (Proxy-Authorization toward an HTTP proxy). */
  readonly extraLines?: string;
}

/** The request head for the backend: always HTTP/1.1 (RFC 9110 §2.5: a proxy sends its own version). */
export function buildRequestHead(input: RequestHeadInput, settings: TransportSettings): string {
  return requestHead(input, settings, undefined);
}

/** buildRequestHead, with the names the Connection fields list once a first pass found some (connectionListed). */
function requestHead(input: RequestHeadInput, settings: TransportSettings, listed: string[] | undefined): string {
  const headers = input.headers;
  const keep = preservedFields(settings);
  const keepHost = keep.host;
  const keepUserAgent = settings.preserveUserAgent || keep.userAgent;
  let head = input.method + ' ' + input.path + ' HTTP/1.1\r\n';
  let clientHost: string | undefined;
  let via: string | undefined;
  let xff: string | undefined;
  let hostWritten = false;
  const trusted = input.trustedPeer === true;
  let protoKept = false;
  let forwardedHostKept = false;
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i] as string;
    const value = headers[i + 1] as string;
    switch (classify(name)) {
      case Kind.OTHER:
      case Kind.TRANSFER_ENCODING:
        if (listed === undefined || !isListed(listed, name)) head += name + ': ' + value + '\r\n';
        break;
      case Kind.HOST:
        clientHost = value;
        if (keepHost && !hostWritten) {
          head += name + ': ' + value + '\r\n';
          hostWritten = true;
        }
        break;
      case Kind.USER_AGENT:
        if (keepUserAgent) head += name + ': ' + value + '\r\n';
        break;
      case Kind.VIA:
        via = via === undefined ? value : via + ', ' + value;
        break;
      case Kind.X_FORWARDED_FOR:
        // From an untrusted peer the list is replaced by the peer's address: appending would let a client
        // write the addresses a backend believes (docs/security.md, "Trusted proxies").
        if (trusted) xff = xff === undefined ? value : xff + ', ' + value;
        break;
      case Kind.X_FORWARDED_PROTO:
      case Kind.X_FORWARDED_HOST:
        // Kept from a trusted proxy (it saw the client) or when listed in 'http.headers.preserve';
        // otherwise the gateway's own value replaces it (a client cannot forge it).
        if (trusted || preserved(settings, name.toLowerCase())) {
          head += name + ': ' + value + '\r\n';
          if (name.length === 17) protoKept = true;
          else forwardedHostKept = true;
        }
        break;
      case Kind.FORWARDED:
        if (trusted) head += name + ': ' + value + '\r\n';
        break;
      case Kind.CONNECTION:
        // Hop-by-hop (RFC 9110 §7.6.1), and so is every field it names: fields already written may be among them.
        if (listed === undefined && listedNames(value, undefined) !== undefined) return requestHead(input, settings, connectionListed(headers));
        break;
      default:
        // DROP: hop-by-hop (RFC 9110 §7.6.1)
        break;
    }
  }
  if (!hostWritten) head += 'Host: ' + input.hostHeader + '\r\n';
  if (!keepUserAgent) head += 'User-Agent: ' + settings.productToken + '\r\n';
  if (settings.xForwarded) {
    head += 'X-Forwarded-For: ' + (xff === undefined ? input.remoteAddress : xff + ', ' + input.remoteAddress) + '\r\n';
    if (!protoKept) head += 'X-Forwarded-Proto: ' + input.proto + '\r\n';
    if (clientHost !== undefined && !forwardedHostKept) head += 'X-Forwarded-Host: ' + clientHost + '\r\n';
  } else if (xff !== undefined) {
    head += 'X-Forwarded-For: ' + xff + '\r\n';
  }
  if (settings.via !== '') head += 'Via: ' + (via === undefined ? settings.via : via + ', ' + settings.via) + '\r\n';
  else if (via !== undefined) head += 'Via: ' + via + '\r\n';
  if (input.extraLines !== undefined) head += input.extraLines;
  if (input.upgrade !== undefined) return head + 'Connection: Upgrade\r\nUpgrade: ' + input.upgrade + '\r\n\r\n';
  head += input.close ? 'Connection: close\r\n\r\n' : 'Connection: keep-alive\r\n\r\n';
  return head;
}

/**
 * A second result of buildResponseHead, written into an object the caller owns and reuses (no object per
 * response): the seconds of a `Keep-Alive: timeout=N` field of the backend's head, or -1.
 */
export interface ResponseHeadOut {
  keepAliveTimeout: number;
}

export interface ResponseHeadInput {
  readonly statusCode: number;
  readonly statusText: string;
  readonly headers: readonly string[];
  /** What to tell the client: 'keep-alive' (HTTP/1.0 keep-alive), 'close', or '' (HTTP/1.1 default). */
  readonly connection: '' | 'keep-alive' | 'close' | 'upgrade';
  /** Drop Transfer-Encoding: the body is de-chunked for an HTTP/1.0 client. */
  readonly dechunk: boolean;
  /** Extra fields from the gateway (CORS, ...), flat name/value pairs; may be empty. */
  readonly extra: readonly string[];
}

/** The response head for the client. Also records Keep-Alive: timeout=N in out.keepAliveTimeout (when given). */
export function buildResponseHead(input: ResponseHeadInput, settings: TransportSettings, out?: ResponseHeadOut): string {
  return responseHead(input, settings, out, undefined);
}

/** buildResponseHead, with the names the Connection fields list once a first pass found some (connectionListed). */
function responseHead(input: ResponseHeadInput, settings: TransportSettings, out: ResponseHeadOut | undefined, listed: string[] | undefined): string {
  const headers = input.headers;
  let keepAliveTimeout = -1;
  let head = 'HTTP/1.1 ' + input.statusCode + ' ' + input.statusText + '\r\n';
  let via: string | undefined;
  let serverSeen = false;
  let teWritten = false;
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i] as string;
    const value = headers[i + 1] as string;
    switch (classify(name)) {
      case Kind.OTHER:
      case Kind.HOST:
      case Kind.USER_AGENT:
      case Kind.X_FORWARDED_FOR:
      case Kind.X_FORWARDED_PROTO:
      case Kind.X_FORWARDED_HOST:
      case Kind.FORWARDED:
        if (listed === undefined || !isListed(listed, name)) head += name + ': ' + value + '\r\n';
        break;
      case Kind.TRANSFER_ENCODING:
        if (input.dechunk || teWritten) break;
        teWritten = true;
        if (isChunked(value) && !laterTransferEncoding(headers, i + 2)) head += name + ': ' + value + '\r\n';
        else {
          const codings = combinedCodings(headers, i);
          if (codings !== '') head += name + ': ' + codings + '\r\n';
        }
        break;
      case Kind.SERVER:
        serverSeen = true;
        if (settings.preserveServer || preservedFields(settings).server) head += name + ': ' + value + '\r\n';
        break;
      case Kind.VIA:
        via = via === undefined ? value : via + ', ' + value;
        break;
      case Kind.DROP:
        if (name.length === 10) keepAliveTimeout = keepAliveSeconds(value);
        break;
      case Kind.CONNECTION:
        // As in requestHead: the fields it names are dropped too, written ones included.
        if (listed === undefined && listedNames(value, undefined) !== undefined) return responseHead(input, settings, out, connectionListed(headers));
        break;
      default:
        break;
    }
  }
  if (serverSeen && !settings.preserveServer && !preservedFields(settings).server) head += 'Server: ' + settings.productToken + '\r\n';
  if (settings.via !== '') head += 'Via: ' + (via === undefined ? settings.via : via + ', ' + settings.via) + '\r\n';
  else if (via !== undefined) head += 'Via: ' + via + '\r\n';
  if (out !== undefined) out.keepAliveTimeout = keepAliveTimeout;
  const extra = input.extra;
  for (let i = 0; i < extra.length; i += 2) {
    const name = extra[i] as string;
    // Framing is the transport's alone: a field a router adds can never frame the message twice.
    if (classify(name) !== Kind.OTHER || sameLower(name, 'content-length')) continue;
    head += name + ': ' + extra[i + 1] + '\r\n';
  }
  if (input.connection === 'upgrade') {
    // 101 to a WebSocket handshake (RFC 6455 §4.2.2): the two hop-by-hop fields the switch needs.
    head += 'Upgrade: websocket\r\nConnection: Upgrade\r\n';
  } else if (input.connection !== '') {
    head += 'Connection: ' + input.connection + '\r\n';
  }
  return head + '\r\n';
}

/**
 * The value of the first field named `lower` (lower-case) in a raw [name, value, ...] array, or undefined
 * (names compared by sameLower: no allocation).
 */
export function headerValue(headers: readonly string[], lower: string): string | undefined {
  for (let i = 0; i < headers.length; i += 2) {
    if (sameLower(headers[i] as string, lower)) return headers[i + 1];
  }
  return undefined;
}

/** The value is exactly the one coding `chunked` (case-insensitive, optional whitespace around it). */
export function isChunked(value: string): boolean {
  if (value.length === 7) return value === 'chunked' || value.toLowerCase() === 'chunked';
  return value.trim().toLowerCase() === 'chunked';
}

function laterTransferEncoding(headers: readonly string[], from: number): boolean {
  for (let i = from; i < headers.length; i += 2) {
    if (sameLower(headers[i] as string, 'transfer-encoding')) return true;
  }
  return false;
}

/**
 * Every Transfer-Encoding field from `from` on as one list (RFC 9110 §5.3), without `identity` (RFC 9112
 * §7 registers no such coding any more). The rare path: a response with more than a lone `chunked`.
 */
function combinedCodings(headers: readonly string[], from: number): string {
  const codings: string[] = [];
  for (let i = from; i < headers.length; i += 2) {
    const name = headers[i] as string;
    if (!sameLower(name, 'transfer-encoding')) continue;
    for (const token of (headers[i + 1] as string).split(',')) {
      const c = token.trim();
      if (c !== '' && c.toLowerCase() !== 'identity') codings.push(c);
    }
  }
  return codings.join(', ');
}

/** The last Keep-Alive value parsed and its result: a backend sends the same value on every response. */
let lastKeepAlive = '';
let lastKeepAliveSeconds = -1;

/** RFC 2068 §19.7.1.1 Keep-Alive parameters: "timeout=5, max=100" -> 5. */
function keepAliveSeconds(value: string): number {
  if (value === lastKeepAlive) return lastKeepAliveSeconds;
  const i = value.toLowerCase().indexOf('timeout=');
  let n = i < 0 ? -1 : parseInt(value.slice(i + 8), 10);
  if (!Number.isFinite(n) || n < 0) n = -1;
  lastKeepAlive = value;
  lastKeepAliveSeconds = n;
  return n;
}

/** A head for a response the gateway makes itself (faults, preflight answers). */
export function buildLocalHead(statusCode: number, statusText: string, headers: readonly string[], bodyLength: number, close: boolean): string {
  let head = 'HTTP/1.1 ' + statusCode + ' ' + statusText + '\r\n';
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i] as string;
    // Framing and connection fields are the transport's: a router's (or a request field a gateway echoes)
    // would contradict the Content-Length and Connection written below (RFC 9112 §6.3, RFC 9110 §7.6.1).
    const kind = classify(name);
    if (kind === Kind.TRANSFER_ENCODING || kind === Kind.CONNECTION || kind === Kind.DROP) continue;
    if (sameLower(name, 'content-length')) continue;
    head += name + ': ' + headers[i + 1] + '\r\n';
  }
  head += 'Content-Length: ' + bodyLength + '\r\n';
  if (close) head += 'Connection: close\r\n';
  return head + '\r\n';
}

/**
 * The request fields for a body the router supplies (ForwardDecision.body): the client's framing fields
 * (Content-Length, Transfer-Encoding) and Expect (the gateway already has the body) are dropped and one
 * Content-Length for the new body added (RFC 9112 §6.2, §6.3). A new array; the input is not edited.
 */
export function withBodyLength(headers: readonly string[], length: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i] as string;
    if (sameLower(name, 'content-length') || sameLower(name, 'transfer-encoding') || sameLower(name, 'expect')) continue;
    out.push(name, headers[i + 1] as string);
  }
  out.push('Content-Length', String(length));
  return out;
}

/** Whether the request asks for 100 Continue before sending its body (RFC 9110 §10.1.1). */
export function expectsContinue(headers: readonly string[]): boolean {
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i] as string;
    if (sameLower(name, 'expect') && (headers[i + 1] as string).trim().toLowerCase() === '100-continue') return true;
  }
  return false;
}
