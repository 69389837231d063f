/**
 * OAuth 2.0 error responses: RFC 6749 §5.2 (token endpoint), RFC 7009 §2.2.1 (revocation), RFC 7591
 * §3.2.2 (registration), RFC 6750 §3.1 (a registration's bearer token). One class, the RFC's code, an HTTP status, a description for the developer.
 */
import { ThroughwayError } from '../errors';
export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'invalid_scope'
  | 'unsupported_token_type'
  | 'invalid_redirect_uri'
  | 'invalid_client_metadata'
  | 'invalid_token'
  | 'access_denied'
  | 'invalid_token'
  | 'insufficient_scope'
  | 'not_found'
  | 'conflict'
  | 'server_error';

/** RFC 6749 §5.2: 400 except invalid_client (401 when the client tried to authenticate). */
const STATUS: Readonly<Record<OAuthErrorCode, number>> = {
  invalid_request: 400,
  invalid_client: 401,
  invalid_grant: 400,
  unauthorized_client: 400,
  unsupported_grant_type: 400,
  invalid_scope: 400,
  unsupported_token_type: 400,
  invalid_redirect_uri: 400,
  invalid_client_metadata: 400,
  // RFC 6750 §3.1: a bearer token (here an initial access token, RFC 7591 §3) that is not valid.
  invalid_token: 401,
  access_denied: 403,
  insufficient_scope: 403,
  not_found: 404,
  conflict: 409,
  server_error: 500,
};

export class OAuthError extends ThroughwayError {
  readonly error: OAuthErrorCode;
  /** The same as `error`: the RFC 6749 §5.2 / RFC 7009 / RFC 7591 code (docs/key-manager.md). */
  readonly code: OAuthErrorCode;
  readonly status: number;
  /** Extra response headers (WWW-Authenticate for invalid_client, RFC 6749 §5.2). */
  readonly headers: Readonly<Record<string, string>>;
  constructor(error: OAuthErrorCode, description: string, options: { status?: number; headers?: Record<string, string> } = {}) {
    super(description);
    this.name = 'OAuthError';
    this.error = error;
    this.code = error;
    this.status = options.status ?? STATUS[error];
    this.headers = options.headers ?? {};
  }
  body(): { error: string; error_description: string } {
    return { error: this.error, error_description: this.message };
  }
}

/**
 * Codes of a change the admin API refuses so that the node keeps its admins (docs/admin-api.md, users):
 * the user is the caller itself, the super admin (`[super_admin] username`), or a tenant's admin. Each
 * is answered 409 (`conflict`) with the code at the start of `error_description`.
 */
export type AdminKeptCode = 'USER_IS_CALLER' | 'USER_IS_SUPER_ADMIN' | 'USER_IS_TENANT_ADMIN';

export class AdminKeptError extends ThroughwayError {
  readonly code: AdminKeptCode;
  constructor(code: AdminKeptCode, message: string) {
    super(message);
    this.name = 'AdminKeptError';
    this.code = code;
  }
}
