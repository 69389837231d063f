/**
 * Local answers: a response the transport writes itself (a fault, a router's LocalResponse such as a CORS
 * preflight, or a router's answer to a gathered backend response, ForwardDecision.bufferResponse). Module
 * functions over the source connection (source.ts).
 */
import { STATUS_CODES } from 'node:http';
import { ProtocolState as S, type ProtocolState } from './states';
import { makeFault, type TransportFault } from './codes';
import { buildLocalHead } from './headers';
import { discardBody, markResponseDone, markResponseStarted, type Exchange } from './exchange';
import type { ClientWriter } from './client-writer';
import type { TransportCore } from './core';
import { EMPTY_BODY } from './body';
import type { BufferedResponse, ForwardDecision, LocalResponse, Resend, ResponseHook } from './types';

/** What a local answer uses of the source connection. */
export interface LocalAnswerer {
  readonly core: TransportCore;
  readonly writer: ClientWriter;
  readonly id: number;
  readonly ex: Exchange | null;
  readonly keepAlive: boolean;
  setState(to: ProtocolState): void;
  /** Count, report and free what the exchange held. */
  endExchange(ex: Exchange, fault: TransportFault | undefined): void;
  /** Request complete and response done: the connection goes on or closes. */
  finishExchange(ex: Exchange): void;
  /** A response hook's Resend: the request again with new fields (source.ts). */
  resend(ex: Exchange, headers: readonly string[]): void;
  close(): void;
  abort(): void;
}

const NO_FIELDS: readonly string[] = [];

/** A local answer (fault, preflight, ...). `mustClose`: the rest of the request will not be read. */
export function answer(conn: LocalAnswerer, ex: Exchange, r: LocalResponse, mustClose: boolean): void {
  if (ex.responseStarted) {
    conn.abort();
    return;
  }
  ex.faultCode = r.faultCode;
  const body = r.body === undefined ? EMPTY_BODY : typeof r.body === 'string' ? Buffer.from(r.body) : r.body;
  if (!ex.requestComplete) {
    if (mustClose) ex.closeAfter = true;
    else discardBody(ex); // read and drop the rest of the body, keep the connection
  }
  if (!conn.keepAlive || conn.core.closing) ex.closeAfter = true;
  ex.status = r.status;
  markResponseStarted(ex);
  ex.responseBytes = body.length;
  const head = buildLocalHead(r.status, STATUS_CODES[r.status] ?? 'Unknown', r.headers ?? NO_FIELDS, body.length, ex.closeAfter);
  conn.setState(S.RESPONSE_HEAD);
  conn.writer.writeLocal(head, body.length > 0 && !ex.isHead ? body : undefined);
  responseFinished(conn, ex);
}

/**
 * The last response byte is written, by a local answer or relayed from the target (SourceConnection
 * responseDone): the connection closes when the exchange said so, else it goes on once the request is
 * complete too (until then the source reads the rest of the request).
 */
export function responseFinished(conn: LocalAnswerer, ex: Exchange): void {
  markResponseDone(ex);
  conn.setState(S.RESPONSE_DONE);
  if (ex.closeAfter) {
    conn.endExchange(ex, undefined);
    conn.close();
  } else if (ex.requestComplete) {
    conn.finishExchange(ex);
  }
}

/** Report the fault once and answer it as the renderer (the gateway's fault table) says. */
export function answerFault(conn: LocalAnswerer, ex: Exchange, fault: TransportFault, mustClose: boolean): void {
  ex.fault = fault;
  conn.core.reportFault(fault, ex);
  const r = conn.core.renderFault(fault, ex);
  answer(conn, ex, r.faultCode === undefined ? { ...r, faultCode: fault.code } : r, mustClose);
}

/**
 * A response gathered for ForwardDecision.bufferResponse is complete (its target is already released):
 * the router's hook decides what the client gets, answered like a local response.
 */
export function gatheredResponse(conn: LocalAnswerer, ex: Exchange, res: BufferedResponse): void {
  const hook = (ex.forward as ForwardDecision).bufferResponse as ResponseHook;
  let r: LocalResponse | Resend | Promise<LocalResponse | Resend>;
  try {
    r = hook.handle(res);
  } catch (err) {
    responseHookFailed(conn, ex, err);
    return;
  }
  if (typeof (r as Promise<LocalResponse>).then === 'function') {
    (r as Promise<LocalResponse | Resend>).then(
      (d) => responseHookDone(conn, ex, d),
      (err: unknown) => responseHookFailed(conn, ex, err),
    );
  } else responseHookDone(conn, ex, r as LocalResponse | Resend);
}

function responseHookDone(conn: LocalAnswerer, ex: Exchange, d: LocalResponse | Resend): void {
  if (ex.aborted || conn.ex !== ex) return;
  if ((d as Resend).resend !== undefined) {
    conn.resend(ex, (d as Resend).resend);
    return;
  }
  const r = d as LocalResponse;
  const drop = ex.dropResponseHeaders;
  let headers = r.headers ?? NO_FIELDS;
  if (drop !== undefined)
    headers = headers.filter((_, i, a) =>
      i % 2 === 0 ? !drop.includes((a[i] as string).toLowerCase()) : !drop.includes((a[i - 1] as string).toLowerCase()),
    );
  // A fault the router rendered carries its own (CORS) fields already.
  if (ex.responseHeaders.length > 0 && r.faultCode === undefined) headers = [...headers, ...ex.responseHeaders];
  answer(conn, ex, { ...r, headers }, false);
}

function responseHookFailed(conn: LocalAnswerer, ex: Exchange, err: unknown): void {
  if (ex.aborted || conn.ex !== ex) return;
  conn.core.log.log('error', 'response_hook_error', { connection: conn.id, error: err instanceof Error ? err.message : String(err) });
  answerFault(conn, ex, makeFault('processing', S.RESPONSE_DONE, false, 'response hook threw'), false);
}
