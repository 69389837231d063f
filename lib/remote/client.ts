/**
 * The HTTP client of the tools that work on a running node over its management port (docs/sync.md): the
 * admin API, with the super admin's HTTP Basic
 * credentials. The password comes from the environment or standard input, never from an argument (an
 * argument is visible to every user of the machine in the process list).
 */
import { ThroughwayError } from '../errors';

/** The environment variables the tools read their credentials from. */
export const ADMIN_USER_ENV = 'THROUGHWAY_ADMIN_USER';
export const ADMIN_PASSWORD_ENV = 'THROUGHWAY_ADMIN_PASSWORD';

/** Bounds of one answer: a node's state is read whole, so it is bounded (16 MiB) rather than streamed. */
const MAX_ANSWER = 16 * 1024 * 1024;
/** One call's time limit (ms): a node that does not answer is named, not waited for. */
const CALL_TIMEOUT = 30_000;

/** A refused call: the HTTP status, the admin API's `error` and `error_description` (docs/admin-api.md). */
export class RemoteError extends ThroughwayError {
  readonly code = 'REMOTE_REFUSED';
  constructor(
    readonly status: number,
    readonly error: string,
    message: string,
  ) {
    super(message);
    this.name = 'RemoteError';
  }
}

export interface RemoteIo {
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly stdin?: () => Promise<string>;
}

/** What the tools call: a method, a path under the origin, an optional JSON body; the parsed JSON answer. */
export interface Remote {
  readonly origin: string;
  call(method: string, path: string, body?: unknown): Promise<Record<string, unknown>>;
}

/**
 * The credentials: the user from THROUGHWAY_ADMIN_USER (default `admin`), the password from
 * THROUGHWAY_ADMIN_PASSWORD, else the first line of standard input. `rest()` gives the remaining lines of
 * standard input (apply's initial password). Standard input is read only when one of them is asked for:
 * with the password in the environment, a command run with an open pipe on its input does not wait for it.
 */
export async function credentials(io: RemoteIo): Promise<{ user: string; password: string; rest: () => Promise<string[]> }> {
  const user = io.env?.[ADMIN_USER_ENV] ?? 'admin';
  const fromEnv = io.env?.[ADMIN_PASSWORD_ENV];
  let read: Promise<string[]> | undefined;
  const lines = (): Promise<string[]> =>
    (read ??= (io.stdin === undefined ? Promise.resolve('') : io.stdin()).then((t) => t.split(/\r?\n/)));
  if (fromEnv !== undefined && fromEnv !== '') return { user, password: fromEnv, rest: lines };
  const all = await lines();
  const password = all[0] ?? '';
  if (password === '')
    throw new RemoteError(
      0,
      'no_credentials',
      `no admin password: set ${ADMIN_PASSWORD_ENV} or give it on standard input (never as an argument)`,
    );
  return { user, password, rest: async () => all.slice(1) };
}

/** An http(s) origin such as http://localhost:9763; anything else is refused. */
export function remoteOrigin(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new RemoteError(0, 'bad_url', `--url ${JSON.stringify(url)} is not a URL (e.g. http://localhost:9763)`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new RemoteError(0, 'bad_url', `--url must be http:// or https://, not ${u.protocol}`);
  return u.origin;
}

/**
 * An answer's body as text, read up to `max` bytes: past it the reading stops (the rest is not
 * downloaded) and RemoteError `too_large` names the bound.
 */
export async function boundedText(r: Response, max: number, what: string): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  if (r.body !== null) {
    const reader = r.body.getReader();
    for (;;) {
      const { done, value } = await reader.read().catch((err: unknown) => {
        throw new RemoteError(
          r.status,
          'unreachable',
          `${what}: the answer broke off: ${err instanceof Error ? err.message : String(err)}`,
        );
      });
      if (done) break;
      size += value.byteLength;
      if (size > max) {
        await reader.cancel().catch(() => undefined);
        throw new RemoteError(r.status, 'too_large', `${what}: answer longer than ${max} bytes`);
      }
      chunks.push(Buffer.from(value));
    }
  }
  return Buffer.concat(chunks).toString('utf8');
}

export function remote(origin: string, user: string, password: string): Remote {
  const auth = `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
  return {
    origin,
    async call(method, path, body) {
      const r = await fetch(`${origin}${path}`, {
        method,
        headers: { Authorization: auth, Accept: 'application/json', ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}) },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(CALL_TIMEOUT),
      }).catch((err: unknown) => {
        throw new RemoteError(
          0,
          'unreachable',
          `${method} ${origin}${path}: ${err instanceof Error ? ((err.cause as Error | undefined)?.message ?? err.message) : String(err)}`,
        );
      });
      const text = await boundedText(r, MAX_ANSWER, `${method} ${path}`);
      let json: Record<string, unknown> = {};
      try {
        json = text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
      } catch {
        if (r.ok) throw new RemoteError(r.status, 'not_json', `${method} ${path}: the answer is not JSON`);
      }
      if (!r.ok)
        throw new RemoteError(
          r.status,
          String(json.error ?? r.statusText),
          `${r.status} ${String(json.error ?? '')}: ${String(json.error_description ?? text.slice(0, 200))}`,
        );
      return json;
    },
  };
}
