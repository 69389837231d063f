/**
 * One POST to a collector (Zipkin, OTLP) or an analytics receiver. Off the request path: exporters call it
 * from their flush timers with one batch at a time, so node:http's client is plenty (keep-alive agent,
 * one socket per collector).
 */
import * as http from 'node:http';
import * as https from 'node:https';

export interface PostTarget {
  readonly url: URL;
  /** `Authorization` value sent with every POST (receiver credentials), or undefined. */
  readonly authorization?: string | undefined;
  readonly agent: http.Agent;
}

export interface PostResult {
  readonly ok: boolean;
  /** HTTP status, 0 when no response came (refused, reset, timeout). */
  readonly status: number;
  /** Why it failed: an error code (ECONNREFUSED, ETIMEDOUT) or `HTTP <status>`. */
  readonly error: string | undefined;
}

/** The URL for log lines: user information (`user:password@`) replaced by `****@`. */
export function redactUrl(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/?#@]*@/i, '$1****@');
}

export function postTarget(url: string, authorization?: string): PostTarget {
  const u = new URL(url);
  const secure = u.protocol === 'https:';
  const agent = secure ? new https.Agent({ keepAlive: true, maxSockets: 1 }) : new http.Agent({ keepAlive: true, maxSockets: 1 });
  return { url: u, authorization, agent };
}

/** POSTs `body` (JSON text); resolves, never rejects. 2xx is success (Zipkin answers 202). */
export function postJson(target: PostTarget, body: string, timeoutMs: number): Promise<PostResult> {
  return postBody(target, body, 'application/json', timeoutMs);
}

/** POSTs `body` with its content type (OTLP's protobuf or JSON); resolves, never rejects. 2xx is success. */
export function postBody(target: PostTarget, body: string | Buffer, contentType: string, timeoutMs: number): Promise<PostResult> {
  return new Promise((resolve) => {
    const u = target.url;
    const headers: http.OutgoingHttpHeaders = { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(body) };
    if (target.authorization !== undefined) headers.Authorization = target.authorization;
    const client = u.protocol === 'https:' ? https : http;
    let done = false;
    const finish = (r: PostResult): void => {
      if (done) return;
      done = true;
      resolve(r);
    };
    const req = client.request(
      {
        host: u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname,
        port: u.port === '' ? undefined : Number(u.port),
        path: `${u.pathname}${u.search}`,
        method: 'POST',
        headers,
        agent: target.agent,
        timeout: timeoutMs,
      },
      (res) => {
        const status = res.statusCode ?? 0;
        // The answer's body is read and dropped so the socket goes back to the agent.
        res.resume();
        res.on('end', () =>
          finish({ ok: status >= 200 && status < 300, status, error: status >= 200 && status < 300 ? undefined : `HTTP ${status}` }),
        );
        res.on('error', (err: NodeJS.ErrnoException) => finish({ ok: false, status, error: err.code ?? err.message }));
      },
    );
    req.on('timeout', () => {
      req.destroy(Object.assign(new Error('timed out'), { code: 'ETIMEDOUT' }));
    });
    req.on('error', (err: NodeJS.ErrnoException) => finish({ ok: false, status: 0, error: err.code ?? err.message }));
    req.end(body);
  });
}
