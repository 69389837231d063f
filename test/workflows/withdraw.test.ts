/**
 * Workflows.withdraw (lib/workflows/engine.ts): a waiting task whose entity could not be made is closed
 * REJECTED by the withdrawer with the reason as its comment, without its type's effect, and logged
 * `workflow_task_withdrawn`; a task decided already is left as it was.
 */
import t from 'tap';
import { startNode } from './helpers';

t.test('withdraw closes a waiting task without its effect; a decided one is kept', async (t) => {
  const n = await startNode();
  t.teardown(() => n.close());
  const wf = n.km.workflows;
  const effects: string[] = [];
  wf.register('AM_USER_SIGNUP', {
    approved: async (x) => void effects.push(`approved ${x.entity}`),
    rejected: async (x) => void effects.push(`rejected ${x.entity}`),
  });
  const start = (entity: string) =>
    wf.start({
      type: 'AM_USER_SIGNUP',
      tenant: 'carbon.super',
      requester: entity,
      entity,
      description: `sign-up of ${entity}`,
      executor: 'approval',
    });
  const a = await start('withdrawn');
  const b = await start('approved');
  if (a.status !== 'pending' || b.status !== 'pending') throw new Error('the approval executor makes tasks');

  await wf.withdraw(a.taskId, 'throughway', 'the account could not be made: store down');
  t.match(await wf.get(a.taskId), {
    status: 'REJECTED',
    decision: { status: 'REJECTED', by: 'throughway', comment: 'the account could not be made: store down' },
  });
  t.ok(
    n.logger.lines.some((l) => l.event === 'workflow_task_withdrawn' && l.id === a.taskId && l.by === 'throughway'),
    'logged workflow_task_withdrawn',
  );
  t.same(effects, [], "no effect of the task's type runs");

  await wf.decide(b.taskId, { status: 'APPROVED', by: 'admin' });
  await wf.withdraw(b.taskId, 'throughway', 'too late');
  t.match(await wf.get(b.taskId), { status: 'APPROVED', decision: { by: 'admin' } }, 'a decided task is left as it was');
  t.same(effects, ['approved approved']);
});
