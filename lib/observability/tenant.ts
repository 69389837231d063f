/**
 * The tenant of a finished call, as the access log, analytics events and traces carry it (docs/tenants.md,
 * "Observability"): the tenant of the API that matched (`carbon.super` for the super tenant's); for a
 * `/t/<domain>/...` call no API answered, that domain when it is a tenant (a deactivated one included),
 * undefined when it is none (an unknown tenant is nobody's); any other call the super tenant's.
 */
import type { CallContext } from '../gateway/phases';
import { SUPER_TENANT, tenantDomainOf } from '../tenants';

export function callTenant(ctx: CallContext | undefined, url: string): string | undefined {
  const api = ctx?.api;
  if (api !== undefined) return api.tenant ?? SUPER_TENANT;
  // The route phase's path (the query cut, an absolute-form target made a path); the raw target before it ran.
  const path = ctx !== undefined && ctx.path !== '' ? ctx.path : url;
  const domain = tenantDomainOf(path);
  if (domain === undefined) return SUPER_TENANT;
  return ctx?.rt.tenants?.state(domain) !== undefined ? domain : undefined;
}
