/**
 * A request's route decision taken up (source.ts): the router called, a local answer or a forward; for a
 * forward the head toward the backend, a router's own body, an in-flight slot and a target connection
 * from the pool (core.ts, pool.ts), and the resend a response hook may ask for. Module functions over
 * the source connection, which answers the slot port (exchange.ts SlotPort) with them.
 */
import { makeFault, type TransportFault } from './codes';
import { ProtocolState as S, type ProtocolState } from './states';
import { breaksLine, breaksLines, buildRequestHead, sameFraming, withBodyLength, withFramingOf, type RequestTailHolder } from './headers';
import { discardBody, markReady, type Exchange, type ExchangeTarget } from './exchange';
import { endCollect } from './body';
import { originForm } from './request-checks';
import { answer, answerFault, type LocalAnswerer } from './local';
import { poolFor } from './pool';
import type { ForwardDecision, LocalResponse, RouteDecision } from './types';

/** What taking up a forward decision uses of the source connection. */
export interface Forwarder extends RequestTailHolder, LocalAnswerer {
  readonly state: ProtocolState;
  readonly remoteAddress: string;
  readonly trustedPeer: boolean;
  readonly secure: boolean;
  answerFault(ex: Exchange, fault: TransportFault, mustClose: boolean): void;
  /** The exchange holds an in-flight slot: get it a target connection. */
  startTarget(ex: Exchange): void;
  /** After an asynchronous step made the exchange ready: continue parsing its body. */
  unblockIfReady(ex: Exchange): void;
}

/** The router decides on a new exchange (at once, or by a promise). */
export function route(conn: Forwarder, ex: Exchange): void {
  let decision: RouteDecision | Promise<RouteDecision> | undefined;
  try {
    decision = conn.core.route(ex);
  } catch (err) {
    routeFailed(conn, ex, err);
    return;
  }
  if (decision === undefined) {
    answerFault(conn, ex, makeFault('no_route', conn.state), false);
  } else if (typeof (decision as Promise<RouteDecision>).then === 'function') {
    (decision as Promise<RouteDecision>).then(
      (d) => decided(conn, ex, d),
      (err: unknown) => routeFailed(conn, ex, err),
    );
  } else {
    apply(conn, ex, decision as RouteDecision);
  }
}

/** An asynchronous route decision arrived. */
function decided(conn: Forwarder, ex: Exchange, d: RouteDecision | undefined): void {
  if (ex.aborted || conn.ex !== ex) return;
  if (d === undefined) answerFault(conn, ex, makeFault('no_route', conn.state), false);
  else apply(conn, ex, d);
  conn.unblockIfReady(ex);
}

function routeFailed(conn: Forwarder, ex: Exchange, err: unknown): void {
  if (ex.aborted || conn.ex !== ex) return;
  conn.core.log.log('error', 'route_error', { connection: conn.id, error: err instanceof Error ? err.message : String(err) });
  answerFault(conn, ex, makeFault('processing', conn.state, false, 'router threw'), !ex.requestComplete);
  conn.unblockIfReady(ex);
}

function apply(conn: Forwarder, ex: Exchange, d: RouteDecision): void {
  if ((d as ForwardDecision).target !== undefined) forward(conn, ex, d as ForwardDecision);
  else answer(conn, ex, d as LocalResponse, false);
}

/** The exchange holds an in-flight slot: a target connection from the pool, or a wait for one. */
export function startTarget(conn: Forwarder, ex: Exchange): void {
  if (ex.aborted) return;
  const t = poolFor(conn.core, (ex.forward as ForwardDecision).target).acquire(ex, false);
  if (t !== undefined) {
    attachTarget(conn, ex, t);
    conn.unblockIfReady(ex);
  }
}

function attachTarget(conn: Forwarder, ex: Exchange, t: ExchangeTarget): void {
  const core = conn.core;
  if (ex.forwardedAt < 0) {
    ex.forwardedAt = core.stamp();
    const timeout = (ex.forward as ForwardDecision).timeout;
    if (timeout !== undefined && timeout > 0) ex.deadline = core.now + timeout;
    const global = core.settings.globalTimeout;
    if (global > 0) ex.responseDeadline = core.now + global;
  }
  t.attach(ex);
  // A router's body is held until the response, so a retry on a fresh connection resends it.
  if (ex.outBody !== null && ex.outBody.length > 0) t.writeBody(ex.outBody);
  markReady(ex);
  if (ex.requestComplete) t.endRequest();
}

/** The pool (or a freed slot) produced a target for an exchange that was waiting. */
export function targetReady(conn: Forwarder, ex: Exchange, t: ExchangeTarget): void {
  if (ex.aborted || conn.ex !== ex) {
    t.release();
    return;
  }
  attachTarget(conn, ex, t);
  conn.unblockIfReady(ex);
}

/** Send the same head on a fresh connection (a stale reused socket, or the forward's RetryPolicy). */
export function retry(conn: Forwarder, ex: Exchange, why: string): void {
  conn.core.log.log('debug', 'retry_request', { connection: conn.id, method: ex.method, url: ex.url, why });
  const t = poolFor(conn.core, (ex.forward as ForwardDecision).target).acquire(ex, true);
  if (t !== undefined) attachTarget(conn, ex, t);
}

/**
 * A router's replacement fields for a request whose body (or its absence) is relayed as the client framed
 * it: they keep the client's Content-Length and Transfer-Encoding, whatever the router's list says
 * (headers.ts withFramingOf; docs/security.md, "Request smuggling"). The list as given when it already
 * does: one pass, no allocation.
 */
function relayedFraming(headers: readonly string[], ex: Exchange): readonly string[] {
  return headers === ex.headers || sameFraming(headers, ex.headers) ? headers : withFramingOf(headers, ex.headers);
}

/**
 * Frozen route-decision lists already found clean by forward's CR/LF/NUL check. A frozen list cannot
 * change, so one a router hands out on every call (a CORS policy's fields, lib/gateway/cors.ts) is scanned
 * once: the last one by identity, others through the WeakSet. A list that can change (the client's own,
 * which a router may edit in place, or one built per call) is scanned every time.
 */
const cleanFrozen = new WeakSet<readonly string[]>();
let lastCleanFrozen: readonly string[] | undefined;
/** The last path found clean: a string cannot change, and a benchmark or a busy route repeats it. */
let lastCleanPath = '/';

function fieldsBreak(fields: readonly string[]): boolean {
  if (fields === lastCleanFrozen || fields.length === 0) return false;
  const frozen = Object.isFrozen(fields);
  if (!frozen || !cleanFrozen.has(fields)) {
    if (breaksLines(fields)) return true;
    if (!frozen) return false;
    cleanFrozen.add(fields);
  }
  lastCleanFrozen = fields;
  return false;
}

function pathBreaks(path: string): boolean {
  if (path === lastCleanPath) return false;
  if (breaksLine(path) || path.indexOf(' ') !== -1) return true;
  lastCleanPath = path;
  return false;
}

function forward(conn: Forwarder, ex: Exchange, d: ForwardDecision): void {
  const core = conn.core;
  if (!core.settings.senderEnabled) {
    answerFault(conn, ex, makeFault('sender_disabled', S.REQUEST_READY), false);
    return;
  }
  if (
    (d.headers !== undefined && fieldsBreak(d.headers)) ||
    (d.responseHeaders !== undefined && fieldsBreak(d.responseHeaders)) ||
    (d.path !== undefined && pathBreaks(d.path))
  ) {
    // The client's fields passed the strict parser; a router's (a script's, a rule's) did not: a CR or
    // LF in one would write fields of the router's choosing, Content-Length included, into the head
    // (docs/security.md, "Request smuggling"). Refused before anything is sent.
    conn.answerFault(
      ex,
      makeFault('processing', conn.state, false, 'a field or path of the route decision holds CR, LF or NUL, or the path a space'),
      !ex.requestComplete,
    );
    return;
  }
  ex.forward = d;
  let headers = d.headers ?? ex.headers;
  const body = d.body ?? ex.collected;
  if (body !== null) {
    // A body of the router's (mediation): sent with its own length; what is left of the client's is dropped.
    ex.outBody = body;
    const b = ex.body;
    if (b.kind === 'gather') endCollect(ex, b.collector, { ok: false, reason: 'aborted', size: b.collector.size });
    if (!ex.requestComplete) discardBody(ex);
    if (body.length > 0 || ex.hasBody) headers = withBodyLength(headers, body.length);
  } else if (d.headers !== undefined) {
    headers = relayedFraming(headers, ex);
  }
  if (d.responseHeaders !== undefined) ex.responseHeaders = d.responseHeaders;
  if (d.dropResponseHeaders !== undefined && d.dropResponseHeaders.length > 0) ex.dropResponseHeaders = d.dropResponseHeaders;
  ex.requestHead = requestHead(conn, ex, d, headers);
  // Without a slot the exchange waits (core.releaseSlot calls startTarget) or was answered 503.
  if (core.takeSlot(ex)) conn.startTarget(ex);
}

/** The head toward the backend for a forward decision and these request fields. */
function requestHead(conn: Forwarder, ex: Exchange, d: ForwardDecision, headers: readonly string[]): string {
  const core = conn.core;
  const target = d.target;
  const path = d.path ?? originForm(ex.url);
  return buildRequestHead(
    {
      method: ex.method,
      // Through an HTTP proxy a plain request names the origin (absolute-form, RFC 9112 §3.2.2).
      path: target.proxy === undefined || target.tls !== undefined ? path : (target.origin as string) + path,
      headers,
      hostHeader: target.hostHeader,
      remoteAddress: conn.remoteAddress,
      trustedPeer: conn.trustedPeer,
      proto: conn.secure ? 'https' : 'http',
      close: core.settings.disableKeepAlive,
      upgrade: d.websocket !== undefined && ex.upgrade ? 'websocket' : undefined,
      extraLines:
        target.proxy?.authorization !== undefined && target.tls === undefined
          ? 'Proxy-Authorization: ' + target.proxy.authorization + '\r\n'
          : undefined,
      tails: conn,
    },
    core.settings,
  );
}

/**
 * A response hook asked for the request again with new fields (types.ts Resend): the same target, path
 * and held body, on a pooled connection. A body streamed from the client is gone: 101510 instead.
 */
export function resend(conn: Forwarder, ex: Exchange, headers: readonly string[]): void {
  const d = ex.forward as ForwardDecision;
  if (ex.hasBody && ex.outBody === null) {
    conn.answerFault(ex, makeFault('processing', S.RESPONSE_DONE, false, 'resend asked for a streamed request body'), false);
    return;
  }
  if (breaksLines(headers)) {
    conn.answerFault(ex, makeFault('processing', S.RESPONSE_DONE, false, 'a field of the resend holds CR, LF or NUL'), false);
    return;
  }
  const body = ex.outBody;
  ex.requestHead = requestHead(
    conn,
    ex,
    d,
    body === null ? relayedFraming(headers, ex) : body.length > 0 || ex.hasBody ? withBodyLength(headers, body.length) : headers,
  );
  ex.status = 0;
  ex.retries++;
  conn.core.log.log('debug', 'resend_request', { connection: conn.id, method: ex.method, url: ex.url });
  conn.startTarget(ex);
}
