/**
 * CORS ([apim.cors], spec 000; the reference's _cors_request_handler_ sequence, spec 002 part 7): preflight
 * requests are answered by the gateway, and every response of an API call (faults included) carries the
 * CORS fields. An API may override any of the settings (`[cors]` in its definition).
 *
 * The response fields are built when the policy is built, never per request: one frozen array for the
 * origin `*`, one per configured origin. allow_credentials together with the origin `*` is refused as a
 * configuration error: the Fetch standard forbids `Access-Control-Allow-Origin: *` on credentialed requests,
 * and silently echoing any origin instead would hand every site the user's cookies.
 */
import type { SourceRequest } from '../transport/types';
import type { CorsOverride } from './apis';
import { ThroughwayError } from '../errors';

export interface CorsSettings {
  readonly enable: boolean;
  readonly allowOrigins: readonly string[];
  readonly allowMethods: readonly string[];
  readonly allowHeaders: readonly string[];
  readonly allowCredentials: boolean;
}

/** The spec's defaults (spec 000, [apim.cors]). */
export const DEFAULT_CORS: CorsSettings = Object.freeze({
  enable: true,
  allowOrigins: Object.freeze(['*']),
  allowMethods: Object.freeze(['GET', 'PUT', 'POST', 'DELETE', 'PATCH', 'OPTIONS']),
  allowHeaders: Object.freeze(['authorization', 'Access-Control-Allow-Origin', 'Content-Type', 'SOAPAction']),
  allowCredentials: false,
});

export class CorsConfigError extends ThroughwayError {
  override readonly name = 'CorsConfigError';
  readonly code = 'CORS_CREDENTIALS_WITH_ANY_ORIGIN';
}

const EMPTY: readonly string[] = Object.freeze([]);
const VARY_ORIGIN: readonly string[] = Object.freeze(['Vary', 'Origin']);

export class CorsPolicy {
  readonly enabled: boolean;
  readonly anyOrigin: boolean;
  readonly settings: CorsSettings;
  /** Response fields of actual (non-preflight) responses when any origin is allowed. */
  private readonly anyFields: readonly string[];
  /** Lower-case origin → response fields of actual responses. */
  private readonly byOrigin = new Map<string, readonly string[]>();
  private readonly methodsUpper: readonly string[];
  private readonly headersValue: string;

  /** Throws CorsConfigError for credentials with the origin `*`; `where` names the setting for the message. */
  constructor(settings: CorsSettings, where = '[apim.cors]') {
    this.settings = settings;
    this.enabled = settings.enable;
    const origins = settings.allowOrigins.map((o) => o.trim()).filter((o) => o !== '');
    this.anyOrigin = origins.includes('*');
    if (this.enabled && this.anyOrigin && settings.allowCredentials) {
      throw new CorsConfigError(
        `${where}: allow_credentials = true needs explicit allow_origins, not "*" (spec 000, [apim.cors]: "then allow_origins must not be *")`,
      );
    }
    this.methodsUpper = Object.freeze(settings.allowMethods.map((m) => m.trim().toUpperCase()).filter((m) => m !== ''));
    this.headersValue = settings.allowHeaders
      .map((h) => h.trim())
      .filter((h) => h !== '')
      .join(',');
    const credentials = settings.allowCredentials ? ['Access-Control-Allow-Credentials', 'true'] : [];
    this.anyFields = Object.freeze(['Access-Control-Allow-Origin', '*', ...credentials]);
    for (const o of origins) {
      if (o === '*') continue;
      const lower = o.toLowerCase();
      this.byOrigin.set(lower, Object.freeze(['Access-Control-Allow-Origin', lower, ...credentials, 'Vary', 'Origin']));
    }
  }

  /** The policy of an API: [apim.cors] with the API's override applied (undefined override: the same policy). */
  withOverride(o: CorsOverride | undefined, where: string): CorsPolicy {
    if (o === undefined) return this;
    const s = this.settings;
    return new CorsPolicy(
      {
        enable: o.enable ?? s.enable,
        allowOrigins: o.allowOrigins ?? s.allowOrigins,
        allowMethods: o.allowMethods ?? s.allowMethods,
        allowHeaders: o.allowHeaders ?? s.allowHeaders,
        allowCredentials: o.allowCredentials ?? s.allowCredentials,
      },
      where,
    );
  }

  /** Fields for an actual response to a request with this Origin (undefined: none sent). Never allocates. */
  responseFields(origin: string | undefined): readonly string[] {
    if (!this.enabled) return EMPTY;
    if (this.anyOrigin) return this.anyFields;
    if (origin === undefined) return VARY_ORIGIN;
    return this.byOrigin.get(origin) ?? this.byOrigin.get(origin.toLowerCase()) ?? VARY_ORIGIN;
  }

  /**
   * The preflight answer's fields. Allowed methods: the configured ones that the matched resource path
   * offers (OPTIONS always), so a browser is not told it may send a method that would get 405.
   */
  preflightFields(origin: string | undefined, resourceMethods: readonly string[] | undefined): string[] {
    const fields = [...this.responseFields(origin)];
    if (fields.length === 0 || (fields.length === 2 && fields[0] === 'Vary')) return fields;
    const methods =
      resourceMethods === undefined ? this.methodsUpper : this.methodsUpper.filter((m) => m === 'OPTIONS' || resourceMethods.includes(m));
    fields.push('Access-Control-Allow-Methods', methods.join(','));
    if (this.headersValue !== '') fields.push('Access-Control-Allow-Headers', this.headersValue);
    return fields;
  }
}

/** What CORS needs from a request head: the Origin field and whether it is a preflight (Fetch §3.2.2). */
export interface CorsRequest {
  readonly origin: string | undefined;
  readonly preflight: boolean;
}

const NO_ORIGIN: CorsRequest = Object.freeze({ origin: undefined, preflight: false });

/** One pass over the fields; names are compared only when their length matches. */
export function corsRequest(req: SourceRequest): CorsRequest {
  const h = req.headers;
  let origin: string | undefined;
  let requestMethod = false;
  for (let i = 0; i < h.length; i += 2) {
    const name = h[i] as string;
    // Length, then the first letter (case folded), before any lower-casing: `Accept` is six letters too.
    if (name.length === 6) {
      if ((name.charCodeAt(0) | 0x20) === 111 && name.toLowerCase() === 'origin') origin = h[i + 1] as string;
    } else if (name.length === 29 && req.method === 'OPTIONS') {
      if (name.toLowerCase() === 'access-control-request-method') requestMethod = true;
    }
  }
  if (origin === undefined && !requestMethod) return NO_ORIGIN;
  return { origin, preflight: req.method === 'OPTIONS' && origin !== undefined && requestMethod };
}
