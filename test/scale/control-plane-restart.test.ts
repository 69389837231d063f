/**
 * A gateway-worker whose control plane was stopped, had its API files and policies changed and was started
 * again (docs/scale-out.md, "Missed changes"): real processes, no event hub, so only the worker's
 * deployment check (lib/scale/deployment-check.ts, `[throughway.scale] deployment_check_interval`) can
 * bring the changes. While the control plane is down the worker says so (log `control_plane_unreachable`,
 * health `control_plane_deployments` DOWN) and keeps serving; once it is back, the worker serves the new
 * API under the new policy within a bound (polled) and logs the resync. A file changed while both are up
 * reaches the worker through the version comparison alone (`deployments_stale`, then resynced).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import t from 'tap';
import { echoBackend, until } from '../gateway/helpers';
import { DEFAULT_POLICIES_TOML } from '../../lib/throttle/policies';
import { baseOffset, http, nodeToml, restartNode, spawnNode, started } from './helpers';

function openApi(o: { name: string; context: string; port: number; policy?: string }): string {
  return `name = "${o.name}"\ncontext = "${o.context}"\nversion = "1.0.0"\nauth = "none"\nunauthenticated_policy = "Unlimited"\n${o.policy !== undefined ? `policy = "${o.policy}"\n` : ''}[endpoints]\nproduction = "http://127.0.0.1:${o.port}"\n[[resources]]\npath = "/*"\nmethods = ["GET"]\n`;
}

const TWO = `${DEFAULT_POLICIES_TOML}\n[[api]]\nname = "TwoPerMin"\nrequest_count = 2\nunit_time = 1\ntime_unit = "min"\n`;

async function status(port: number, p: string): Promise<number> {
  try {
    return (await http(`http://127.0.0.1:${port}${p}`)).status;
  } catch {
    return 0;
  }
}

t.test('a control plane restarted with changed API files and policies: the worker catches up and says so', async (t) => {
  const backend = await echoBackend();
  t.teardown(() => backend.close());
  const port = backend.port;
  const base = baseOffset(64);
  const kmPort = 9763 + base;
  const cpToml = nodeToml({ offset: base, role: 'api-key-manager', channel: 'unused' });
  const cp = spawnNode(cpToml, { 'a.toml': openApi({ name: 'A', context: '/a', port }) }, [], { 'policies.toml': DEFAULT_POLICIES_TOML });
  t.teardown(() => cp.stop('SIGKILL'));
  if (!t.ok(await started(cp, /Key manager: /), 'the control plane started')) t.comment(cp.out, cp.err);

  const gw = spawnNode(
    nodeToml({ offset: base + 1, role: 'gateway-worker', channel: 'unused', km: kmPort, extra: 'deployment_check_interval = 200\n' }),
  );
  t.teardown(() => gw.stop('SIGKILL'));
  if (!t.ok(await started(gw, /APIs: \d+ deployed/), 'the worker started')) t.comment(gw.out, gw.err);
  const gp = 8280 + base + 1;
  const health = async (): Promise<{ status: number; checks: { name: string; status: string; message?: string }[] }> => {
    const r = await http(`http://127.0.0.1:${9763 + base + 1}/health`);
    return { status: r.status, checks: (r.body.checks ?? []) as { name: string; status: string; message?: string }[] };
  };
  const deploymentsCheck = async (): Promise<string> =>
    (await health()).checks.find((c) => c.name === 'control_plane_deployments')?.status ?? 'absent';
  t.equal(await status(gp, '/a/1.0.0/x'), 200, 'A is deployed');
  t.equal(await status(gp, '/b/1.0.0/x'), 404, 'B is not');
  t.equal(await deploymentsCheck(), 'UP', 'health: the deployments agree with the control plane');

  // The control plane stops; its files change while it is down.
  cp.child.kill('SIGTERM');
  await cp.exited;
  t.ok(
    await until(() => /"event":"control_plane_unreachable"/.test(gw.out + gw.err), 20_000),
    'the worker logs that its control plane does not answer',
  );
  t.ok(await until(async () => (await deploymentsCheck()) === 'DOWN', 10_000), 'health: control_plane_deployments DOWN');
  t.equal(await status(gp, '/a/1.0.0/x'), 200, 'the worker keeps serving what it pulled');
  fs.writeFileSync(path.join(cp.dir, 'policies.toml'), TWO);
  fs.writeFileSync(path.join(cp.dir, 'apis', 'b.toml'), openApi({ name: 'B', context: '/b', port, policy: 'TwoPerMin' }));

  const cp2 = restartNode(cp);
  t.teardown(() => cp2.stop('SIGKILL'));
  if (!t.ok(await started(cp2, /Key manager: /), 'the control plane started again')) t.comment(cp2.out, cp2.err);
  t.ok(
    await until(async () => (await status(gp, '/b/1.0.0/x')) === 200, 30_000, 100),
    'the worker serves the API added while its control plane was down',
  );
  t.match(gw.out + gw.err, /"event":"control_plane_reachable"/, 'logged: the control plane answers again');
  t.match(gw.out + gw.err, /"event":"deployments_resynced"/, 'logged: resynced');
  // B's policy is the one the new policies file defines (2 per minute): its first call was the one above.
  t.equal(await status(gp, '/b/1.0.0/x'), 200, 'second call within the policy');
  t.equal(await status(gp, '/b/1.0.0/x'), 429, 'third call throttled by the new policy');
  t.ok(await until(async () => (await deploymentsCheck()) === 'UP', 10_000), 'health: UP again');

  // Both up, no event hub: a changed file reaches the worker by the version comparison.
  fs.writeFileSync(path.join(cp.dir, 'apis', 'c.toml'), openApi({ name: 'C', context: '/c', port }));
  t.ok(
    await until(async () => (await status(gp, '/c/1.0.0/x')) === 200, 30_000, 100),
    'a file added while both run is deployed on the worker',
  );
  t.match(gw.out + gw.err, /"event":"deployments_stale"/, 'logged: the versions differed');
});
