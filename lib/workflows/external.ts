/**
 * The post of a task to the external engine (docs/workflows.md, "The external engine"): JSON to
 * `[apim.workflow] service_url` with HTTP Basic `username` / `password`; a 2xx answer means the engine
 * took it. Anything else is the error kept on the task (never the credentials).
 */
import type { WorkflowTaskRecord } from '../store/types';
import type { WorkflowSettings } from './settings';

/** The request body the engine receives. */
export function engineRequest(t: WorkflowTaskRecord, callbackUrl: string): Record<string, unknown> {
  return {
    workflowReferenceId: t.id,
    workflowType: t.type,
    tenantDomain: t.tenant,
    requester: t.requester,
    entity: t.entity,
    description: t.description,
    attributes: t.attributes,
    createdTime: t.createdAt,
    callbackUrl,
  };
}

/** Undefined when the engine took the task; else why not (a line for the task and the log). */
export async function deliver(s: WorkflowSettings, t: WorkflowTaskRecord, callbackUrl: string): Promise<string | undefined> {
  const body = JSON.stringify(engineRequest(t, callbackUrl));
  try {
    const res = await fetch(s.serviceUrl, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Authorization: `Basic ${Buffer.from(`${s.engineUser}:${s.enginePassword}`).toString('base64')}`,
      },
      body,
      signal: AbortSignal.timeout(s.timeoutMs),
      redirect: 'manual',
    });
    // The answer's body is not needed: read and drop it so the connection is released.
    await res.arrayBuffer().catch(() => undefined);
    return res.status >= 200 && res.status < 300 ? undefined : `the engine answered ${res.status}`;
  } catch (err) {
    const cause = (err as { cause?: { code?: unknown; message?: unknown } }).cause;
    const why = typeof cause?.code === 'string' ? cause.code : typeof cause?.message === 'string' ? cause.message : (err as Error).message;
    return `the engine could not be reached: ${why}`;
  }
}
