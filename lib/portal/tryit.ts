/**
 * The developer portal's try-it console (docs/portal.md, "Try it"): the server calls the gateway with the
 * application's access token and shows the response. The target is never a URL the browser typed: only
 * a gateway base URL of this configuration, followed by the API's own path. The response body is read
 * up to MAX_SHOWN bytes; a fault body's code is explained from the fault table (lib/faults).
 */
import * as http from 'node:http';
import * as https from 'node:https';
import { faultDef, type GatewayFaultDef } from '../faults';

export const MAX_SHOWN = 64 * 1024;
export const MAX_REQUEST_BODY = 16 * 1024;
export const TRY_TIMEOUT = 15_000;
export const TRY_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD'] as const;

export interface TryRequest {
  readonly base: string;
  /** The path after the base: the API's versioned path and the resource, with any query. */
  readonly path: string;
  readonly method: string;
  readonly token: string | undefined;
  readonly body: string | undefined;
  readonly contentType: string | undefined;
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
  // The base may carry a path of its own (a virtual host's /<optional context>): appended to, not replaced.
  const url = new URL(`${r.base.replace(/\/+$/, '')}${r.path}`);
  const headers: Record<string, string> = { 'User-Agent': 'throughway-devportal' };
  if (r.token !== undefined && r.token !== '') headers.Authorization = `Bearer ${r.token}`;
  if (r.body !== undefined && r.body !== '') {
    headers['Content-Type'] = r.contentType ?? 'application/json';
    headers['Content-Length'] = String(Buffer.byteLength(r.body));
  }
  const mod = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = mod.request(url, { method: r.method, headers, timeout: TRY_TIMEOUT, ...(url.protocol === 'https:' ? { rejectUnauthorized: false } : {}) }, (res) => {
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
        for (let i = 0; i < res.rawHeaders.length; i += 2) headerList.push([res.rawHeaders[i] as string, res.rawHeaders[i + 1] as string]);
        const code = faultCode(body);
        resolve({ url: url.toString(), status: res.statusCode ?? 0, headers: headerList, body, truncated, fault: code === undefined ? undefined : { code, def: faultDef(code) } });
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${TRY_TIMEOUT / 1000} s`)));
    req.on('error', reject);
    req.end(r.body !== undefined && r.body !== '' ? r.body : undefined);
  });
}
