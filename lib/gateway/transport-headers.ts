/**
 * Header rules between client and backend: the transport header handler ([apim.transport_headers],
 * spec 001) and the outbound authorization header ([apim.oauth_config] enable_outbound_auth_header and
 * auth_header, spec 000).
 *
 * The reference keeps one transport-header map per message, so a request's fields can leak into the
 * response; its handler cleans that up. throughway builds every head new, so the rules read:
 *  - excludeRequestHeaders: removed from every response to the client (backend responses and the
 *    gateway's own answers);
 *  - excludeResponseHeaders: removed from every request to the backend;
 *  - removeRequestHeaders / preserveRequestHeaders: the gateway's own answers (faults) never copy request
 *    fields, whatever the setting (the reference's leak is not reproduced); with removeRequestHeaders = true
 *    the fields named in preserveRequestHeaders are echoed on faults, as the reference keeps exactly those.
 *    OPTIONS answers never echo (the spec: "always removed for OPTIONS calls").
 *  - the client's token header (auth_header, default Authorization) is not sent to the backend unless
 *    enable_outbound_auth_header is true.
 * The lists apply when [apim.transport_headers] enabled is true; the auth header rule always applies.
 *
 * Outgoing request fields are built as a new array once, and only when a field is actually removed or
 * added; otherwise the transport writes the client's fields as parsed (no copy).
 */

export interface HeaderRuleSettings {
  /** [apim.transport_headers] enabled. */
  readonly enabled: boolean;
  readonly removeRequestHeaders: boolean;
  readonly preserveRequestHeaders: readonly string[];
  readonly excludeRequestHeaders: readonly string[];
  readonly excludeResponseHeaders: readonly string[];
  /** [apim.oauth_config] enable_outbound_auth_header. */
  readonly outboundAuthHeader: boolean;
  /** [apim.oauth_config] auth_header. */
  readonly authHeader: string;
}

const EMPTY: readonly string[] = Object.freeze([]);

function lowerList(list: readonly string[]): string[] {
  return [...new Set(list.map((s) => s.trim().toLowerCase()).filter((s) => s !== ''))];
}

/**
 * Names grouped by length, with their first letters: a field name is lower-cased only when its length and
 * first letter (case folded) could match a rule (`Cache-Control` and `Authorization` share a length).
 */
class NameSet {
  private readonly byLength = new Map<number, readonly string[]>();
  private readonly firstLetters = new Set<number>();
  readonly size: number;
  constructor(names: readonly string[]) {
    for (const n of names) {
      this.byLength.set(n.length, [...(this.byLength.get(n.length) ?? []), n]);
      this.firstLetters.add(n.charCodeAt(0) | 0x20);
    }
    this.size = names.length;
  }
  has(name: string): boolean {
    const candidates = this.byLength.get(name.length);
    return candidates !== undefined && this.firstLetters.has(name.charCodeAt(0) | 0x20) && candidates.includes(name.toLowerCase());
  }
}

export class HeaderRules {
  /** Lower-case names the transport removes from backend responses (ForwardDecision.dropResponseHeaders). */
  readonly dropFromResponse: readonly string[] | undefined;
  /** The same, as a set, for the gateway's own answers. */
  readonly dropFromResponseSet: ReadonlySet<string> | undefined;
  private readonly removeFromRequest: NameSet;
  private readonly echo: NameSet | undefined;

  constructor(readonly settings: HeaderRuleSettings) {
    const remove: string[] = [];
    if (!settings.outboundAuthHeader && settings.authHeader.trim() !== '') remove.push(settings.authHeader.trim().toLowerCase());
    if (settings.enabled) remove.push(...lowerList(settings.excludeResponseHeaders));
    this.removeFromRequest = new NameSet([...new Set(remove)]);
    const drop = settings.enabled ? lowerList(settings.excludeRequestHeaders) : [];
    this.dropFromResponse = drop.length > 0 ? Object.freeze(drop) : undefined;
    this.dropFromResponseSet = drop.length > 0 ? new Set(drop) : undefined;
    const echo =
      settings.enabled && settings.removeRequestHeaders ? lowerList(settings.preserveRequestHeaders).filter((n) => !drop.includes(n)) : [];
    this.echo = echo.length > 0 ? new NameSet(echo) : undefined;
  }

  /**
   * The fields for the backend: the client's minus the removed names, plus `add` (flat pairs from earlier
   * phases, e.g. the backend JWT of the authentication phase). Returns undefined when nothing changes (the transport then
   * writes the client's fields as parsed).
   */
  outgoing(headers: readonly string[], add: readonly string[] | undefined): readonly string[] | undefined {
    const rm = this.removeFromRequest;
    let first = -1;
    if (rm.size > 0) {
      for (let i = 0; i < headers.length; i += 2) {
        if (rm.has(headers[i] as string)) {
          first = i;
          break;
        }
      }
    }
    if (first < 0 && (add === undefined || add.length === 0)) return undefined;
    const out: string[] = first < 0 ? headers.slice() : headers.slice(0, first);
    if (first >= 0) {
      for (let i = first + 2; i < headers.length; i += 2) {
        const name = headers[i] as string;
        if (!rm.has(name)) out.push(name, headers[i + 1] as string);
      }
    }
    if (add !== undefined) for (let i = 0; i < add.length; i++) out.push(add[i] as string);
    return out;
  }

  /** Request fields echoed on the gateway's fault answers (removeRequestHeaders + preserveRequestHeaders). */
  echoed(method: string, headers: readonly string[]): readonly string[] {
    const echo = this.echo;
    if (echo === undefined || method === 'OPTIONS') return EMPTY;
    let out: string[] | undefined;
    for (let i = 0; i < headers.length; i += 2) {
      const name = headers[i] as string;
      if (echo.has(name)) (out ??= []).push(name, headers[i + 1] as string);
    }
    return out ?? EMPTY;
  }
}
