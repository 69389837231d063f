/**
 * The developer portal's try-it console (docs/portal.md, "Try it"): the server calls the gateway with the
 * application's access token and shows the response. The target is never a URL the browser typed: only
 * a gateway base URL of this configuration, followed by the API's own path. The response body is read
 * up to MAX_SHOWN bytes; a fault body's code is explained from the fault table (lib/faults).
 *
 * The resource path the browser typed must keep the call inside the API's context and version
 * (tryTarget): it is percent-decoded where the octet is unreserved, a dot or a slash, its dot segments
 * are removed (RFC 3986 §5.2.4), and the result must still start with the API's path; a backslash (read
 * as `/` by WHATWG URL parsers), an empty segment (`//`), a control or space, or a fragment is refused.
 * Otherwise nothing is sent: `%2e%2e`, `..%2f` or `\` cannot carry the session's token to another API
 * of the gateway or to its /token.
 */
import * as http from 'node:http';
import * as https from 'node:https';
import { faultDef, type GatewayFaultDef } from '../faults';

export const MAX_SHOWN = 64 * 1024;
export const MAX_REQUEST_BODY = 16 * 1024;
export const TRY_TIMEOUT = 15_000;
export const TRY_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD'] as const;

export interface TryRequest {
  /** The checked target (tryTarget). */
  readonly url: URL;
  readonly method: string;
  readonly token: string | undefined;
  readonly body: string | undefined;
  readonly contentType: string | undefined;
}

/** Why a try-it target was refused: the path is malformed, or it leaves the API. */
export interface TryRefusal {
  readonly code: 'TRY_PATH_INVALID' | 'TRY_PATH_OUTSIDE_API';
  readonly message: string;
}

/** RFC 3986 §2.3 unreserved characters, and `/`: decoded before the dot segments are removed. */
const DECODED = /%(2[dDeEfF]|3[0-9]|4[1-9a-fA-F]|5[0-9aAfF]|6[1-9a-fA-F]|7[0-9aAeE])/g;

/** RFC 3986 §5.2.4 remove_dot_segments. */
export function removeDotSegments(path: string): string {
  const out: string[] = [];
  const segs = path.split('/');
  for (let i = 0; i < segs.length; i++) {
    const seg = segs[i] as string;
    const last = i === segs.length - 1;
    if (seg === '.') {
      if (last) out.push('');
    } else if (seg === '..') {
      if (out.length > 1) out.pop();
      if (last) out.push('');
    } else out.push(seg);
  }
  const joined = out.join('/');
  return joined.startsWith('/') ? joined : `/${joined}`;
}

/**
 * The URL try-it calls: the gateway base, the API's versioned path, the resource path and query the
 * browser typed, normalised; or why it is refused (then nothing is sent).
 */
export function tryTarget(base: string, apiPath: string, rest: string): { readonly url: URL } | TryRefusal {
  const invalid = (message: string): TryRefusal => ({ code: 'TRY_PATH_INVALID', message });
  if (rest.length > 2048) return invalid('The resource path is longer than 2048 characters.');
  if (!rest.startsWith('/')) return invalid('The resource path starts with /.');
  // Backslashes, raw or encoded: WHATWG URL parsers and some servers read them as `/`.
  if (/\\|%5c/i.test(rest)) return invalid('The resource path holds a backslash.');
  if (/[\u0000-\u0020\u007f-\u00a0#]|%(0[0-9a-f]|1[0-9a-f]|7f|23)/i.test(rest))
    return invalid('The resource path holds a space, control character or fragment.');
  const q = rest.indexOf('?');
  const pathPart = q < 0 ? rest : rest.slice(0, q);
  const query = q < 0 ? '' : rest.slice(q);
  const origin = new URL(base);
  const basePath = origin.pathname.replace(/\/+$/, '');
  const prefix = `${basePath}${apiPath}`;
  const decoded = `${prefix}${pathPart === '/' ? '' : pathPart}`.replace(DECODED, (m) => String.fromCharCode(parseInt(m.slice(1), 16)));
  if (decoded.slice(prefix.length).includes('//')) return invalid('The resource path holds an empty segment (//).');
  const normal = removeDotSegments(decoded);
  if (normal !== prefix && !normal.startsWith(`${prefix}/`))
    return {
      code: 'TRY_PATH_OUTSIDE_API',
      message: `The resource path leaves the API: it resolves to ${normal.slice(0, 200)}, outside ${prefix}. Nothing was sent.`,
    };
  const url = new URL(`${origin.origin}${normal}${query}`);
  // The URL parser must not have moved it again (it removes dot segments of its own).
  if (url.pathname !== normal)
    return { code: 'TRY_PATH_OUTSIDE_API', message: 'The resource path does not stay as written. Nothing was sent.' };
  return { url };
}

export interface TryResult {
  readonly url: string;
  readonly status: number;
  readonly headers: readonly (readonly [string, string])[];
  readonly body: string;
  readonly truncated: boolean;
  /** The fault code of the body (spec 002, part 7), with its row of the fault table. */
  readonly fault: { readonly code: number; readonly def: GatewayFaultDef | undefined } | undefined;
}

/** The `fault.code` of a gateway fault body, if the body is one. */
export function faultCode(body: string): number | undefined {
  try {
    const v = JSON.parse(body) as { fault?: { code?: unknown } };
    const c = v?.fault?.code;
    const n = typeof c === 'number' ? c : typeof c === 'string' && /^\d{6}$/.test(c) ? Number(c) : undefined;
    return n;
  } catch {
    return undefined;
  }
}

export function tryCall(r: TryRequest): Promise<TryResult> {
  const url = r.url;
  const headers: Record<string, string> = { 'User-Agent': 'throughway-devportal' };
  if (r.token !== undefined && r.token !== '') headers.Authorization = `Bearer ${r.token}`;
  if (r.body !== undefined && r.body !== '') {
    headers['Content-Type'] = r.contentType ?? 'application/json';
    headers['Content-Length'] = String(Buffer.byteLength(r.body));
  }
  const mod = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = mod.request(
      url,
      { method: r.method, headers, timeout: TRY_TIMEOUT, ...(url.protocol === 'https:' ? { rejectUnauthorized: false } : {}) },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        let truncated = false;
        res.on('data', (c: Buffer) => {
          if (size >= MAX_SHOWN) {
            truncated = true;
            return;
          }
          chunks.push(c);
          size += c.length;
        });
        res.on('end', () => {
          let buf = Buffer.concat(chunks);
          if (buf.length > MAX_SHOWN) {
            buf = buf.subarray(0, MAX_SHOWN);
            truncated = true;
          }
          const body = buf.toString('utf8');
          const headerList: [string, string][] = [];
          for (let i = 0; i < res.rawHeaders.length; i += 2)
            headerList.push([res.rawHeaders[i] as string, res.rawHeaders[i + 1] as string]);
          const code = faultCode(body);
          resolve({
            url: url.toString(),
            status: res.statusCode ?? 0,
            headers: headerList,
            body,
            truncated,
            fault: code === undefined ? undefined : { code, def: faultDef(code) },
          });
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer within ${TRY_TIMEOUT / 1000} s`)));
    req.on('error', reject);
    req.end(r.body !== undefined && r.body !== '' ? r.body : undefined);
  });
}
