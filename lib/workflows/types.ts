/**
 * The workflow vocabulary (docs/workflows.md): the reference's workflow types, the three executors a
 * tenant chooses from for each, a task as the admin API and the admin console show it, and the error codes.
 */
import type { WorkflowDecisionRecord, WorkflowTaskRecord } from '../store/types';
import { ThroughwayError } from '../errors';

/**
 * The reference's workflow type names (its workflow extensions, one per gated action). Registration is
 * one type per key type: production and sandbox keys are approved apart.
 */
export const WORKFLOW_TYPES = [
  'AM_APPLICATION_CREATION',
  'AM_APPLICATION_REGISTRATION_PRODUCTION',
  'AM_APPLICATION_REGISTRATION_SANDBOX',
  'AM_SUBSCRIPTION_CREATION',
  'AM_SUBSCRIPTION_UPDATE',
  'AM_SUBSCRIPTION_DELETION',
  'AM_API_STATE',
  'AM_USER_SIGNUP',
] as const;
export type WorkflowType = (typeof WORKFLOW_TYPES)[number];

export const isWorkflowType = (v: unknown): v is WorkflowType => typeof v === 'string' && (WORKFLOW_TYPES as readonly string[]).includes(v);

/**
 * `simple`: approved at once (what happens without workflows, the default); `approval`: a task waits in
 * the admin console; `external`: the task is posted to `[apim.workflow] service_url`, which answers later
 * at the callback endpoint.
 */
export const EXECUTORS = ['simple', 'approval', 'external'] as const;
export type Executor = (typeof EXECUTORS)[number];

export const isExecutor = (v: unknown): v is Executor => typeof v === 'string' && (EXECUTORS as readonly string[]).includes(v);

/** The decisions a task takes (the callback's `status`). */
export const DECISIONS = ['APPROVED', 'REJECTED'] as const;
export type Decision = WorkflowDecisionRecord['status'];

/** What starting a workflow answers: go ahead now, or wait for the task's decision. */
export type WorkflowStart = { readonly status: 'approved' } | { readonly status: 'pending'; readonly taskId: string };

/** A task's state, read from its record: waiting (and, external, whether the engine has it), or decided. */
export type TaskState = 'CREATED' | Decision;

/** A task as the admin API answers it: its record, with its state and (external executor) its delivery in one field. */
export interface TaskView extends Omit<WorkflowTaskRecord, 'type' | 'deliveredAt' | 'attempts' | 'lastError' | 'nextAttemptAt'> {
  readonly type: WorkflowType;
  /** CREATED while it waits (the reference's name), then APPROVED or REJECTED. */
  readonly status: TaskState;
  /** External executor: delivered to the engine (time), attempts, and the last error while it is not. */
  readonly delivery: Pick<WorkflowTaskRecord, 'deliveredAt' | 'attempts' | 'lastError' | 'nextAttemptAt'> | null;
}

export function taskView(t: WorkflowTaskRecord): TaskView {
  return {
    id: t.id,
    type: t.type as WorkflowType,
    tenant: t.tenant,
    requester: t.requester,
    entity: t.entity,
    description: t.description,
    attributes: t.attributes,
    executor: t.executor,
    createdAt: t.createdAt,
    status: t.decision?.status ?? 'CREATED',
    delivery:
      t.executor === 'external'
        ? { deliveredAt: t.deliveredAt, attempts: t.attempts, lastError: t.lastError, nextAttemptAt: t.nextAttemptAt }
        : null,
    decision: t.decision,
  };
}

/** Error codes of workflows (docs/workflows.md, "Errors"). */
export type WorkflowErrorCode = 'WORKFLOW_TASK_NOT_FOUND' | 'WORKFLOW_TASK_DECIDED' | 'WORKFLOW_INPUT' | 'WORKFLOW_ENGINE_DISABLED';

export class WorkflowError extends ThroughwayError {
  readonly code: WorkflowErrorCode;
  constructor(code: WorkflowErrorCode, message: string) {
    super(message);
    this.name = 'WorkflowError';
    this.code = code;
  }
}

/** Longest approver comment, in characters (kept in a TEXT column; shown to the requester). */
export const MAX_COMMENT = 1000;
