/**
 * `throughway apis list`: what the gateway deploys from the apis/ directory with this configuration,
 * computed the way a starting gateway does (validation against the throttling policies file's names,
 * gateway labels, duplicate contexts, default versions), without starting one. Each file's diagnostics
 * follow its line; a deployed API's URLs in each [[apim.gateway.environment]] follow its resources.
 */
import * as path from 'node:path';
import type { LoadResult } from '../config/load';
import { defaultPath, versionedPath } from './apis';
import { CorsPolicy } from './cors';
import { ApiDirectory, selectApis, type ApiState } from './deploy';
import { formatApiDiagnostic } from './diagnostics';
import { gatewaySettingsFrom } from './settings';
import { gatewayEnvironments, type GatewayEnvironment } from './environments';
import { formatPolicyDiagnostic, loadPolicies, policyNames, type PolicyDiagnostic } from '../throttle/policies';
import { policyOptionsOf, throttleSettingsFrom } from '../throttle/settings';

export interface ApiListing {
  readonly dir: string;
  readonly missing: boolean;
  readonly states: readonly ApiState[];
  readonly errors: number;
  /** The throttling policies file's problems: with an error in it, a node does not start and nothing is deployed. */
  readonly policyDiagnostics: readonly PolicyDiagnostic[];
  /** [[apim.gateway.environment]] as written (none: no URLs are printed, only paths). */
  readonly environments: readonly GatewayEnvironment[];
}

/** A deployed API's URLs in each configured environment: HTTP and HTTPS addresses with its versioned path. */
function environmentUrls(envs: readonly GatewayEnvironment[], path: string): { readonly name: string; readonly urls: readonly string[] }[] {
  return envs.map((e) => ({ name: e.name, urls: [e.http, e.https].filter((u) => u !== undefined).map((u) => `${u}${path}`) }));
}

export function listApis(loaded: LoadResult): ApiListing {
  const settings = gatewaySettingsFrom(loaded.config, loaded.dir, loaded.ports);
  // The names a starting gateway validates `policy` and `unauthenticated_policy` against (gateway/assembly.ts).
  const ts = throttleSettingsFrom(loaded.config, loaded.dir);
  const pol = loadPolicies(ts.policiesFile, policyOptionsOf(ts));
  const policyErrors = pol.diagnostics.filter((d) => d.level === 'error').length;
  const dir = new ApiDirectory(
    settings.apisDir,
    settings.vars,
    pol.policies !== undefined ? policyNames(pol.policies) : undefined,
    settings.scriptDirs,
  );
  const read = dir.read();
  const states = selectApis(read.candidates, settings.gatewayLabels, new CorsPolicy(settings.cors)).states;
  const errors = policyErrors + states.reduce((n, s) => n + s.diagnostics.filter((d) => d.level === 'error').length, 0);
  const environments = gatewayEnvironments(loaded.config, loaded.ports).filter((e) => e.configured);
  return {
    dir: settings.apisDir,
    missing: read.missing,
    states,
    errors,
    policyDiagnostics: pol.diagnostics.filter((d) => d.level !== 'info'),
    environments,
  };
}

/** The listing as text: one line per file, its diagnostics indented under it. */
export function formatApiListing(listing: ApiListing, cwd: string, json: boolean): string {
  const rel = (f: string): string => (f === '' ? '<api>' : path.relative(cwd, f) || f);
  if (json) {
    return `${JSON.stringify(
      listing.states.map((s) => ({
        file: rel(s.file),
        status: s.status,
        name: s.api?.name,
        version: s.api?.version,
        path: s.api !== undefined ? versionedPath(s.api) : undefined,
        defaultPath: s.api !== undefined && s.defaultRouting ? defaultPath(s.api) : undefined,
        state: s.api?.state,
        labels: s.api?.labels,
        endpoints: s.api !== undefined ? { production: s.api.endpoints.production?.url, sandbox: s.api.endpoints.sandbox?.url } : undefined,
        resources: s.api?.resources.map((r) => `${r.methods.join(',')} ${r.path}`),
        ...(s.api !== undefined && listing.environments.length > 0
          ? { environments: environmentUrls(listing.environments, versionedPath(s.api)) }
          : {}),
        diagnostics: s.diagnostics.map((d) => ({ ...d, file: rel(d.file) })),
      })),
      null,
      2,
    )}\n`;
  }
  const lines: string[] = [];
  for (const d of listing.policyDiagnostics) lines.push(formatPolicyDiagnostic({ ...d, file: rel(d.file) }));
  if (listing.missing) lines.push(`${rel(listing.dir)}: no such directory: no API is deployed`);
  else if (listing.states.length === 0) lines.push(`${rel(listing.dir)}: no API definition files (*.toml)`);
  for (const s of listing.states) {
    const a = s.api;
    const head =
      a === undefined
        ? `${s.status.padEnd(13)} ${rel(s.file)}`
        : `${s.status.padEnd(13)} ${a.name} ${a.version}  ${versionedPath(a)}${s.defaultRouting ? ` (default: ${defaultPath(a)})` : ''}  ${a.state}  ${rel(s.file)}`;
    lines.push(head);
    if (a !== undefined && (s.status === 'deployed' || s.status === 'kept-previous')) {
      for (const [kind, ep] of [
        ['production', a.endpoints.production],
        ['sandbox', a.endpoints.sandbox],
      ] as const) {
        if (ep !== undefined) lines.push(`    ${kind}: ${ep.url}`);
      }
      for (const r of a.resources) lines.push(`    ${r.methods.join(',').padEnd(12)} ${r.path}`);
      for (const e of environmentUrls(listing.environments, versionedPath(a))) lines.push(`    ${e.name}: ${e.urls.join(', ')}`);
    }
    for (const d of s.diagnostics) lines.push(`    ${formatApiDiagnostic({ ...d, file: rel(d.file) })}`);
  }
  const deployed = listing.states.filter((s) => s.status === 'deployed' || s.status === 'kept-previous').length;
  lines.push(`${deployed} deployed, ${listing.states.length - deployed} not deployed`);
  return `${lines.join('\n')}\n`;
}
