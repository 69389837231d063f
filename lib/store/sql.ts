/**
 * The Store over SQL: one implementation of every operation, written once in the SQL common to SQLite,
 * PostgreSQL and MySQL/MariaDB, over a small driver interface each database implements
 * (lib/store/sqlite.ts, postgres.ts, mysql.ts). Statements use `?` placeholders; the PostgreSQL driver
 * numbers them. Every operation is one statement, so each commits on its own
 * (`[database.apim_db.pool_options] defaultAutoCommit`); the one race that matters, two exchanges of the
 * same refresh token, is settled by a conditional UPDATE whose row count says who won.
 */
import { randomUUID } from 'node:crypto';
import { MIGRATIONS, type Migration } from './migrations';
import { SqlSelfServiceStore, type SelfServiceStore } from './selfservice';
import type { Param, PoolUsage, Row, SqlDriver } from './sql-driver';
import {
  StoreError,
  type Application,
  type ApplicationStatus,
  type WorkflowDecisionRecord,
  type WorkflowTaskRecord,
  type BlockingConditionRecord,
  type KeyType,
  type OAuthClient,
  type StoredHashMethod,
  type RefreshTokenRecord,
  type RevokedToken,
  type NewSigningKey,
  type SigningKey,
  type Store,
  type Subscription,
  type SubscriptionState,
  type Tenant,
  type User,
  SUPER_TENANT,
} from './types';

export type { Param, PoolUsage, Row, SqlDriver } from './sql-driver';

const str = (v: unknown): string => (v === null || v === undefined ? '' : String(v));
// PostgreSQL returns BIGINT as a string (it may exceed 2^53); epoch milliseconds never do.
const num = (v: unknown): number => (typeof v === 'number' ? v : Number(v));
const numOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : num(v));
const list = (v: unknown): string[] => {
  const s = str(v);
  return s === '' ? [] : s.split(' ');
};

function toApplication(r: Row): Application {
  return {
    id: str(r.id),
    tenant: str(r.tenant) || SUPER_TENANT,
    name: str(r.name),
    owner: str(r.owner),
    tier: str(r.tier),
    description: str(r.description),
    status: (str(r.status) || 'APPROVED') as ApplicationStatus,
    createdAt: num(r.created_at),
  };
}
function toTask(r: Row): WorkflowTaskRecord {
  let attributes: Record<string, string> = {};
  try {
    const v: unknown = JSON.parse(str(r.attributes) || '{}');
    if (v !== null && typeof v === 'object' && !Array.isArray(v))
      attributes = Object.fromEntries(Object.entries(v).map(([k, x]) => [k, String(x)]));
  } catch {
    attributes = {};
  }
  const decided = r.status !== null && r.status !== undefined;
  return {
    id: str(r.id),
    type: str(r.type),
    tenant: str(r.tenant),
    requester: str(r.requester),
    entity: str(r.entity),
    description: str(r.description),
    attributes,
    executor: str(r.executor),
    createdAt: num(r.created_at),
    deliveredAt: numOrNull(r.delivered_at),
    attempts: num(r.attempts),
    lastError: str(r.last_error),
    nextAttemptAt: numOrNull(r.next_attempt_at),
    decision: decided
      ? { status: str(r.status) as WorkflowDecisionRecord['status'], by: str(r.decided_by), at: num(r.decided_at), comment: str(r.comment) }
      : null,
  };
}
const TASK_SELECT = `SELECT t.*, d.status, d.decided_by, d.decided_at, d.comment FROM tw_workflow_task t LEFT JOIN tw_workflow_decision d ON d.task_id = t.id`;
function toClient(r: Row): OAuthClient {
  return {
    consumerKey: str(r.consumer_key),
    secretHash: str(r.secret_hash),
    applicationId: str(r.application_id),
    keyType: str(r.key_type) as KeyType,
    grantTypes: list(r.grant_types),
    callbackUrl: str(r.callback_url),
    createdAt: num(r.created_at),
  };
}
function toTenant(r: Row): Tenant {
  return { domain: str(r.domain), admin: str(r.admin), package: str(r.package), active: num(r.active) !== 0, createdAt: num(r.created_at) };
}
function toSubscription(r: Row): Subscription {
  return {
    id: str(r.id),
    applicationId: str(r.application_id),
    apiContext: str(r.api_context),
    apiVersion: str(r.api_version),
    tier: str(r.tier),
    state: str(r.state) as SubscriptionState,
    createdAt: num(r.created_at),
  };
}
function toUser(r: Row): User {
  return {
    username: str(r.username),
    tenant: str(r.tenant) || SUPER_TENANT,
    passwordHash: str(r.password_hash),
    salt: str(r.salt),
    hashMethod: str(r.hash_method) as StoredHashMethod,
    roles: list(r.roles),
    createdAt: num(r.created_at),
  };
}
function toRefresh(r: Row): RefreshTokenRecord {
  return {
    tokenHash: str(r.token_hash),
    family: str(r.family),
    consumerKey: str(r.consumer_key),
    subject: str(r.subject),
    scope: str(r.scope),
    authorizedUserType: str(r.aut),
    keyType: str(r.key_type) as KeyType,
    issuedAt: num(r.issued_at),
    expiresAt: num(r.expires_at),
    usedAt: numOrNull(r.used_at),
    revoked: num(r.revoked) !== 0,
    accessJti: r.access_jti === null || r.access_jti === undefined ? null : str(r.access_jti),
    accessExpiresAt: numOrNull(r.access_expires_at),
  };
}
function toKey(r: Row): SigningKey {
  return {
    kid: str(r.kid),
    tenant: str(r.tenant) || SUPER_TENANT,
    alg: str(r.alg),
    privateJwk: str(r.private_jwk),
    publicJwk: str(r.public_jwk),
    createdAt: num(r.created_at),
    retiredAt: numOrNull(r.retired_at),
  };
}

/** Told before each pending migration runs: its number among the pending ones (1-based) and their count. */
export type MigrationProgress = (m: Migration, index: number, pending: number) => void;

/** Applies the migrations newer than the database's recorded version, in order. */
export async function migrate(
  db: SqlDriver,
  migrations: readonly Migration[] = MIGRATIONS,
  onProgress?: MigrationProgress,
): Promise<number> {
  await db.run(
    `CREATE TABLE IF NOT EXISTS tw_schema_version (version INTEGER NOT NULL PRIMARY KEY, description TEXT NOT NULL, applied_at BIGINT NOT NULL)`,
  );
  const rows = await db.all(`SELECT MAX(version) AS v FROM tw_schema_version`);
  let current = rows[0]?.v === null || rows[0]?.v === undefined ? 0 : num(rows[0].v);
  const pending = migrations.filter((m) => m.version > current).length;
  let index = 0;
  for (const m of migrations) {
    if (m.version <= current) continue;
    onProgress?.(m, ++index, pending);
    try {
      for (const s of m.statements) await db.run(s);
      await db.run(`INSERT INTO tw_schema_version (version, description, applied_at) VALUES (?, ?, ?)`, [
        m.version,
        m.description,
        Date.now(),
      ]);
    } catch (err) {
      throw new StoreError(
        'STORE_MIGRATION',
        `${db.description}: migration ${m.version} (${m.description}) failed: ${(err as Error).message}`,
        { cause: err },
      );
    }
    current = m.version;
  }
  return current;
}

/**
 * The tenant of the application whose id is the statement's next parameter, as a value of an INSERT
 * (a scalar subquery in VALUES: SQLite, PostgreSQL and MySQL/MariaDB all take it when it reads another
 * table); the super tenant when there is no such application.
 */
const TENANT_OF_APPLICATION = `COALESCE((SELECT a.tenant FROM tw_application a WHERE a.id = ?), '${SUPER_TENANT}')`;

export class SqlStore implements Store {
  readonly kind: string;
  readonly description: string;
  readonly selfService: SelfServiceStore;

  constructor(private readonly db: SqlDriver) {
    this.kind = db.kind;
    this.description = db.description;
    this.selfService = new SqlSelfServiceStore(db);
  }

  poolUsage(): PoolUsage | undefined {
    return this.db.poolUsage?.();
  }

  async schemaVersion(): Promise<number> {
    const rows = await this.db.all(`SELECT MAX(version) AS v FROM tw_schema_version`);
    return num(rows[0]?.v ?? 0);
  }

  async addTenant(t: Omit<Tenant, 'createdAt'>): Promise<Tenant> {
    const rec: Tenant = { ...t, createdAt: Date.now() };
    await this.db.run(`INSERT INTO tw_tenant (domain, admin, package, active, created_at) VALUES (?, ?, ?, ?, ?)`, [
      rec.domain,
      rec.admin,
      rec.package,
      rec.active ? 1 : 0,
      rec.createdAt,
    ]);
    return rec;
  }
  async getTenant(domain: string): Promise<Tenant | undefined> {
    const r = (await this.db.all(`SELECT * FROM tw_tenant WHERE domain = ?`, [domain]))[0];
    return r === undefined ? undefined : toTenant(r);
  }
  async listTenants(): Promise<Tenant[]> {
    return (await this.db.all(`SELECT * FROM tw_tenant ORDER BY domain`)).map(toTenant);
  }
  async setTenantActive(domain: string, active: boolean): Promise<Tenant | undefined> {
    // Read back rather than trust the row count: MySQL counts only rows whose value changed.
    await this.db.run(`UPDATE tw_tenant SET active = ? WHERE domain = ?`, [active ? 1 : 0, domain]);
    return this.getTenant(domain);
  }
  async setTenantPackage(domain: string, pkg: string): Promise<Tenant | undefined> {
    await this.db.run(`UPDATE tw_tenant SET package = ? WHERE domain = ?`, [pkg, domain]);
    return this.getTenant(domain);
  }
  async addTenantBandwidth(month: string, bytes: ReadonlyMap<string, number>, at: number): Promise<void> {
    // An UPSERT is written differently by SQLite, PostgreSQL and MySQL: an UPDATE that adds in the database
    // (so two processes adding at once both count), an INSERT for the month's first bytes, and the UPDATE
    // again when another process inserted that row in between (the primary key refuses a second one).
    // MySQL's row count is of rows changed, and adding n > 0 always changes the row.
    const add = (tenant: string, n: number): Promise<number> =>
      this.db.run(`UPDATE tw_tenant_bandwidth SET bytes = bytes + ?, updated_at = ? WHERE tenant = ? AND month = ?`, [
        n,
        at,
        tenant,
        month,
      ]);
    for (const [tenant, n] of bytes) {
      if (!(n > 0)) continue;
      if ((await add(tenant, n)) > 0) continue;
      try {
        await this.db.run(`INSERT INTO tw_tenant_bandwidth (tenant, month, bytes, updated_at) VALUES (?, ?, ?, ?)`, [tenant, month, n, at]);
      } catch (err) {
        if (!(err instanceof StoreError && err.code === 'STORE_CONFLICT')) throw err;
        await add(tenant, n);
      }
    }
  }
  async listTenantBandwidth(month: string): Promise<Map<string, number>> {
    const rows = await this.db.all(`SELECT tenant, bytes FROM tw_tenant_bandwidth WHERE month = ?`, [month]);
    return new Map(rows.map((r) => [str(r.tenant), num(r.bytes)]));
  }

  async createApplication(
    app: Omit<Application, 'id' | 'createdAt' | 'tenant' | 'status'> & { tenant?: string; status?: ApplicationStatus },
  ): Promise<Application> {
    const a: Application = {
      ...app,
      tenant: app.tenant ?? SUPER_TENANT,
      status: app.status ?? 'APPROVED',
      id: randomUUID(),
      createdAt: Date.now(),
    };
    await this.db.run(
      `INSERT INTO tw_application (id, tenant, name, owner, tier, description, status, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      [a.id, a.tenant, a.name, a.owner, a.tier, a.description, a.status, a.createdAt],
    );
    return a;
  }
  async getApplication(id: string): Promise<Application | undefined> {
    const r = (await this.db.all(`SELECT * FROM tw_application WHERE id = ?`, [id]))[0];
    return r === undefined ? undefined : toApplication(r);
  }
  async findApplication(name: string, owner?: string): Promise<Application | undefined> {
    const rows =
      owner === undefined
        ? await this.db.all(`SELECT * FROM tw_application WHERE name = ? ORDER BY created_at`, [name])
        : await this.db.all(`SELECT * FROM tw_application WHERE name = ? AND owner = ?`, [name, owner]);
    const r = rows[0];
    return r === undefined ? undefined : toApplication(r);
  }
  async listApplications(owner?: string, tenant?: string): Promise<Application[]> {
    const where: string[] = [];
    const params: Param[] = [];
    if (owner !== undefined) {
      where.push('owner = ?');
      params.push(owner);
    }
    if (tenant !== undefined) {
      where.push('tenant = ?');
      params.push(tenant);
    }
    const rows = await this.db.all(
      `SELECT * FROM tw_application${where.length > 0 ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY name, owner`,
      params,
    );
    return rows.map(toApplication);
  }
  async updateApplication(
    id: string,
    change: Partial<Pick<Application, 'tier' | 'description' | 'owner' | 'status'>>,
  ): Promise<Application | undefined> {
    const cur = await this.getApplication(id);
    if (cur === undefined) return undefined;
    const next = { ...cur, ...change };
    await this.db.run(`UPDATE tw_application SET tier = ?, description = ?, owner = ?, status = ? WHERE id = ?`, [
      next.tier,
      next.description,
      next.owner,
      next.status,
      id,
    ]);
    return next;
  }
  async deleteApplication(id: string): Promise<boolean> {
    await this.db.run(`DELETE FROM tw_subscription WHERE application_id = ?`, [id]);
    await this.db.run(`DELETE FROM tw_client WHERE application_id = ?`, [id]);
    return (await this.db.run(`DELETE FROM tw_application WHERE id = ?`, [id])) > 0;
  }

  async createClient(client: Omit<OAuthClient, 'createdAt'>): Promise<OAuthClient> {
    const c: OAuthClient = { ...client, createdAt: Date.now() };
    await this.db.run(
      // The client is its application's tenant's.
      `INSERT INTO tw_client (consumer_key, secret_hash, application_id, key_type, grant_types, callback_url, created_at, tenant) VALUES (?, ?, ?, ?, ?, ?, ?, ${TENANT_OF_APPLICATION})`,
      [c.consumerKey, c.secretHash, c.applicationId, c.keyType, c.grantTypes.join(' '), c.callbackUrl, c.createdAt, c.applicationId],
    );
    return c;
  }
  async getClient(consumerKey: string): Promise<OAuthClient | undefined> {
    const r = (await this.db.all(`SELECT * FROM tw_client WHERE consumer_key = ?`, [consumerKey]))[0];
    return r === undefined ? undefined : toClient(r);
  }
  async listClients(applicationId: string): Promise<OAuthClient[]> {
    return (await this.db.all(`SELECT * FROM tw_client WHERE application_id = ? ORDER BY key_type`, [applicationId])).map(toClient);
  }
  async deleteClient(consumerKey: string): Promise<boolean> {
    return (await this.db.run(`DELETE FROM tw_client WHERE consumer_key = ?`, [consumerKey])) > 0;
  }

  async addSubscription(sub: Omit<Subscription, 'id' | 'createdAt'>): Promise<Subscription> {
    const s: Subscription = { ...sub, id: randomUUID(), createdAt: Date.now() };
    await this.db.run(
      // The subscription is its application's tenant's (the API's may differ: cross-tenant subscriptions).
      `INSERT INTO tw_subscription (id, application_id, api_context, api_version, tier, state, created_at, tenant) VALUES (?, ?, ?, ?, ?, ?, ?, ${TENANT_OF_APPLICATION})`,
      [s.id, s.applicationId, s.apiContext, s.apiVersion, s.tier, s.state, s.createdAt, s.applicationId],
    );
    return s;
  }
  async getSubscription(id: string): Promise<Subscription | undefined> {
    const r = (await this.db.all(`SELECT * FROM tw_subscription WHERE id = ?`, [id]))[0];
    return r === undefined ? undefined : toSubscription(r);
  }
  async findSubscription(applicationId: string, apiContext: string, apiVersion: string): Promise<Subscription | undefined> {
    const r = (
      await this.db.all(`SELECT * FROM tw_subscription WHERE application_id = ? AND api_context = ? AND api_version = ?`, [
        applicationId,
        apiContext,
        apiVersion,
      ])
    )[0];
    return r === undefined ? undefined : toSubscription(r);
  }
  async listSubscriptions(filter: { applicationId?: string; apiContext?: string } = {}): Promise<Subscription[]> {
    const where: string[] = [];
    const params: Param[] = [];
    if (filter.applicationId !== undefined) {
      where.push('application_id = ?');
      params.push(filter.applicationId);
    }
    if (filter.apiContext !== undefined) {
      where.push('api_context = ?');
      params.push(filter.apiContext);
    }
    const sql = `SELECT * FROM tw_subscription${where.length > 0 ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY api_context, api_version, created_at`;
    return (await this.db.all(sql, params)).map(toSubscription);
  }
  async setSubscriptionState(id: string, state: SubscriptionState): Promise<Subscription | undefined> {
    // Read back rather than trust the row count: MySQL counts only rows whose value changed.
    await this.db.run(`UPDATE tw_subscription SET state = ? WHERE id = ?`, [state, id]);
    return this.getSubscription(id);
  }
  async setSubscriptionTier(id: string, tier: string): Promise<Subscription | undefined> {
    await this.db.run(`UPDATE tw_subscription SET tier = ? WHERE id = ?`, [tier, id]);
    return this.getSubscription(id);
  }
  async deleteSubscription(id: string): Promise<boolean> {
    return (await this.db.run(`DELETE FROM tw_subscription WHERE id = ?`, [id])) > 0;
  }

  async addUser(user: Omit<User, 'createdAt' | 'tenant'> & { tenant?: string }): Promise<User> {
    const u: User = { ...user, tenant: user.tenant ?? SUPER_TENANT, createdAt: Date.now() };
    await this.db.run(
      `INSERT INTO tw_user (username, tenant, password_hash, salt, hash_method, roles, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
      [u.username, u.tenant, u.passwordHash, u.salt, u.hashMethod, u.roles.join(' '), u.createdAt],
    );
    return u;
  }
  async getUser(username: string): Promise<User | undefined> {
    const r = (await this.db.all(`SELECT * FROM tw_user WHERE username = ?`, [username]))[0];
    return r === undefined ? undefined : toUser(r);
  }
  async getUsersIgnoringCase(username: string): Promise<User[]> {
    const folded = username.toLowerCase();
    const rows = await this.db.all(`SELECT * FROM tw_user WHERE LOWER(username) = LOWER(?)`, [username]);
    return rows.map(toUser).filter((u) => u.username.toLowerCase() === folded);
  }
  async listUsers(tenant?: string): Promise<User[]> {
    const rows =
      tenant === undefined
        ? await this.db.all(`SELECT * FROM tw_user ORDER BY username`)
        : await this.db.all(`SELECT * FROM tw_user WHERE tenant = ? ORDER BY username`, [tenant]);
    return rows.map(toUser);
  }
  async deleteUser(username: string): Promise<boolean> {
    return (await this.db.run(`DELETE FROM tw_user WHERE username = ?`, [username])) > 0;
  }
  async setUserRoles(username: string, roles: readonly string[]): Promise<boolean> {
    return (await this.db.run(`UPDATE tw_user SET roles = ? WHERE username = ?`, [roles.join(' '), username])) > 0;
  }
  async setUserPassword(username: string, h: { passwordHash: string; salt: string; hashMethod: StoredHashMethod }): Promise<boolean> {
    return (
      (await this.db.run(`UPDATE tw_user SET password_hash = ?, salt = ?, hash_method = ? WHERE username = ?`, [
        h.passwordHash,
        h.salt,
        h.hashMethod,
        username,
      ])) > 0
    );
  }

  async saveRefreshToken(
    t: Omit<RefreshTokenRecord, 'usedAt' | 'revoked' | 'accessJti' | 'accessExpiresAt'> & { accessJti?: string; accessExpiresAt?: number },
  ): Promise<void> {
    await this.db.run(
      // The refresh token is its client's tenant's.
      `INSERT INTO tw_refresh_token (token_hash, family, consumer_key, subject, scope, aut, key_type, issued_at, expires_at, used_at, revoked, access_jti, access_expires_at, tenant) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, 0, ?, ?, COALESCE((SELECT c.tenant FROM tw_client c WHERE c.consumer_key = ?), '${SUPER_TENANT}'))`,
      [
        t.tokenHash,
        t.family,
        t.consumerKey,
        t.subject,
        t.scope,
        t.authorizedUserType,
        t.keyType,
        t.issuedAt,
        t.expiresAt,
        t.accessJti ?? null,
        t.accessExpiresAt ?? null,
        t.consumerKey,
      ],
    );
  }
  async listRefreshTokensOf(subject: string): Promise<RefreshTokenRecord[]> {
    return (await this.db.all(`SELECT * FROM tw_refresh_token WHERE subject = ? AND revoked = 0`, [subject])).map(toRefresh);
  }
  async listRefreshFamily(family: string): Promise<RefreshTokenRecord[]> {
    return (await this.db.all(`SELECT * FROM tw_refresh_token WHERE family = ? ORDER BY issued_at`, [family])).map(toRefresh);
  }
  async getRefreshToken(tokenHash: string): Promise<RefreshTokenRecord | undefined> {
    const r = (await this.db.all(`SELECT * FROM tw_refresh_token WHERE token_hash = ?`, [tokenHash]))[0];
    return r === undefined ? undefined : toRefresh(r);
  }
  async markRefreshTokenUsed(tokenHash: string, at: number): Promise<boolean> {
    return (
      (await this.db.run(`UPDATE tw_refresh_token SET used_at = ? WHERE token_hash = ? AND used_at IS NULL AND revoked = 0`, [
        at,
        tokenHash,
      ])) === 1
    );
  }
  async revokeRefreshFamily(family: string): Promise<number> {
    return this.db.run(`UPDATE tw_refresh_token SET revoked = 1 WHERE family = ? AND revoked = 0`, [family]);
  }

  async revokeToken(jti: string, expiresAt: number, at: number): Promise<void> {
    try {
      await this.db.run(`INSERT INTO tw_revoked_token (jti, expires_at, revoked_at) VALUES (?, ?, ?)`, [jti, expiresAt, at]);
    } catch (err) {
      // Revoking twice is not an error (RFC 7009 §2.2: the server answers 200 either way).
      if (!(err instanceof StoreError && err.code === 'STORE_CONFLICT')) throw err;
    }
  }
  async isRevoked(jti: string, now: number): Promise<boolean> {
    return (await this.db.all(`SELECT jti FROM tw_revoked_token WHERE jti = ? AND expires_at > ?`, [jti, now])).length > 0;
  }
  async listRevoked(now: number): Promise<RevokedToken[]> {
    const rows = await this.db.all(`SELECT * FROM tw_revoked_token WHERE expires_at > ? ORDER BY revoked_at`, [now]);
    return rows.map((r) => ({ jti: str(r.jti), expiresAt: num(r.expires_at), revokedAt: num(r.revoked_at) }));
  }

  async addSigningKey(key: NewSigningKey): Promise<void> {
    await this.db.run(
      `INSERT INTO tw_signing_key (kid, tenant, alg, private_jwk, public_jwk, created_at, retired_at) VALUES (?, ?, ?, ?, ?, ?, NULL)`,
      [key.kid, key.tenant ?? SUPER_TENANT, key.alg, key.privateJwk, key.publicJwk, key.createdAt],
    );
  }
  async listSigningKeys(tenant?: string): Promise<SigningKey[]> {
    const rows =
      tenant === undefined
        ? await this.db.all(`SELECT * FROM tw_signing_key ORDER BY created_at DESC, kid`)
        : await this.db.all(`SELECT * FROM tw_signing_key WHERE tenant = ? ORDER BY created_at DESC, kid`, [tenant]);
    return rows.map(toKey);
  }
  async retireSigningKey(kid: string, at: number): Promise<void> {
    await this.db.run(`UPDATE tw_signing_key SET retired_at = ? WHERE kid = ? AND retired_at IS NULL`, [at, kid]);
  }
  async deleteSigningKey(kid: string): Promise<void> {
    await this.db.run(`DELETE FROM tw_signing_key WHERE kid = ?`, [kid]);
  }
  async setSigningKeyPrivate(kid: string, privateJwk: string): Promise<void> {
    await this.db.run(`UPDATE tw_signing_key SET private_jwk = ? WHERE kid = ?`, [privateJwk, kid]);
  }

  async addBlockingCondition(c: Omit<BlockingConditionRecord, 'id' | 'createdAt'>): Promise<BlockingConditionRecord> {
    const rec: BlockingConditionRecord = { ...c, id: randomUUID(), createdAt: Date.now() };
    await this.db.run(`INSERT INTO tw_blocking_condition (id, tenant, type, value, invert, created_at) VALUES (?, ?, ?, ?, ?, ?)`, [
      rec.id,
      rec.tenant,
      rec.type,
      rec.value,
      rec.invert ? 1 : 0,
      rec.createdAt,
    ]);
    return rec;
  }
  async listBlockingConditions(tenant?: string): Promise<BlockingConditionRecord[]> {
    const rows =
      tenant === undefined
        ? await this.db.all(`SELECT * FROM tw_blocking_condition ORDER BY created_at, id`)
        : await this.db.all(`SELECT * FROM tw_blocking_condition WHERE tenant = ? ORDER BY created_at, id`, [tenant]);
    return rows.map((r) => ({
      id: str(r.id),
      tenant: str(r.tenant) || SUPER_TENANT,
      type: str(r.type) as BlockingConditionRecord['type'],
      value: str(r.value),
      invert: num(r.invert) !== 0,
      createdAt: num(r.created_at),
    }));
  }
  async deleteBlockingCondition(id: string, tenant?: string): Promise<BlockingConditionRecord | undefined> {
    const found = (await this.listBlockingConditions(tenant)).find((c) => c.id === id);
    if (found === undefined) return undefined;
    await this.db.run(`DELETE FROM tw_blocking_condition WHERE id = ? AND tenant = ?`, [id, found.tenant]);
    return found;
  }

  async addWorkflowTask(
    t: Omit<WorkflowTaskRecord, 'createdAt' | 'deliveredAt' | 'attempts' | 'lastError' | 'nextAttemptAt' | 'decision'>,
  ): Promise<WorkflowTaskRecord> {
    const rec: WorkflowTaskRecord = {
      ...t,
      createdAt: Date.now(),
      deliveredAt: null,
      attempts: 0,
      lastError: '',
      nextAttemptAt: null,
      decision: null,
    };
    await this.db.run(
      `INSERT INTO tw_workflow_task (id, tenant, type, requester, entity, description, attributes, executor, created_at, delivered_at, attempts, last_error, next_attempt_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, 0, '', NULL)`,
      [
        rec.id,
        rec.tenant,
        rec.type,
        rec.requester,
        rec.entity,
        rec.description,
        JSON.stringify(rec.attributes),
        rec.executor,
        rec.createdAt,
      ],
    );
    return rec;
  }
  async getWorkflowTask(id: string): Promise<WorkflowTaskRecord | undefined> {
    const r = (await this.db.all(`${TASK_SELECT} WHERE t.id = ?`, [id]))[0];
    return r === undefined ? undefined : toTask(r);
  }
  async listWorkflowTasks(
    filter: { tenant?: string; type?: string; entity?: string; pending?: boolean } = {},
  ): Promise<WorkflowTaskRecord[]> {
    const where: string[] = [];
    const params: Param[] = [];
    if (filter.entity !== undefined) {
      where.push('t.entity = ?');
      params.push(filter.entity);
    }
    if (filter.tenant !== undefined) {
      where.push('t.tenant = ?');
      params.push(filter.tenant);
    }
    if (filter.type !== undefined) {
      where.push('t.type = ?');
      params.push(filter.type);
    }
    if (filter.pending !== undefined) where.push(filter.pending ? 'd.task_id IS NULL' : 'd.task_id IS NOT NULL');
    return (
      await this.db.all(`${TASK_SELECT}${where.length > 0 ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY t.created_at DESC, t.id`, params)
    ).map(toTask);
  }
  async setWorkflowDelivery(
    id: string,
    d: { attempts: number; lastError: string; nextAttemptAt: number | null; deliveredAt: number | null },
  ): Promise<void> {
    await this.db.run(`UPDATE tw_workflow_task SET attempts = ?, last_error = ?, next_attempt_at = ?, delivered_at = ? WHERE id = ?`, [
      d.attempts,
      d.lastError,
      d.nextAttemptAt,
      d.deliveredAt,
      id,
    ]);
  }
  async decideWorkflowTask(id: string, d: WorkflowDecisionRecord): Promise<boolean> {
    try {
      await this.db.run(`INSERT INTO tw_workflow_decision (task_id, status, decided_by, decided_at, comment) VALUES (?, ?, ?, ?, ?)`, [
        id,
        d.status,
        d.by,
        d.at,
        d.comment,
      ]);
      return true;
    } catch (err) {
      if (err instanceof StoreError && err.code === 'STORE_CONFLICT') return false;
      throw err;
    }
  }
  async listWorkflowExecutors(tenant: string): Promise<{ type: string; executor: string }[]> {
    return (await this.db.all(`SELECT type, executor FROM tw_workflow_executor WHERE tenant = ? ORDER BY type`, [tenant])).map((r) => ({
      type: str(r.type),
      executor: str(r.executor),
    }));
  }
  async setWorkflowExecutor(tenant: string, type: string, executor: string): Promise<void> {
    // One statement each way round: an UPSERT is written differently by SQLite, PostgreSQL and MySQL.
    await this.db.run(`DELETE FROM tw_workflow_executor WHERE tenant = ? AND type = ?`, [tenant, type]);
    await this.db.run(`INSERT INTO tw_workflow_executor (tenant, type, executor) VALUES (?, ?, ?)`, [tenant, type, executor]);
  }

  async cleanup(now: number, keysBefore: number): Promise<{ refreshTokens: number; revoked: number; keys: number }> {
    const refreshTokens = await this.db.run(`DELETE FROM tw_refresh_token WHERE expires_at <= ?`, [now]);
    const revoked = await this.db.run(`DELETE FROM tw_revoked_token WHERE expires_at <= ?`, [now]);
    const keys = await this.db.run(`DELETE FROM tw_signing_key WHERE retired_at IS NOT NULL AND retired_at <= ?`, [keysBefore]);
    return { refreshTokens, revoked, keys };
  }

  close(): Promise<void> {
    return this.db.close();
  }
}
