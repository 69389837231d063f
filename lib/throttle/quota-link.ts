/**
 * The Redis link of the exact and leased counting modes (docs/throttling.md, "Counting modes"): one
 * connection (`[throughway.throttling] redis_url`) or a Redis Cluster (`cluster_nodes`), four Lua scripts,
 * and the membership set the gateways' shares are computed from.
 *
 * Keys: `<prefix>{<counter key>}@<window start>`. The braces are a Redis Cluster hash tag (Redis Cluster
 * specification, "Hash tags"): only the part inside them is hashed, so every window of one counter lives
 * on one shard, and each script touches one key (no CROSSSLOT). A counter key holding `}` ends its tag
 * there: still one slot per counter.
 *
 * Scripts run with EVALSHA and, when Redis answers NOSCRIPT (a restarted or flushed Redis, a new cluster
 * node), once more with EVAL, which also loads the script (Redis EVALSHA documentation).
 *
 * Bounded: every command has `command_timeout`; the offline queue is off, so a command while the
 * connection is down fails at once instead of queueing. After a failure the link is down: callers decide
 * locally (lib/throttle/shared.ts) and do not send, except one probe per PROBE_MS and the heartbeat; the
 * first command that succeeds again brings it up and runs the `onUp` callback (the reconciliation).
 *
 * Membership: every HEARTBEAT_MS each gateway adds itself, scored by the time, to the sorted set
 * `<prefix>{nodes}` and drops members older than NODE_TTL_MS; `nodes` is the count it last saw (itself
 * included). A gateway that cannot reach Redis keeps the last count: its share of a limit while Redis is
 * away is limit / nodes.
 */
import { createHash, randomUUID } from 'node:crypto';
import type * as IORedis from 'ioredis';
import { load } from '../config/packages';
import type { Logger } from '../log';
import { ThroughwayError } from '../errors';

/**
 * take (exact): refuse when the window's count has reached the limit, else count `cost`; the key expires
 * at the window's end. Replies {admitted 0|1, count after}.
 * lease (leased): grant min(want, limit - count, ceil((limit - count) / nodes)) and count it: a grant never
 * passes the limit, and near it no gateway takes more than its share of what is left. Replies {granted,
 * count after}.
 * give: return unused quota (never below 0); replies the count after. add: count what was admitted while
 * Redis was away (the reconciliation); replies the count after.
 */
export const SCRIPTS = {
  take: `local v = tonumber(redis.call('GET', KEYS[1]) or '0')
if v >= tonumber(ARGV[2]) then return {0, v} end
v = redis.call('INCRBY', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return {1, v}`,
  lease: `local v = tonumber(redis.call('GET', KEYS[1]) or '0')
local left = tonumber(ARGV[2]) - v
if left <= 0 then return {0, v} end
local g = math.min(tonumber(ARGV[1]), left, math.ceil(left / tonumber(ARGV[4])))
v = redis.call('INCRBY', KEYS[1], g)
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return {g, v}`,
  give: `local v = tonumber(redis.call('GET', KEYS[1]) or '0')
local n = math.min(tonumber(ARGV[1]), v)
if n > 0 then v = redis.call('DECRBY', KEYS[1], n) end
return {n, v}`,
  add: `local v = redis.call('INCRBY', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {1, v}`,
} as const;
export type ScriptName = keyof typeof SCRIPTS;

const HEARTBEAT_MS = 1000;
const NODE_TTL_MS = 5000;
/** While down, one command per this many ms is sent as a probe (the others decide locally at once). */
const PROBE_MS = 250;

/** Why a command did not answer (docs/throttling.md, "Redis unreachable"). */
export type QuotaErrorCode = 'THROTTLE_QUOTA_DOWN' | 'THROTTLE_QUOTA_TIMEOUT' | 'THROTTLE_QUOTA_REPLY';

export class QuotaUnavailable extends ThroughwayError {
  constructor(
    readonly code: QuotaErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'QuotaUnavailable';
  }
}

export function quotaErrorCode(err: unknown): QuotaErrorCode {
  if (err instanceof QuotaUnavailable) return err.code;
  return /timed out/i.test(String((err as Error)?.message)) ? 'THROTTLE_QUOTA_TIMEOUT' : 'THROTTLE_QUOTA_DOWN';
}

export interface QuotaLinkOptions {
  /** redis:// URL of one Redis (used when clusterNodes is empty). */
  readonly url: string;
  /** host:port (or redis://host:port) of Redis Cluster nodes; empty: one Redis at url. */
  readonly clusterNodes: readonly string[];
  /** ms a command may take. */
  readonly commandTimeout: number;
  readonly logger: Logger;
  /** Key prefix (tests isolate themselves with their own). */
  readonly prefix?: string;
}

type Client = IORedis.Redis | IORedis.Cluster;

/** "host:port" or "redis://host:port" as ioredis's cluster node. */
export function clusterNode(s: string): { host: string; port: number } {
  const u = new URL(/^rediss?:\/\//i.test(s) ? s : `redis://${s}`);
  return { host: u.hostname.replace(/^\[|\]$/g, ''), port: u.port === '' ? 6379 : Number(u.port) };
}

export class QuotaLink {
  readonly client: Client;
  readonly prefix: string;
  /** Gateways counting in this Redis under this prefix, as last seen (this one included). */
  nodes = 1;
  private readonly sha: Record<ScriptName, string>;
  private down = true;
  private announced = false;
  private probeAt = 0;
  private closed = false;
  private readonly nodeId = randomUUID();
  private readonly beat: NodeJS.Timeout;
  private readonly where: string;
  /** Runs each time the link comes up (after a start or an outage). */
  onUp: () => void = () => undefined;

  constructor(private readonly o: QuotaLinkOptions) {
    this.prefix = o.prefix ?? 'tw:q:';
    this.sha = Object.fromEntries(Object.entries(SCRIPTS).map(([k, v]) => [k, createHash('sha1').update(v).digest('hex')])) as Record<
      ScriptName,
      string
    >;
    const ioredis = load<typeof IORedis>('ioredis', '[throughway.throttling] counting');
    const common = { commandTimeout: o.commandTimeout, maxRetriesPerRequest: 1, connectTimeout: Math.max(1000, o.commandTimeout) };
    if (o.clusterNodes.length > 0) {
      this.where = o.clusterNodes.join(',');
      this.client = new ioredis.Cluster(o.clusterNodes.map(clusterNode), {
        enableOfflineQueue: false,
        redisOptions: common,
        slotsRefreshTimeout: Math.max(1000, o.commandTimeout),
      });
    } else {
      this.where = o.url;
      this.client = new ioredis.Redis(o.url, { ...common, enableOfflineQueue: false });
    }
    this.client.on('error', (err: Error) => this.fail(err));
    // A connection that drops and comes back may emit no error (ioredis reconnects on its own): without
    // this the link never went down, so the reconciliation that runs when it comes up never ran (Redis
    // counted 43 of 99 admitted calls after test/throttle/counting.test.ts's outage).
    this.client.on('close', () => {
      if (!this.closed) this.fail(new Error('the connection to Redis closed'));
    });
    this.client.on('ready', () => void this.heartbeat());
    this.beat = setInterval(() => void this.heartbeat(), HEARTBEAT_MS);
    this.beat.unref();
  }

  /** `<prefix>{<key>}@<window start>`. */
  key(key: string, start: number): string {
    return `${this.prefix}{${key}}@${start}`;
  }

  /** Whether a call should ask Redis now: up, or down and due for a probe. */
  usable(): boolean {
    if (this.closed || this.client.status !== 'ready') return false;
    if (!this.down) return true;
    const now = Date.now();
    if (now < this.probeAt) return false;
    this.probeAt = now + PROBE_MS;
    return true;
  }

  get isUp(): boolean {
    return !this.down && this.client.status === 'ready';
  }

  private fail(err: unknown): void {
    this.probeAt = Date.now() + PROBE_MS;
    if (this.down && this.announced) return;
    this.down = true;
    this.announced = true;
    const code = quotaErrorCode(err);
    this.o.logger.log('warn', 'throttle_quota_unavailable', {
      code,
      where: this.where,
      nodes: this.nodes,
      message: `${(err as Error)?.message ?? String(err)}: each gateway admits limit / ${this.nodes} of exact and leased policies (fail = "closed": none) until Redis is back`,
    });
  }

  private up(): void {
    if (!this.down) return;
    this.down = false;
    if (this.announced) this.o.logger.log('info', 'throttle_quota_available', { where: this.where });
    this.onUp();
  }

  /** One script on one key: the two numbers it replies. Rejects with QuotaUnavailable (the link is then down). */
  async run(name: ScriptName, key: string, args: readonly (number | string)[]): Promise<[number, number]> {
    let reply: unknown;
    try {
      try {
        reply = await this.client.evalsha(this.sha[name], 1, key, ...args);
      } catch (err) {
        if (!/NOSCRIPT/.test(String((err as Error).message))) throw err;
        reply = await this.client.eval(SCRIPTS[name], 1, key, ...args);
      }
    } catch (err) {
      const e = new QuotaUnavailable(quotaErrorCode(err), (err as Error).message);
      this.fail(e);
      throw e;
    }
    if (!Array.isArray(reply) || reply.length !== 2 || !Number.isFinite(Number(reply[0])) || !Number.isFinite(Number(reply[1]))) {
      const e = new QuotaUnavailable('THROTTLE_QUOTA_REPLY', `script ${name} replied ${JSON.stringify(reply)}`);
      this.fail(e);
      throw e;
    }
    this.up();
    return [Number(reply[0]), Number(reply[1])];
  }

  /** Registers this gateway in `<prefix>{nodes}` and counts the members seen in the last NODE_TTL_MS. */
  async heartbeat(): Promise<void> {
    if (this.closed || this.client.status !== 'ready') return;
    const now = Date.now();
    const key = `${this.prefix}{nodes}`;
    try {
      const r = await this.client
        .pipeline()
        .zadd(key, now, this.nodeId)
        .zremrangebyscore(key, '-inf', now - NODE_TTL_MS)
        .zcard(key)
        .pexpire(key, NODE_TTL_MS * 2)
        .exec();
      const failed = r?.find((x) => x[0] !== null)?.[0];
      if (failed !== undefined && failed !== null) throw failed;
      const card = Number(r?.[2]?.[1]);
      if (Number.isFinite(card)) this.nodes = Math.max(1, card);
      this.up();
    } catch (err) {
      this.fail(err);
    }
  }

  /** Leaves the membership set and disconnects. */
  async close(): Promise<void> {
    clearInterval(this.beat);
    if (this.client.status === 'ready') await this.client.zrem(`${this.prefix}{nodes}`, this.nodeId).catch(() => undefined);
    this.closed = true;
    this.client.disconnect();
  }
}
