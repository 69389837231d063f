/**
 * `throughway tasks list|approve|reject` (docs/workflows.md) as a user runs it: `node dist/lib/cli.js` in a
 * child process against a running node's admin API (--url). Waiting application creations are listed,
 * one approved (the application becomes APPROVED), one rejected with a comment.
 */
import t from 'tap';
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { ADMIN, startNode } from './helpers';

const CLI = path.resolve(__dirname, '..', '..', 'lib', 'cli.js');

/** The binary, asynchronously (the node under test answers from this same process). */
function binary(args: string[], cwd: string): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { cwd, env: { PATH: process.env.PATH ?? '' } }, (error, out, err) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, out, err });
    });
  });
}

t.test('tasks list, approve and reject through the binary against a running node', async (t) => {
  const n = await startNode();
  t.teardown(() => n.close());
  const remote = ['--url', n.url, '--admin-user', ADMIN.user, '--admin-password', ADMIN.password];
  t.equal((await n.admin('PUT', '/workflow-executors/AM_APPLICATION_CREATION', { executor: 'approval' })).status, 200);
  for (const name of ['Waiting1', 'Waiting2'])
    t.match(await n.admin('POST', '/applications', { name }), { status: 201, body: { status: 'ON_HOLD' } });

  const listed = await binary(['tasks', 'list', '--status', 'CREATED', ...remote], n.dir);
  t.equal(listed.code, 0, listed.err);
  t.match(listed.out, /^ID\s+TYPE\s+TENANT\s+REQUESTER\s+STATUS\s+DESCRIPTION\n/);
  t.match(listed.out, /AM_APPLICATION_CREATION\s+carbon\.super\s+admin\s+CREATED\s+.*Waiting1/);
  const json = await binary(['tasks', 'list', '--type', 'AM_APPLICATION_CREATION', '--json', ...remote], n.dir);
  t.equal(json.code, 0, json.err);
  const tasks = (JSON.parse(json.out) as { list: { id: string; description: string }[] }).list;
  t.equal(tasks.length, 2);
  const id = (name: string): string => tasks.find((x) => x.description.includes(name))?.id ?? '';

  const approved = await binary(['tasks', 'approve', id('Waiting1'), '--comment', 'fine', ...remote], n.dir);
  t.equal(approved.code, 0, approved.err);
  t.match(approved.out, new RegExp(`^task ${id('Waiting1')} APPROVED: `));
  t.equal((await n.admin('GET', '/applications/Waiting1')).body.status, 'APPROVED', 'the approval took effect on the node');

  const rejected = await binary(['tasks', 'reject', id('Waiting2'), '--comment', 'not ours', ...remote], n.dir);
  t.equal(rejected.code, 0, rejected.err);
  t.match(rejected.out, /REJECTED/);
  const after = await binary(['tasks', 'list', '--status', 'CREATED', ...remote], n.dir);
  t.equal(after.out, 'no workflow tasks\n');

  // A decided task is refused (409 from the node): exit 1.
  t.match(await binary(['tasks', 'approve', id('Waiting1'), ...remote], n.dir), { code: 1 });
});
