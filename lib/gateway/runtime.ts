/**
 * One deployed state of the gateway: the route table and the settings the phases read, immutable once
 * built. A hot deploy builds a new runtime and swaps one reference; calls already in the chain keep the
 * runtime they started with, so nothing changes under an in-flight request.
 */
import type { SourceRequest } from '../transport/types';
import type { ApiDefinition } from './apis';
import type { CorsPolicy } from './cors';
import type { EndpointRegistry, EndpointRuntime } from './endpoints';
import type { FaultTemplates } from '../faults/templates';
import { compileApi, RouteTable, type CompiledApi } from './router';
import type { HeaderRules } from './transport-headers';
import type { Security } from '../security';
import type { Throttle } from '../throttle';
import type { Mediation } from '../mediation';
import type { TenantDirectory } from '../tenants';

export interface Deployable {
  readonly api: ApiDefinition;
  /** Default-version routing granted (a second default version of one context is refused). */
  readonly withDefault: boolean;
  /** [apim.cors] with the API's override applied (checked when it was selected). */
  readonly cors: CorsPolicy;
}

export class GatewayRuntime {
  constructor(
    readonly table: RouteTable,
    /** [apim.cors]: the policy of calls that match no API. */
    readonly cors: CorsPolicy,
    readonly headers: HeaderRules,
    readonly templates: FaultTemplates | undefined,
    /** Calls in flight to suspending endpoints, so a transport fault can reach its endpoint. */
    private readonly tracked: WeakMap<SourceRequest, EndpointRuntime>,
    /** Token validation, subscriptions, backend JWT (lib/security), asked by the authentication phase; undefined: nothing is trusted. */
    readonly security?: Security,
    /** Throttling (lib/throttle), asked by the throttling phase: one per gateway, shared by every runtime it deploys; undefined: none. */
    readonly throttle?: Throttle,
    /** Payload validation, scripts and conversion (lib/mediation), asked by the mediation phase; undefined: the phase continues at once. */
    readonly mediation?: Mediation,
    /** Whether a tenant exists and is active (lib/tenants), asked by the route phase on /t/ paths only; undefined: no tenant exists. */
    readonly tenants?: TenantDirectory,
  ) {}

  track(req: SourceRequest, ep: EndpointRuntime): void {
    this.tracked.set(req, ep);
  }
}

/** Compiles deployable APIs into a route table; endpoint runtimes come from (and are kept by) `registry`. */
export function buildTable(list: readonly Deployable[], registry: EndpointRegistry): RouteTable {
  const used = new Set<EndpointRuntime>();
  const compiled: CompiledApi[] = [];
  for (const { api, withDefault, cors } of list) {
    const id = `${api.name}:${api.version}`;
    const production = api.endpoints.production !== undefined ? registry.runtime(`${id}:production`, api.endpoints.production) : undefined;
    const sandbox = api.endpoints.sandbox !== undefined ? registry.runtime(`${id}:sandbox`, api.endpoints.sandbox) : undefined;
    if (production !== undefined) used.add(production);
    if (sandbox !== undefined) used.add(sandbox);
    compiled.push(compileApi(api, { cors, production, sandbox, withDefault }));
  }
  registry.retain(used);
  return new RouteTable(compiled);
}
