/**
 * Approval workflows (docs/workflows.md): a control-plane service. The gateway never sees it, only the
 * states it leaves (an ON_HOLD subscription is a refused one).
 */
export { startWorkflow, Workflows, type DecideRequest, type StartRequest, type WorkflowEffect } from './engine';
export { workflowSettings, type WorkflowSettings } from './settings';
export {
  DECISIONS,
  EXECUTORS,
  isExecutor,
  isWorkflowType,
  MAX_COMMENT,
  taskView,
  WORKFLOW_TYPES,
  WorkflowError,
  type Decision,
  type Executor,
  type TaskView,
  type WorkflowErrorCode,
  type WorkflowStart,
  type WorkflowType,
} from './types';
