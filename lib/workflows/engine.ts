/**
 * The workflow engine (docs/workflows.md): for each gated action, the executor its tenant chose decides
 * whether the action happens now (`simple`), waits for an admin's decision in the admin console or API
 * (`approval`), or is posted to an external engine that answers at the callback endpoint (`external`).
 *
 * The engine owns tasks and decisions only. What a decision does to its entity (a subscription
 * unblocked or rejected, keys created, a tier applied, an API moved) is an effect the entity's owner
 * registers for its type (the key manager for applications, keys and subscriptions, the publisher for
 * API states, the developer portal for sign-ups), so this floor never reaches into theirs.
 *
 * A task records id, type, tenant, requester, time, entity and description; its one decision is kept
 * with who and when (a second is refused: the store's primary key settles a race of two).
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from '../log';
import type { Store, WorkflowTaskRecord } from '../store/types';
import { deliver } from './external';
import type { WorkflowSettings } from './settings';
import {
  type Decision,
  type Executor,
  isExecutor,
  isWorkflowType,
  MAX_COMMENT,
  type TaskView,
  taskView,
  WORKFLOW_TYPES,
  WorkflowError,
  type WorkflowStart,
  type WorkflowType,
} from './types';

/** What a decision does to its entity; registered by the entity's owner for each type. */
export interface WorkflowEffect {
  approved(task: WorkflowTaskRecord): Promise<void>;
  rejected(task: WorkflowTaskRecord, comment: string): Promise<void>;
}

export interface StartRequest {
  readonly type: WorkflowType;
  readonly tenant: string;
  readonly requester: string;
  /** The id of what the task is about (an application id, a subscription id, an API file, a user name). */
  readonly entity: string;
  /** What the approver reads ("Subscription of MyApp to /pizza 1.0.0 on tier Gold"). */
  readonly description: string;
  readonly attributes?: Readonly<Record<string, string>>;
  /** The executor, when the caller looked it up first (to create its entity ON_HOLD); else looked up here. */
  readonly executor?: Executor;
}

export interface DecideRequest {
  readonly status: Decision;
  readonly by: string;
  readonly comment?: string;
  /** A tenant admin's tenant: another tenant's task is not found. */
  readonly tenant?: string;
}

export class Workflows {
  private readonly effects = new Map<WorkflowType, WorkflowEffect>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private closed = false;

  constructor(
    private readonly store: Store,
    private readonly logger: Logger,
    readonly settings: WorkflowSettings,
    /** The callback URL the engine is told (`[apim.workflow] callback_endpoint`, else this management port's). */
    private readonly callbackUrl: () => string,
  ) {}

  /** The effect of the decisions of one type (one owner per type; registering again replaces it). */
  register(type: WorkflowType, effect: WorkflowEffect): void {
    this.effects.set(type, effect);
  }

  /** The executor of a type for a tenant: its choice, else `simple`. */
  async executorOf(tenant: string, type: WorkflowType): Promise<Executor> {
    const chosen = (await this.store.listWorkflowExecutors(tenant)).find((x) => x.type === type)?.executor;
    return isExecutor(chosen) ? chosen : 'simple';
  }

  /** Every type's executor for a tenant. */
  async executors(tenant: string): Promise<Record<WorkflowType, Executor>> {
    const chosen = new Map((await this.store.listWorkflowExecutors(tenant)).map((x) => [x.type, x.executor]));
    return Object.fromEntries(
      WORKFLOW_TYPES.map((t) => {
        const e = chosen.get(t);
        return [t, isExecutor(e) ? e : 'simple'];
      }),
    ) as Record<WorkflowType, Executor>;
  }

  async setExecutor(tenant: string, type: unknown, executor: unknown): Promise<void> {
    if (!isWorkflowType(type)) throw new WorkflowError('WORKFLOW_INPUT', `type must be one of ${WORKFLOW_TYPES.join(', ')}`);
    if (!isExecutor(executor)) throw new WorkflowError('WORKFLOW_INPUT', 'executor must be simple, approval or external');
    if (executor === 'external' && !this.settings.engineEnabled)
      throw new WorkflowError('WORKFLOW_ENGINE_DISABLED', 'the external executor needs [apim.workflow] enable = true and its service_url');
    await this.store.setWorkflowExecutor(tenant, type, executor);
    this.logger.log('info', 'workflow_executor_set', { tenant, type, executor });
  }

  /**
   * Starts a workflow: `approved` when the tenant's executor for the type is `simple` (the caller goes
   * ahead), else `pending` with the task that now waits (the caller leaves its entity ON_HOLD, or does
   * nothing yet). An `external` task is posted to the engine in the background.
   */
  async start(r: StartRequest): Promise<WorkflowStart> {
    const executor = r.executor ?? (await this.executorOf(r.tenant, r.type));
    if (executor === 'simple') return { status: 'approved' };
    const task = await this.store.addWorkflowTask({
      id: randomUUID(),
      type: r.type,
      tenant: r.tenant,
      requester: r.requester,
      entity: r.entity,
      description: r.description,
      attributes: r.attributes ?? {},
      executor,
    });
    this.logger.log('info', 'workflow_task_created', {
      id: task.id,
      type: task.type,
      tenant: task.tenant,
      requester: task.requester,
      executor,
    });
    if (executor === 'external') this.schedule(task.id, 0);
    return { status: 'pending', taskId: task.id };
  }

  /** Tasks, newest first: a tenant's (or all), of one type, waiting or decided. */
  async list(filter: { tenant?: string; type?: string; entity?: string; pending?: boolean } = {}): Promise<TaskView[]> {
    if (filter.type !== undefined && !isWorkflowType(filter.type))
      throw new WorkflowError('WORKFLOW_INPUT', `type must be one of ${WORKFLOW_TYPES.join(', ')}`);
    return (await this.store.listWorkflowTasks(filter)).map(taskView);
  }

  /** A task; another tenant's (when `tenant` is given) is not found. */
  async get(id: string, tenant?: string): Promise<TaskView> {
    return taskView(await this.record(id, tenant));
  }

  private async record(id: string, tenant?: string): Promise<WorkflowTaskRecord> {
    const t = await this.store.getWorkflowTask(id);
    if (t === undefined || (tenant !== undefined && t.tenant !== tenant))
      throw new WorkflowError('WORKFLOW_TASK_NOT_FOUND', `no workflow task ${id}`);
    return t;
  }

  /**
   * Decides a task: the decision is stored (a second one is WORKFLOW_TASK_DECIDED), then its type's
   * effect runs. An effect that fails (its entity deleted since) is logged; the decision stays.
   */
  async decide(id: string, d: DecideRequest): Promise<TaskView> {
    if (d.status !== 'APPROVED' && d.status !== 'REJECTED')
      throw new WorkflowError('WORKFLOW_INPUT', 'status must be APPROVED or REJECTED');
    const comment = d.comment ?? '';
    if ([...comment].length > MAX_COMMENT)
      throw new WorkflowError('WORKFLOW_INPUT', `the comment is longer than ${MAX_COMMENT} characters`);
    const task = await this.record(id, d.tenant);
    if (task.decision !== null)
      throw new WorkflowError('WORKFLOW_TASK_DECIDED', `workflow task ${id} was already ${task.decision.status} by ${task.decision.by}`);
    const effect = this.effects.get(task.type as WorkflowType);
    // A type whose owner is not on this node (API states without its API files, sign-ups without the portal) is decided where it is.
    if (effect === undefined)
      throw new WorkflowError(
        'WORKFLOW_INPUT',
        `${task.type} tasks are decided on a node that serves them (this one has nothing to apply the decision to)`,
      );
    const decision = { status: d.status, by: d.by, at: Date.now(), comment };
    if (!(await this.store.decideWorkflowTask(id, decision)))
      throw new WorkflowError('WORKFLOW_TASK_DECIDED', `workflow task ${id} was already decided`);
    this.cancel(id);
    this.logger.log('info', 'workflow_task_decided', { id, type: task.type, tenant: task.tenant, status: d.status, by: d.by });
    try {
      await (d.status === 'APPROVED' ? effect.approved(task) : effect.rejected(task, comment));
    } catch (err) {
      this.logger.log('error', 'workflow_effect_failed', { id, type: task.type, status: d.status, message: (err as Error).message });
    }
    return taskView({ ...task, decision });
  }

  /**
   * Closes a task whose action did not happen after it was started (the account of a sign-up could not
   * be made): REJECTED by `by` with the reason, kept like any decision, without its type's effect (there
   * is no entity to act on). A task decided already is left as it is.
   */
  async withdraw(id: string, by: string, reason: string): Promise<void> {
    const comment = [...reason].slice(0, MAX_COMMENT).join('');
    if (!(await this.store.decideWorkflowTask(id, { status: 'REJECTED', by, at: Date.now(), comment }))) return;
    this.cancel(id);
    this.logger.log('info', 'workflow_task_withdrawn', { id, by, reason: comment });
  }

  /** Posts an external task again now (after the back-off gave up, or to hurry it). */
  async retry(id: string, tenant?: string): Promise<TaskView> {
    const t = await this.record(id, tenant);
    if (t.executor !== 'external') throw new WorkflowError('WORKFLOW_INPUT', `workflow task ${id} is not an external engine's`);
    if (t.decision !== null) throw new WorkflowError('WORKFLOW_TASK_DECIDED', `workflow task ${id} was already ${t.decision.status}`);
    await this.attempt(id, true);
    return this.get(id);
  }

  /** At start: external tasks the engine has not taken yet are posted again on their back-off. */
  async resume(): Promise<void> {
    const now = Date.now();
    for (const t of await this.store.listWorkflowTasks({ pending: true })) {
      if (t.executor === 'external' && t.deliveredAt === null && t.attempts < this.settings.retry.attempts)
        this.schedule(t.id, Math.max(0, (t.nextAttemptAt ?? now) - now));
    }
  }

  close(): void {
    this.closed = true;
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
  }

  /** Waits until no delivery is scheduled (tests, and a clean shutdown). */
  get scheduled(): number {
    return this.timers.size;
  }

  private schedule(id: string, ms: number): void {
    if (this.closed) return;
    this.cancel(id);
    const timer = setTimeout(() => {
      this.timers.delete(id);
      void this.attempt(id, false).catch((err: unknown) =>
        this.logger.log('error', 'workflow_delivery_failed', { id, message: (err as Error).message }),
      );
    }, ms);
    timer.unref();
    this.timers.set(id, timer);
  }

  private cancel(id: string): void {
    const timer = this.timers.get(id);
    if (timer !== undefined) clearTimeout(timer);
    this.timers.delete(id);
  }

  /** One post to the engine; on failure the error is kept on the task and the next attempt scheduled (bounded). */
  private async attempt(id: string, byHand: boolean): Promise<void> {
    const t = await this.store.getWorkflowTask(id);
    if (t === undefined || t.decision !== null || (t.deliveredAt !== null && !byHand)) return;
    const attempts = t.attempts + 1;
    const error = await deliver(this.settings, t, this.callbackUrl());
    if (error === undefined) {
      await this.store.setWorkflowDelivery(id, { attempts, lastError: '', nextAttemptAt: null, deliveredAt: Date.now() });
      this.logger.log('info', 'workflow_task_delivered', { id, type: t.type, attempts });
      return;
    }
    const r = this.settings.retry;
    const more = attempts < r.attempts;
    const wait = Math.min(r.maxMs, r.firstMs * 2 ** (attempts - 1));
    await this.store.setWorkflowDelivery(id, {
      attempts,
      lastError: error,
      nextAttemptAt: more ? Date.now() + wait : null,
      deliveredAt: null,
    });
    this.logger.log(more ? 'warn' : 'error', 'workflow_engine_unreachable', {
      id,
      type: t.type,
      attempts,
      error,
      message: more
        ? `retried in ${wait} ms`
        : `gave up after ${attempts} attempts: the task waits; POST /admin/v1/tasks/${id}/retry posts it again`,
    });
    if (more) this.schedule(id, wait);
  }
}

/**
 * Starts a workflow for an action whose entity needs nothing ON_HOLD (a user's self sign-up: the portal
 * creates the account once it is approved, from the effect it registers for AM_USER_SIGNUP).
 */
export function startWorkflow(
  engine: Workflows,
  type: WorkflowType,
  tenant: string,
  entity: string,
  o: { requester: string; description: string; attributes?: Readonly<Record<string, string>> },
): Promise<WorkflowStart> {
  return engine.start({
    type,
    tenant,
    entity,
    requester: o.requester,
    description: o.description,
    ...(o.attributes !== undefined ? { attributes: o.attributes } : {}),
  });
}
