/**
 * A GraphQL-over-HTTP request (the GraphQL over HTTP specification, "Request"): GET with the parameters
 * in the query string; POST with `application/json` (`{"query", "operationName", "variables"}`) or
 * `application/graphql` (the body is the query). Only `query` and `operationName` are read; the request
 * is forwarded unchanged, so whatever a backend could read otherwise than the gateway did is refused
 * (`ambiguous`, fault 103188, docs/graphql.md "One reading"): a POST whose URL carries a GraphQL
 * parameter (express-graphql and its kin read the URL first), a parameter repeated or spelled otherwise
 * in the query string, a JSON key twice in one object (JSON.parse keeps the last, other parsers the
 * first; RFC 8259 §4 leaves it open), a charset other than UTF-8. Plain inputs: method, Content-Type,
 * the query string, the gathered body.
 */
import type { GraphqlRequest } from './index';

export type RequestRead =
  { readonly ok: true; readonly request: GraphqlRequest } | { readonly ok: false; readonly message: string; readonly ambiguous?: true };

/** The request parameters of GraphQL over HTTP ("Request Parameters"), and their lower-case spellings. */
const PARAMETERS: ReadonlyMap<string, string> = new Map(
  ['query', 'operationName', 'variables', 'extensions'].map((p) => [p.toLowerCase(), p]),
);

function ambiguous(message: string): RequestRead {
  return { ok: false, message, ambiguous: true };
}

/** The media type of a Content-Type value, lower-case, without parameters. */
function mediaType(contentType: string | undefined): string {
  if (contentType === undefined) return '';
  const semi = contentType.indexOf(';');
  return (semi < 0 ? contentType : contentType.slice(0, semi)).trim().toLowerCase();
}

/** A Content-Type's charset parameter other than UTF-8 (RFC 8259 §8.1: JSON between systems is UTF-8), or undefined. */
function foreignCharset(contentType: string | undefined): string | undefined {
  if (contentType === undefined) return undefined;
  for (const p of contentType.split(';').slice(1)) {
    const eq = p.indexOf('=');
    if (eq < 0 || p.slice(0, eq).trim().toLowerCase() !== 'charset') continue;
    const v = p
      .slice(eq + 1)
      .trim()
      .replace(/^"(.*)"$/, '$1')
      .toLowerCase();
    if (v !== 'utf-8' && v !== 'utf8') return v;
  }
  return undefined;
}

/**
 * A query-string name as the lenient decoders read it (URLSearchParams, qs, querystring): `+` is a
 * space, each valid %XX its byte, an invalid one kept.
 */
function looseName(raw: string): string {
  if (raw.indexOf('%') < 0) return raw.indexOf('+') < 0 ? raw : raw.replace(/\+/g, ' ');
  const s = raw.replace(/\+/g, ' ');
  const bytes: number[] = [];
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x25 && /^[0-9a-fA-F]{2}$/.test(s.slice(i + 1, i + 3))) {
      bytes.push(parseInt(s.slice(i + 1, i + 3), 16));
      i += 2;
    } else if (c < 0x80) bytes.push(c);
    else for (const b of Buffer.from(s[i] as string, 'utf8')) bytes.push(b);
  }
  return Buffer.from(bytes).toString('utf8');
}

/**
 * The GraphQL parameter a query-string name may stand for in some backend: its loose decoding cut at
 * `[` or `.` (qs reads `query[]` and, with allowDots, `query.x` as `query`), compared without case.
 */
function parameterOf(rawName: string): string | undefined {
  const name = looseName(rawName);
  const cut = name.search(/[[.]/);
  return PARAMETERS.get((cut < 0 ? name : name.slice(0, cut)).toLowerCase());
}

/**
 * The GraphQL parameters of a query string ('?a=b&...' or 'a=b&...'): each raw value by its name, or
 * the ambiguity found. A parameter must appear once and spelled exactly; a name after a `;` inside a
 * pair (old parsers split there too) counts as another appearance.
 */
function queryParameters(
  query: string,
): { readonly ok: true; readonly values: ReadonlyMap<string, string> } | { readonly ok: false; readonly read: RequestRead } {
  const q = query.startsWith('?') ? query.slice(1) : query;
  const values = new Map<string, string>();
  if (q === '') return { ok: true, values };
  for (const pair of q.split('&')) {
    const eq = pair.indexOf('=');
    const k = eq < 0 ? pair : pair.slice(0, eq);
    const p = parameterOf(k);
    if (p !== undefined) {
      if (k !== p)
        return {
          ok: false,
          read: ambiguous(
            `the query string spells the GraphQL parameter \`${p}\` as \`${k}\`: a backend may read it, the gateway does not`,
          ),
        };
      if (values.has(p))
        return {
          ok: false,
          read: ambiguous(`the query string carries \`${p}\` more than once: the gateway would judge one, a backend may run another`),
        };
      values.set(p, eq < 0 ? '' : pair.slice(eq + 1));
    }
    const semi = pair.indexOf(';');
    if (semi >= 0) {
      for (const part of pair.slice(semi + 1).split(';')) {
        const e = part.indexOf('=');
        const hidden = parameterOf(e < 0 ? part : part.slice(0, e));
        if (hidden !== undefined)
          return {
            ok: false,
            read: ambiguous(`the query string carries \`${hidden}\` after a \`;\`: a backend that splits there would read it`),
          };
      }
    }
  }
  return { ok: true, values };
}

function decoded(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  try {
    return decodeURIComponent(raw.replace(/\+/g, ' '));
  } catch {
    return undefined;
  }
}

/** GET: `query` and `operationName` from the query string, each once. */
export function fromQueryString(query: string): RequestRead {
  const ps = queryParameters(query);
  if (!ps.ok) return ps.read;
  const text = decoded(ps.values.get('query'));
  if (text === undefined || text === '')
    return { ok: false, message: 'a GET request carries the query in the `query` parameter of the URL' };
  const op = decoded(ps.values.get('operationName'));
  return { ok: true, request: { query: text, operationName: op === undefined || op === '' ? undefined : op } };
}

/**
 * POST: the URL carries no GraphQL parameter (a backend that reads the URL first would run it instead of
 * the body's), then the body by its Content-Type (application/json or application/graphql), in UTF-8.
 */
export function fromBody(contentType: string | undefined, body: Buffer, query = ''): RequestRead {
  const ps = queryParameters(query);
  if (!ps.ok) return ps.read;
  const inUrl = [...ps.values.keys()];
  if (inUrl.length > 0)
    return ambiguous(
      `a POST request carries its GraphQL parameters in the body only; the URL has \`${inUrl.join('`, `')}\`, which a backend may read first`,
    );
  const charset = foreignCharset(contentType);
  if (charset !== undefined) return ambiguous(`the body is read as UTF-8; a backend may read it as ${charset}`);
  const type = mediaType(contentType);
  if (type === 'application/graphql')
    return body.length === 0
      ? { ok: false, message: 'the application/graphql body is empty' }
      : { ok: true, request: { query: body.toString('utf8'), operationName: undefined } };
  if (type !== 'application/json' && type !== 'application/graphql-response+json' && !type.endsWith('+json')) {
    return {
      ok: false,
      message: `a POST request is application/json or application/graphql, not ${type === '' ? 'without a Content-Type' : type}`,
    };
  }
  const text = body.toString('utf8');
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    return { ok: false, message: `the JSON body does not parse: ${(err as Error).message}` };
  }
  const twice = duplicateKey(text);
  if (twice !== undefined)
    return ambiguous(`the JSON body has the key "${twice}" twice in one object: JSON.parse keeps the last, a backend may keep the first`);
  return fromObject(v);
}

/**
 * The first key that appears twice in one object of a JSON text JSON.parse accepted, or undefined. Keys
 * are compared decoded (`"\u0071uery"` is `"query"`). One pass over the text, a set of keys per open object.
 */
export function duplicateKey(text: string): string | undefined {
  const objects: (Set<string> | undefined)[] = [];
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      let j = i + 1;
      let escaped = false;
      for (; j < text.length;) {
        const d = text.charCodeAt(j);
        if (d === 0x22) break;
        if (d === 0x5c) {
          escaped = true;
          j += 2;
        } else j++;
      }
      if (expectKey) {
        const keys = objects[objects.length - 1] as Set<string>;
        const key = escaped ? (JSON.parse(text.slice(i, j + 1)) as string) : text.slice(i + 1, j);
        if (keys.has(key)) return key;
        keys.add(key);
        expectKey = false;
      }
      i = j;
    } else if (c === 0x7b) {
      objects.push(new Set());
      expectKey = true;
    } else if (c === 0x5b) {
      objects.push(undefined);
      expectKey = false;
    } else if (c === 0x7d || c === 0x5d) {
      objects.pop();
      expectKey = false;
    } else if (c === 0x2c) expectKey = objects[objects.length - 1] !== undefined;
  }
  return undefined;
}

/** The parameters as a JSON object (a POST body, or a subscribe message's payload). */
function fromObject(v: unknown): RequestRead {
  if (v === null || typeof v !== 'object' || Array.isArray(v))
    return { ok: false, message: 'the parameters are an object with a `query` string (batches are not accepted)' };
  const o = v as { query?: unknown; operationName?: unknown };
  if (typeof o.query !== 'string' || o.query === '') return { ok: false, message: 'the JSON body has no `query` string' };
  if (o.operationName !== undefined && o.operationName !== null && typeof o.operationName !== 'string')
    return { ok: false, message: '`operationName` is a string' };
  return {
    ok: true,
    request: { query: o.query, operationName: typeof o.operationName === 'string' && o.operationName !== '' ? o.operationName : undefined },
  };
}

/**
 * The client messages that pass unread: graphql-transport-ws (GraphQL over WebSocket) `connection_init`,
 * `ping`, `pong`, `complete`; the legacy graphql-ws protocol (subscriptions-transport-ws) `connection_init`,
 * `stop`, `connection_terminate`. `subscribe` and `start` are judged; any other type is refused.
 */
const UNREAD_TYPES: ReadonlySet<string> = new Set(['connection_init', 'ping', 'pong', 'complete', 'stop', 'connection_terminate']);

/**
 * A client message of either protocol, as far as the gateway reads it: an operation (graphql-transport-ws
 * `subscribe`, or the legacy protocol's `start`, both `{id, payload: {query, operationName, ...}}`).
 */
export type SocketMessage =
  | { readonly type: 'subscribe' | 'start'; readonly id: string; readonly request: RequestRead }
  | { readonly type: 'other' }
  | { readonly type: 'invalid'; readonly message: string };

/** Reads one message of graphql-transport-ws or the legacy graphql-ws protocol (GraphQL over WebSocket, "Subscribe"). */
export function socketMessage(text: string): SocketMessage {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return { type: 'invalid', message: 'the message is not JSON' };
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return { type: 'invalid', message: 'the message is not an object' };
  const twice = duplicateKey(text);
  if (twice !== undefined) return { type: 'invalid', message: `the message has the key "${twice}" twice in one object` };
  const m = v as { type?: unknown; id?: unknown; payload?: unknown };
  if (typeof m.type !== 'string') return { type: 'invalid', message: 'the message has no type' };
  if (m.type !== 'subscribe' && m.type !== 'start')
    return UNREAD_TYPES.has(m.type)
      ? { type: 'other' }
      : { type: 'invalid', message: `the message type ${JSON.stringify(m.type.slice(0, 40))} is not one of the protocol's` };
  if (typeof m.id !== 'string' || m.id === '') return { type: 'invalid', message: `a ${m.type} message has an id` };
  return { type: m.type, id: m.id, request: fromObject(m.payload) };
}
