/**
 * The route phase: the API and resource of a call (404 / 405 / 900906), from the route table of the
 * call's runtime (router.ts). Targets with dot segments are refused. On a GraphQL API the operation of
 * the query is found too (../graphql-api.ts): synchronous for GET, a Promise while a POST body is gathered.
 */
import { ApiCode, GatewayOwnCode, fault, type FaultValue } from '../../faults';
import { Match, matchResource, methodsFor } from '../router';
import { CONTINUE, stop, type CallContext, type Outcome } from './context';
import { graphqlQuery } from '../graphql-api';

/** Index where the path of an absolute-form target starts (RFC 9112 §3.2.2), or -1. */
function absolutePathStart(url: string): number {
  const scheme = url.startsWith('http://') ? 7 : url.startsWith('https://') ? 8 : -1;
  if (scheme < 0) return -1;
  const slash = url.indexOf('/', scheme);
  return slash < 0 ? url.length : slash;
}

/**
 * A dot segment ('.' or '..', also percent-encoded) would let a backend that normalises paths resolve the
 * call outside the endpoint's base path (RFC 3986 §5.2.4): such targets are refused, not normalised.
 */
export function hasDotSegment(path: string): boolean {
  let i = path.indexOf('/.');
  while (i >= 0) {
    const a = path.charCodeAt(i + 2);
    if (Number.isNaN(a) || a === 47) return true; // "/." then end or "/"
    if (a === 46) {
      const b = path.charCodeAt(i + 3);
      if (Number.isNaN(b) || b === 47) return true; // "/.." then end or "/"
    }
    i = path.indexOf('/.', i + 2);
  }
  if (path.indexOf('%2') >= 0) {
    const lower = path.toLowerCase();
    if (lower.includes('%2e')) {
      const decoded = lower.replace(/%2e/g, '.');
      if (decoded !== lower) return hasDotSegment(decoded);
    }
  }
  return false;
}

/**
 * A call to /t/<domain>/... (docs/tenants.md) that no active tenant's API answers: 103010 for a domain that
 * is no tenant, 103011 for a deactivated tenant, else 103005 (the tenant has no API there).
 */
function tenantFault(ctx: CallContext, path: string): FaultValue {
  const end = path.indexOf('/', 3);
  const domain = end < 0 ? path.slice(3) : path.slice(3, end);
  const tenants = ctx.rt.tenants;
  const state = tenants?.state(domain);
  if (state === undefined) return fault(GatewayOwnCode.TENANT_UNKNOWN, { description: `no tenant ${domain.slice(0, 253)}` });
  tenants?.countCall?.(domain);
  if (state === 'inactive') return fault(GatewayOwnCode.TENANT_INACTIVE, { description: `tenant ${domain} is deactivated` });
  return fault(GatewayOwnCode.API_NOT_FOUND);
}

export function routePhase(ctx: CallContext): Outcome | Promise<Outcome> {
  let url = ctx.req.url;
  if (url.charCodeAt(0) !== 47) {
    const start = absolutePathStart(url);
    if (start < 0) return stop(fault(GatewayOwnCode.INVALID_PATH));
    url = start === url.length ? '/' : url.slice(start);
  }
  // One pass finds the query and whether the path holds a '/.' or a '%', without which it cannot hold a dot
  // segment, plain or percent-encoded. Three indexOf() calls ('?', '/.', '%2') counted about 0.16k
  // instructions per call more than this loop (callgrind; docs/performance.md, "Counting instructions").
  // A '.' after another character (the version of /bench/1.0.0/small) is no reason to look: hasDotSegment's
  // two indexOf() calls cost about 480 instructions per call there (docs/performance.md, "The deployed
  // node's request path").
  let q = -1;
  let suspect = false;
  for (let i = 0, prev = 0; i < url.length; i++) {
    const c = url.charCodeAt(i);
    if (c === 63) {
      q = i;
      break;
    }
    if ((c === 46 && prev === 47) || c === 37) suspect = true;
    prev = c;
  }
  const path = q < 0 ? url : url.slice(0, q);
  ctx.path = path;
  ctx.query = q < 0 ? '' : url.slice(q);
  if (suspect && hasDotSegment(path)) return stop(fault(GatewayOwnCode.INVALID_PATH));
  const entry = ctx.rt.table.lookup(path);
  if (entry === undefined) return stop(path.startsWith('/t/') ? tenantFault(ctx, path) : fault(GatewayOwnCode.API_NOT_FOUND));
  const api = entry.api;
  if (api.tenant !== undefined) {
    const tenants = ctx.rt.tenants;
    if (tenants?.state(api.tenant) !== 'active') return stop(tenantFault(ctx, path));
    tenants.countCall?.(api.tenant);
    const spent = tenants.overBandwidth?.(api.tenant);
    if (spent !== undefined) return stop(fault(GatewayOwnCode.TENANT_BANDWIDTH, { description: spent }));
  }
  ctx.api = api;
  ctx.rest = path.length === entry.path.length ? '' : path.slice(entry.path.length);
  const method = ctx.req.method;
  switch (matchResource(api, ctx.rest, method, ctx)) {
    case Match.OK:
      // A GraphQL API's resources are its operations: the query says which (docs/graphql.md).
      return api.def.graphql === undefined ? CONTINUE : graphqlQuery(ctx, api.def.graphql);
    case Match.METHOD:
      if (method === 'OPTIONS') {
        // Answered by the CORS phase (preflight) or with the Allow list: OPTIONS asks what is allowed.
        ctx.pathMethods = methodsFor(api, ctx.rest);
        return CONTINUE;
      }
      return stop(fault(GatewayOwnCode.METHOD_NOT_ALLOWED, { allow: methodsFor(api, ctx.rest).join(', ') }));
    default:
      return stop(fault(ApiCode.NO_MATCHING_RESOURCE));
  }
}
