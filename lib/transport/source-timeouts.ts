/**
 * The sweep's timeouts of a source connection (core.ts runs the sweep): header_timeout, keepalive_timeout,
 * body_timeout and 'http.socket.timeout' (spec 001), by protocol state. A module function over the source
 * connection (source.ts).
 */
import type { Socket } from 'node:net';
import { makeFault, type TransportFault } from './codes';
import { ProtocolState as S, type ProtocolState } from './states';
import { writeBlocked } from './direct-write';
import type { Exchange } from './exchange';
import type { TransportCore } from './core';

/** How long a closing connection may linger half-open before it is destroyed. */
export const CLOSE_GRACE_MS = 5000;

/** What the timeouts read of the source connection. */
export interface TimedSource {
  readonly core: TransportCore;
  readonly socket: Socket;
  readonly state: ProtocolState;
  readonly ex: Exchange | null;
  /** Parsing or reading waits for the gateway's side: a route, a slot, a target connection or its socket. */
  readonly waiting: boolean;
  readonly requests: number;
  readonly lastActive: number;
  readonly headStart: number;
  newErrorExchange(): Exchange;
  answerFault(ex: Exchange, fault: TransportFault, mustClose: boolean): void;
  close(): void;
  abort(): void;
}

export function checkSourceTimeouts(conn: TimedSource, now: number): void {
  const settings = conn.core.settings;
  switch (conn.state) {
    case S.REQUEST_READY:
      // Before its first request a connection waits for a head, not between two: header_timeout bounds
      // that wait (a silent connection is a slowloris that sends nothing), keepalive_timeout the idle
      // time after a response. Closed without an answer either way: there is no request to answer.
      if (
        now - conn.lastActive >
        (conn.requests === 0 ? Math.min(settings.headerTimeout, settings.keepAliveTimeout) : settings.keepAliveTimeout)
      )
        conn.close();
      return;
    case S.REQUEST_HEAD:
      if (conn.ex !== null) return;
      if (now - conn.headStart > settings.headerTimeout) {
        const ex = conn.newErrorExchange();
        conn.answerFault(
          ex,
          makeFault('header_timeout', S.REQUEST_HEAD, false, `head not complete within ${settings.headerTimeout} ms`),
          true,
        );
      } else if (now - conn.lastActive > settings.socketTimeout) {
        // 'http.socket.timeout' is inactivity on both sides (spec 001), a half-sent head included.
        const ex = conn.newErrorExchange();
        conn.answerFault(ex, makeFault('client_timeout', S.REQUEST_HEAD, false, `no data for ${settings.socketTimeout} ms`), true);
      }
      return;
    case S.REQUEST_BODY: {
      const ex = conn.ex;
      // Waiting on the gateway's side (route, slot, target) is not the client's inactivity.
      if (ex === null || !ex.ready || conn.waiting) return;
      const bodyTimeout = settings.bodyTimeout;
      if (bodyTimeout > 0 && now - ex.startedAt > bodyTimeout) {
        // [throughway] body_timeout: the whole body within a deadline, however slowly it trickles.
        dropTarget(ex);
        conn.answerFault(ex, makeFault('body_deadline', S.REQUEST_BODY, false, `body not complete within ${bodyTimeout} ms`), true);
        return;
      }
      if (now - conn.lastActive > settings.socketTimeout) {
        dropTarget(ex);
        conn.answerFault(ex, makeFault('client_timeout', S.REQUEST_BODY, false, `no data for ${settings.socketTimeout} ms`), true);
      }
      return;
    }
    case S.RESPONSE_HEAD:
    case S.RESPONSE_BODY:
      if (writeBlocked(conn.socket) && now - conn.lastActive > settings.socketTimeout) {
        conn.core.reportFault(makeFault('client_timeout', conn.state, false, 'client stopped reading'), conn.ex ?? undefined);
        conn.abort();
      }
      return;
    case S.CLOSING:
      if (now - conn.lastActive > CLOSE_GRACE_MS) conn.socket.destroy();
      return;
    default:
      return;
  }
}

/** The target half-received a body that will not complete: it cannot serve another request. */
function dropTarget(ex: Exchange): void {
  const t = ex.target;
  if (t !== null) {
    ex.target = null;
    t.destroy();
  }
}
