/**
 * Which outbound HTTP proxy, if any, stands between throughway and a backend host (spec 001, "Proxy
 * profiles" and sender.http.proxyHost). Decided once per endpoint URL (targetFromUrl), never per request.
 *
 * Order: a proxy profile whose target hosts match (option 1, the proxyProfiles XML of
 * [transport.passthru_http(s).sender.parameters]; option 2, [[transport.http.proxy_profile]] for
 * `http://` and [[transport.http.secured_proxy_profile]] for `https://`), unless the host is one of that
 * profile's bypass hosts; otherwise sender.http.proxyHost/proxyPort of the listener section of the
 * endpoint's scheme, unless the host matches sender.http.nonProxyHosts. docs/tls.md.
 */
import type * as Xml from 'fast-xml-parser';
import { load } from '../config/packages';

/** fast-xml-parser, loaded when the first XML is read (lib/config/packages.ts). */
const xmlLib = (): typeof Xml => load<typeof Xml>('fast-xml-parser', 'an SSL profiles XML file');
import type { DeploymentConfig } from '../config/deployment-config.generated';
import type { ProxyRoute } from '../transport/outbound';

/** Matches a host against profile target or bypass hosts: "*", a host, an IP, or a regular expression. */
export type HostMatcher = (host: string) => boolean;

export function hostList(entries: readonly string[]): HostMatcher {
  const exact = new Set<string>();
  const patterns: RegExp[] = [];
  let all = false;
  for (const raw of entries) {
    const e = raw.trim().toLowerCase();
    if (e === '') continue;
    if (e === '*') {
      all = true;
      continue;
    }
    exact.add(e);
    try {
      patterns.push(new RegExp(`^(?:${e})$`, 'i'));
    } catch {
      // Not a regular expression: the exact name only.
    }
  }
  return (host) => all || exact.has(host.toLowerCase()) || patterns.some((p) => p.test(host));
}

/**
 * sender.http.nonProxyHosts: names separated by "|" (or ","), where "*" is a wildcard; the spec writes a
 * sub-domain wildcard with a period before the asterisk, ".*.example.com", and "*.example.com" means the
 * same. Either matches every sub-domain of example.com, not example.com itself.
 */
export function nonProxyHosts(value: string): HostMatcher {
  const patterns: RegExp[] = [];
  for (const raw of value.split(/[|,]/)) {
    let e = raw.trim().toLowerCase();
    if (e === '') continue;
    if (e.startsWith('.*')) e = e.slice(1);
    const re = e
      .split('*')
      .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*');
    patterns.push(new RegExp(`^${re}$`, 'i'));
  }
  return (host) => patterns.some((p) => p.test(host));
}

interface ProfileRule {
  readonly targets: HostMatcher;
  readonly bypass: HostMatcher;
  readonly route: ProxyRoute;
}

function basic(user: string | undefined, password: string | undefined): string | undefined {
  if (user === undefined || user === '') return undefined;
  return 'Basic ' + Buffer.from(`${user}:${password ?? ''}`).toString('base64');
}

function route(host: string, port: number, user?: string, password?: string): ProxyRoute {
  return Object.freeze({ host, port, authorization: basic(user, password) });
}

/** Option 1: the reference's <profiles><profile><targetHosts>... XML in proxyProfiles. */
export function parseProxyProfiles(xml: string): ProfileRule[] {
  const doc = new (xmlLib().XMLParser)({ parseTagValue: false, trimValues: true }).parse(xml) as { profiles?: { profile?: unknown } };
  const list = doc.profiles?.profile;
  const profiles = (Array.isArray(list) ? list : list === undefined ? [] : [list]) as Record<string, string | undefined>[];
  return profiles
    .filter((p) => p.proxyHost !== undefined && p.proxyPort !== undefined)
    .map((p) => ({
      targets: hostList((p.targetHosts ?? '*').split(',')),
      bypass: hostList((p.bypass ?? '').split(',')),
      route: route(p.proxyHost as string, Number(p.proxyPort), p.proxyUserName, p.proxyPassword),
    }));
}

type ProfileSection = DeploymentConfig['transport']['http']['proxy_profile'][number];

function option2(list: readonly ProfileSection[]): ProfileRule[] {
  return list
    .filter((p) => p.proxy_host !== undefined && p.proxy_port !== undefined)
    .map((p) => ({
      targets: hostList(p.target_hosts ?? ['*']),
      bypass: hostList(p.bypass_hosts ?? []),
      route: route(p.proxy_host as string, Number(p.proxy_port), p.proxy_username, p.proxy_password),
    }));
}

/** The selector for a configuration, or undefined when no proxy is configured at all. */
export function proxySelector(config: DeploymentConfig): ((host: string, secure: boolean) => ProxyRoute | undefined) | undefined {
  const t = config.transport;
  const rules = {
    plain: [...parseProxyProfiles(t.passthru_http.sender.parameters.proxyProfiles ?? ''), ...option2(t.http.proxy_profile)],
    secure: [...parseProxyProfiles(t.passthru_https.sender.parameters.proxyProfiles ?? ''), ...option2(t.http.secured_proxy_profile)],
  };
  const global = (h: { readonly proxyHost?: string; readonly proxyPort?: number; readonly nonProxyHosts: string }) =>
    h.proxyHost !== undefined && h.proxyHost !== '' && h.proxyPort !== undefined
      ? { route: route(h.proxyHost, h.proxyPort), direct: nonProxyHosts(h.nonProxyHosts) }
      : undefined;
  const plainGlobal = global(t.passthru_http.sender.http);
  const secureGlobal = global(t.passthru_https.sender.http);
  if (rules.plain.length === 0 && rules.secure.length === 0 && plainGlobal === undefined && secureGlobal === undefined) return undefined;
  return (host, secure) => {
    for (const r of secure ? rules.secure : rules.plain) {
      if (!r.targets(host)) continue;
      return r.bypass(host) ? undefined : r.route;
    }
    const g = secure ? secureGlobal : plainGlobal;
    if (g === undefined || g.direct(host)) return undefined;
    return g.route;
  };
}
