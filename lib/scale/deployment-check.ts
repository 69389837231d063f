/**
 * A gateway-worker's check that it runs the API files and policies its control plane serves
 * (docs/scale-out.md, "Missed changes"). Events over Redis keep it current while both are up, but a
 * control plane that was stopped, had its files changed and was started again publishes nothing for
 * what it read at its start; a Redis that stayed up gives the worker no reconnect to resync on.
 *
 * Every `[throughway.scale] deployment_check_interval` the worker sends one conditional GET of
 * /admin/v1/deployments with the version of what it holds (DeploymentFollower.version()) as
 * If-None-Match: 304 means the same set. Then:
 *  - the control plane does not answer: `control_plane_unreachable` (warn, once per outage); health
 *    `control_plane_deployments` DOWN ("serving the APIs and policies last pulled"); the gateway goes on
 *    with them;
 *  - it answers again after it did not: `control_plane_reachable` (warn), and a full resync (the same pull
 *    as SIGHUP: snapshot and deployments), whether its version changed or not;
 *  - it answers another version: `deployments_stale` (warn, with both versions), and a resync;
 *  - after a resync the versions agree: `deployments_resynced` (info, with the APIs deployed); they still
 *    differ (a policies text this gateway refused): health stays DOWN with both versions.
 */
import type { HealthChecker } from '../events/observed';
import type { Logger } from '../log';
import type { ControlPlane } from './control-plane';
import type { DeploymentFollower } from './deployments';

export interface DeploymentCheckOptions {
  readonly controlPlane: ControlPlane;
  readonly follower: DeploymentFollower;
  /** The control plane's origin, for logs and health. */
  readonly origin: string;
  /** ms between two checks. */
  readonly interval: number;
  /** The full pull and apply (the hub's resync, or a pull and DeploymentFollower.replace). */
  readonly resync: () => Promise<void>;
  readonly logger: Logger;
  readonly healthOrder: number;
}

export class DeploymentCheck {
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  /** Since when the control plane does not answer (0: it answers). */
  private downSince = 0;
  /** The control plane's version when it differs from this gateway's after a resync; undefined: none. */
  private staleRemote: string | undefined;
  private lastCheck = 0;
  private lastResync = 0;
  checks = 0;
  resyncs = 0;

  constructor(private readonly o: DeploymentCheckOptions) {}

  start(): void {
    this.schedule();
  }

  private schedule(): void {
    if (this.closed) return;
    this.timer = setTimeout(() => void this.check().finally(() => this.schedule()), this.o.interval);
    // The gateway's listeners keep the process up; this timer must not hold a stopping one.
    this.timer.unref();
  }

  /** One check (exported for the schedule; a test may call it). Never rejects. */
  async check(): Promise<void> {
    const { follower, controlPlane, logger, origin } = this.o;
    const local = follower.version();
    let answer: Awaited<ReturnType<ControlPlane['deploymentsIfChanged']>>;
    try {
      answer = await controlPlane.deploymentsIfChanged(local);
    } catch (err) {
      if (this.downSince === 0) {
        this.downSince = Date.now();
        logger.log('warn', 'control_plane_unreachable', {
          url: origin,
          message: `${(err as Error).message}: serving the APIs and policies last pulled; checking again every ${this.o.interval} ms`,
        });
      }
      return;
    } finally {
      this.checks++;
      this.lastCheck = Date.now();
    }
    if (this.closed) return;
    const wasDown = this.downSince !== 0;
    if (wasDown) {
      logger.log('warn', 'control_plane_reachable', {
        url: origin,
        downMs: Date.now() - this.downSince,
        message: 'pulling its APIs, policies and snapshot again',
      });
      this.downSince = 0;
    }
    const remote = answer === 'unchanged' ? local : (answer.version ?? '');
    if (answer !== 'unchanged') {
      if (remote === this.staleRemote && !wasDown) return; // resynced already for this version: still refused
      logger.log('warn', 'deployments_stale', {
        url: origin,
        version: local,
        controlPlaneVersion: remote,
        message: 'the control plane serves other API files or policies than this gateway runs: pulling them again',
      });
    } else if (!wasDown) {
      this.staleRemote = undefined;
      return;
    }
    await this.resync(remote, wasDown ? 'control plane reachable again' : 'version differs');
  }

  private async resync(remote: string, reason: string): Promise<void> {
    const { follower, logger, origin } = this.o;
    try {
      await this.o.resync();
    } catch (err) {
      logger.log('error', 'control_plane_pull_failed', { url: origin, message: (err as Error).message });
      return;
    }
    this.resyncs++;
    this.lastResync = Date.now();
    const now = follower.version();
    if (now === remote) {
      this.staleRemote = undefined;
      logger.log('info', 'deployments_resynced', { url: origin, reason, version: now, apis: follower.entries().length });
    } else {
      this.staleRemote = remote;
      logger.log('warn', 'deployments_stale', {
        url: origin,
        version: now,
        controlPlaneVersion: remote,
        message: 'still different after pulling again (a policies text this gateway refused, or a change since): health reports it',
      });
    }
  }

  checker(): HealthChecker {
    return {
      name: 'control_plane_deployments',
      order: this.o.healthOrder,
      check: () => {
        const details = {
          url: this.o.origin,
          version: this.o.follower.version(),
          checks: this.checks,
          resyncs: this.resyncs,
          lastCheck: this.lastCheck,
          lastResync: this.lastResync,
          intervalMs: this.o.interval,
        };
        if (this.downSince !== 0)
          return {
            healthy: false,
            message: `the control plane does not answer since ${new Date(this.downSince).toISOString()}: serving the APIs and policies last pulled`,
            details,
          };
        if (this.staleRemote !== undefined)
          return {
            healthy: false,
            message: "the APIs or policies differ from the control plane's after a pull",
            details: { ...details, controlPlaneVersion: this.staleRemote },
          };
        return { healthy: true, details };
      },
    };
  }

  close(): void {
    this.closed = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
  }
}
