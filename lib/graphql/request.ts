/**
 * A GraphQL-over-HTTP request (the GraphQL over HTTP specification, "Request"): GET with the parameters
 * in the query string; POST with `application/json` (`{"query", "operationName", "variables"}`) or
 * `application/graphql` (the body is the query). Only `query` and `operationName` are read; the request
 * is forwarded unchanged. Plain inputs: method, Content-Type, the query string, the gathered body.
 */
import type { GraphqlRequest } from './index';

export type RequestRead = { readonly ok: true; readonly request: GraphqlRequest } | { readonly ok: false; readonly message: string };

/** The media type of a Content-Type value, lower-case, without parameters. */
function mediaType(contentType: string | undefined): string {
  if (contentType === undefined) return '';
  const semi = contentType.indexOf(';');
  return (semi < 0 ? contentType : contentType.slice(0, semi)).trim().toLowerCase();
}

/** One parameter of a query string ('?a=b&...' or 'a=b&...'), decoded; undefined when absent or undecodable. */
function param(query: string, name: string): string | undefined {
  const q = query.startsWith('?') ? query.slice(1) : query;
  for (const pair of q.split('&')) {
    const eq = pair.indexOf('=');
    const k = eq < 0 ? pair : pair.slice(0, eq);
    if (k !== name) continue;
    try {
      return decodeURIComponent((eq < 0 ? '' : pair.slice(eq + 1)).replace(/\+/g, ' '));
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/** GET: `query` and `operationName` from the query string. */
export function fromQueryString(query: string): RequestRead {
  const text = param(query, 'query');
  if (text === undefined || text === '') return { ok: false, message: 'a GET request carries the query in the `query` parameter of the URL' };
  const op = param(query, 'operationName');
  return { ok: true, request: { query: text, operationName: op === undefined || op === '' ? undefined : op } };
}

/** POST: the body by its Content-Type (application/json or application/graphql). */
export function fromBody(contentType: string | undefined, body: Buffer): RequestRead {
  const type = mediaType(contentType);
  if (type === 'application/graphql') return body.length === 0 ? { ok: false, message: 'the application/graphql body is empty' } : { ok: true, request: { query: body.toString('utf8'), operationName: undefined } };
  if (type !== 'application/json' && type !== 'application/graphql-response+json' && !type.endsWith('+json')) {
    return { ok: false, message: `a POST request is application/json or application/graphql, not ${type === '' ? 'without a Content-Type' : type}` };
  }
  let v: unknown;
  try {
    v = JSON.parse(body.toString('utf8'));
  } catch (err) {
    return { ok: false, message: `the JSON body does not parse: ${(err as Error).message}` };
  }
  return fromObject(v);
}

/** The parameters as a JSON object (a POST body, or a subscribe message's payload). */
function fromObject(v: unknown): RequestRead {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return { ok: false, message: 'the parameters are an object with a `query` string (batches are not accepted)' };
  const o = v as { query?: unknown; operationName?: unknown };
  if (typeof o.query !== 'string' || o.query === '') return { ok: false, message: 'the JSON body has no `query` string' };
  if (o.operationName !== undefined && o.operationName !== null && typeof o.operationName !== 'string') return { ok: false, message: '`operationName` is a string' };
  return { ok: true, request: { query: o.query, operationName: typeof o.operationName === 'string' && o.operationName !== '' ? o.operationName : undefined } };
}

/** A graphql-transport-ws message from the client, as far as the gateway reads it (subscribe's payload). */
export type SocketMessage = { readonly type: 'subscribe'; readonly id: string; readonly request: RequestRead } | { readonly type: 'other' } | { readonly type: 'invalid'; readonly message: string };

/** Reads one text message of the graphql-transport-ws protocol (GraphQL over WebSocket, "Subscribe"). */
export function socketMessage(text: string): SocketMessage {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return { type: 'invalid', message: 'the message is not JSON' };
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return { type: 'invalid', message: 'the message is not an object' };
  const m = v as { type?: unknown; id?: unknown; payload?: unknown };
  if (typeof m.type !== 'string') return { type: 'invalid', message: 'the message has no type' };
  if (m.type !== 'subscribe') return { type: 'other' };
  if (typeof m.id !== 'string' || m.id === '') return { type: 'invalid', message: 'a subscribe message has an id' };
  return { type: 'subscribe', id: m.id, request: fromObject(m.payload) };
}
