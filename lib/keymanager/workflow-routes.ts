/**
 * The external workflow engine's callback on the management ports (docs/workflows.md, "The external
 * engine"): `POST /api/am/publisher/<version>/workflows/update-workflow-status?workflowReferenceId=<task>`
 * with `{"status": "APPROVED" | "REJECTED", "attributes": {...}, "description": "..."}`, the path of
 * `[apim.workflow] callback_endpoint` (spec 000).
 *
 * Authenticated (401 otherwise) by either
 *   - a bearer access token of this key manager whose subject is `[apim.workflow]
 *     client_registration_username` or an admin of the super tenant (the engine registers a client with
 *     those credentials at the registration endpoint and takes a token at `token_endpoint`), or
 *   - HTTP Basic `[apim.workflow] wf_engine_user` / `wf_engine_pass`, or a super tenant admin's.
 * An unknown reference answers 404, a task already decided 409 (WorkflowError codes, errorAnswer in http.ts).
 */
import type * as http from 'node:http';
import { digest, verifyDigest } from '../store/passwords';
import { SUPER_TENANT } from '../tenants';
import { WorkflowError, type Workflows } from '../workflows';
import { parseBasic } from './client-auth';
import { OAuthError } from './errors';
import { readJson, requireSuperAdmin, sendJson, type RouteContext } from './route-context';

/** The callback path this key manager tells the engine (the reference's publisher API version 4). */
export const CALLBACK_PATH = '/api/am/publisher/v4/workflows/update-workflow-status';

/** Any publisher API version the reference has had (v1 ... v4, and dotted ones). */
export const CALLBACK_ROUTE = /^\/api\/am\/publisher\/v\d+(?:\.\d+)*\/workflows\/update-workflow-status$/;

const CHALLENGE = {
  status: 401,
  headers: { 'WWW-Authenticate': 'Bearer realm="throughway workflows", Basic realm="throughway workflows", charset="UTF-8"' },
};

const same = (given: string, expected: string): boolean => verifyDigest(given, digest(expected));

/** Who calls back: the engine's user name as the decision records it; 401 for anyone else. */
async function caller(ctx: RouteContext, w: Workflows, req: http.IncomingMessage): Promise<string> {
  const auth = req.headers.authorization ?? '';
  const bearer = /^Bearer\s+([A-Za-z0-9._~+/=-]+)\s*$/i.exec(auth);
  if (bearer !== null) {
    const claims = await ctx.oauth.verifyAccessToken(bearer[1] ?? '');
    const sub = typeof claims?.sub === 'string' ? claims.sub : undefined;
    if (sub !== undefined) {
      if (sub === w.settings.callbackTokenUser) return sub;
      const u = await ctx.store.getUser(sub);
      if (u !== undefined && u.tenant === SUPER_TENANT && u.roles.includes('admin')) return sub;
    }
    throw new OAuthError('invalid_token', 'the access token is not valid for the workflow callback', CHALLENGE);
  }
  const basic = parseBasic(auth);
  if (basic === undefined)
    throw new OAuthError('invalid_client', 'the workflow callback needs a bearer token or HTTP Basic credentials', CHALLENGE);
  const s = w.settings;
  if (same(basic.user, s.callbackUser) && same(basic.password, s.callbackPassword)) return basic.user;
  try {
    return await requireSuperAdmin(ctx, req);
  } catch (err) {
    if (err instanceof OAuthError && err.status === 403) throw new OAuthError('invalid_client', err.message, CHALLENGE);
    throw err instanceof OAuthError ? new OAuthError(err.error, err.message, CHALLENGE) : err;
  }
}

export async function handleWorkflowCallback(
  ctx: RouteContext,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  url: URL,
): Promise<void> {
  if (req.method !== 'POST')
    throw new OAuthError('invalid_request', 'the workflow callback takes POST', { status: 405, headers: { Allow: 'POST' } });
  const w = ctx.workflows;
  if (w === undefined) throw new OAuthError('not_found', 'this key manager runs no workflows');
  const by = await caller(ctx, w, req);
  const b = await readJson(req);
  const id = url.searchParams.get('workflowReferenceId') ?? (typeof b.workflowReferenceId === 'string' ? b.workflowReferenceId : undefined);
  if (id === undefined || id === '') throw new OAuthError('invalid_request', 'workflowReferenceId is required (query parameter)');
  if (b.status !== 'APPROVED' && b.status !== 'REJECTED') throw new OAuthError('invalid_request', 'status must be APPROVED or REJECTED');
  if (b.description !== undefined && typeof b.description !== 'string')
    throw new OAuthError('invalid_request', 'description must be a string');
  const task = await w.decide(id, { status: b.status, by, comment: typeof b.description === 'string' ? b.description : '' });
  ctx.logger.log('info', 'workflow_callback', { id, status: b.status, by });
  sendJson(res, 200, task);
}

/** A workflow error as the management server answers it: 404, 409 or 400 with its code. */
export function workflowRefusal(err: WorkflowError): OAuthError {
  const error =
    err.code === 'WORKFLOW_TASK_NOT_FOUND' ? 'not_found' : err.code === 'WORKFLOW_TASK_DECIDED' ? 'conflict' : 'invalid_request';
  return new OAuthError(error, `${err.code}: ${err.message}`);
}
