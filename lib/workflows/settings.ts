/**
 * What workflows read of `[apim.workflow]` (spec 000): whether an external engine may be used, where it
 * is and with which credentials it is called, and the credentials its callback may present
 * (docs/workflows.md, "The external engine").
 */
import type { DeploymentConfig } from '../config/deployment-config.generated';

export interface WorkflowSettings {
  /** `enable`: the `external` executor may be chosen (a tenant choosing it otherwise is refused). */
  readonly engineEnabled: boolean;
  /** `service_url`: where a task of the `external` executor is posted. */
  readonly serviceUrl: string;
  /** `username` / `password`: HTTP Basic on that post. */
  readonly engineUser: string;
  readonly enginePassword: string;
  /** `wf_engine_user` / `wf_engine_pass`: HTTP Basic the engine's callback may present. */
  readonly callbackUser: string;
  readonly callbackPassword: string;
  /** `client_registration_username`: an access token of this user (its registered client's) is accepted on the callback. */
  readonly callbackTokenUser: string;
  /** `callback_endpoint`, when written: the URL the engine is told to call back; else the management port's. */
  readonly callbackUrl: string | undefined;
  /** Back-off of an engine that does not take a task: first wait, cap, and how many attempts in all. */
  readonly retry: { readonly firstMs: number; readonly maxMs: number; readonly attempts: number };
  /** How long one post to the engine may take. */
  readonly timeoutMs: number;
}

/** Back-off: 1 s, doubling, at most 60 s between attempts, 10 attempts (about 6 minutes), then the task waits for a retry by hand. */
export const DEFAULT_RETRY = Object.freeze({ firstMs: 1000, maxMs: 60_000, attempts: 10 });

export function workflowSettings(config: DeploymentConfig): WorkflowSettings {
  const w = config.apim.workflow;
  return {
    engineEnabled: w.enable,
    serviceUrl: w.service_url,
    engineUser: w.username,
    enginePassword: w.password,
    callbackUser: w.wf_engine_user,
    callbackPassword: w.wf_engine_pass,
    callbackTokenUser: w.client_registration_username,
    callbackUrl: w.callback_endpoint,
    retry: DEFAULT_RETRY,
    timeoutMs: 10_000,
  };
}
