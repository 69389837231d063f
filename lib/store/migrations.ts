/**
 * Versioned schema migrations, applied in order at start (docs/key-manager.md, "Store").
 * A migration is never edited once released: a change is a new entry. The SQL is
 * the common subset of SQLite, PostgreSQL and MySQL/MariaDB: VARCHAR keys (MySQL cannot index TEXT
 * without a prefix length), BIGINT epoch milliseconds, INTEGER flags.
 */
export interface Migration {
  readonly version: number;
  readonly description: string;
  readonly statements: readonly string[];
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: 'applications, clients, subscriptions, users, refresh tokens, revocations, signing keys',
    statements: [
      `CREATE TABLE tw_application (
        id VARCHAR(64) NOT NULL PRIMARY KEY,
        name VARCHAR(255) NOT NULL,
        owner VARCHAR(255) NOT NULL,
        tier VARCHAR(255) NOT NULL,
        description TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        CONSTRAINT tw_application_name UNIQUE (owner, name))`,
      `CREATE TABLE tw_client (
        consumer_key VARCHAR(128) NOT NULL PRIMARY KEY,
        secret_hash VARCHAR(128) NOT NULL,
        application_id VARCHAR(64) NOT NULL,
        key_type VARCHAR(16) NOT NULL,
        grant_types TEXT NOT NULL,
        callback_url TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        CONSTRAINT tw_client_app_type UNIQUE (application_id, key_type))`,
      `CREATE TABLE tw_subscription (
        id VARCHAR(64) NOT NULL PRIMARY KEY,
        application_id VARCHAR(64) NOT NULL,
        api_context VARCHAR(255) NOT NULL,
        api_version VARCHAR(64) NOT NULL,
        tier VARCHAR(255) NOT NULL,
        state VARCHAR(32) NOT NULL,
        created_at BIGINT NOT NULL,
        CONSTRAINT tw_subscription_app_api UNIQUE (application_id, api_context, api_version))`,
      `CREATE TABLE tw_user (
        username VARCHAR(255) NOT NULL PRIMARY KEY,
        password_hash VARCHAR(255) NOT NULL,
        salt VARCHAR(64) NOT NULL,
        hash_method VARCHAR(16) NOT NULL,
        roles TEXT NOT NULL,
        created_at BIGINT NOT NULL)`,
      `CREATE TABLE tw_refresh_token (
        token_hash VARCHAR(128) NOT NULL PRIMARY KEY,
        family VARCHAR(64) NOT NULL,
        consumer_key VARCHAR(128) NOT NULL,
        subject VARCHAR(255) NOT NULL,
        scope TEXT NOT NULL,
        aut VARCHAR(32) NOT NULL,
        key_type VARCHAR(16) NOT NULL,
        issued_at BIGINT NOT NULL,
        expires_at BIGINT NOT NULL,
        used_at BIGINT,
        revoked INTEGER NOT NULL)`,
      `CREATE INDEX tw_refresh_token_family ON tw_refresh_token (family)`,
      `CREATE TABLE tw_revoked_token (
        jti VARCHAR(128) NOT NULL PRIMARY KEY,
        expires_at BIGINT NOT NULL,
        revoked_at BIGINT NOT NULL)`,
      `CREATE TABLE tw_signing_key (
        kid VARCHAR(128) NOT NULL PRIMARY KEY,
        alg VARCHAR(16) NOT NULL,
        private_jwk TEXT NOT NULL,
        public_jwk TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        retired_at BIGINT)`,
    ],
  },
  {
    version: 2,
    description: 'refresh tokens remember the access token issued with them, so reuse detection can revoke it',
    statements: [
      `ALTER TABLE tw_refresh_token ADD COLUMN access_jti VARCHAR(128)`,
      `ALTER TABLE tw_refresh_token ADD COLUMN access_expires_at BIGINT`,
    ],
  },
  {
    version: 3,
    description: 'blocking conditions (throttling, 900805): API context, application, user, IP, IP range',
    statements: [
      `CREATE TABLE tw_blocking_condition (
        id VARCHAR(64) NOT NULL PRIMARY KEY,
        type VARCHAR(16) NOT NULL,
        value VARCHAR(255) NOT NULL,
        invert INTEGER NOT NULL,
        created_at BIGINT NOT NULL,
        CONSTRAINT tw_blocking_condition_value UNIQUE (type, value, invert))`,
    ],
  },
  {
    version: 4,
    // docs/tenants.md. ADD COLUMN with a constant default fills every existing row on SQLite, PostgreSQL
    // and MySQL/MariaDB alike: everything written before is the super tenant's. Signing keys got their
    // tenant later (version 9).
    description:
      'tenants, and the tenant of every application, client, subscription, user, refresh token, revocation and blocking condition',
    statements: [
      `CREATE TABLE tw_tenant (
        domain VARCHAR(253) NOT NULL PRIMARY KEY,
        admin VARCHAR(255) NOT NULL,
        package VARCHAR(32) NOT NULL,
        active INTEGER NOT NULL,
        created_at BIGINT NOT NULL)`,
      ...['tw_application', 'tw_client', 'tw_subscription', 'tw_user', 'tw_refresh_token', 'tw_revoked_token', 'tw_blocking_condition'].map(
        (table) => `ALTER TABLE ${table} ADD COLUMN tenant VARCHAR(253) NOT NULL DEFAULT 'carbon.super'`,
      ),
      `CREATE INDEX tw_application_tenant ON tw_application (tenant)`,
      `CREATE INDEX tw_user_tenant ON tw_user (tenant)`,
    ],
  },
  {
    version: 5,
    // docs/workflows.md. One decision per task: its primary key refuses a second (409 to the caller).
    description: 'workflow tasks, their decisions and the executors tenants chose; the approval status of applications',
    statements: [
      `CREATE TABLE tw_workflow_task (
        id VARCHAR(64) NOT NULL PRIMARY KEY,
        tenant VARCHAR(253) NOT NULL,
        type VARCHAR(64) NOT NULL,
        requester VARCHAR(255) NOT NULL,
        entity VARCHAR(255) NOT NULL,
        description TEXT NOT NULL,
        attributes TEXT NOT NULL,
        executor VARCHAR(16) NOT NULL,
        created_at BIGINT NOT NULL,
        delivered_at BIGINT,
        attempts INTEGER NOT NULL,
        last_error TEXT NOT NULL,
        next_attempt_at BIGINT)`,
      `CREATE INDEX tw_workflow_task_tenant ON tw_workflow_task (tenant)`,
      `CREATE TABLE tw_workflow_decision (
        task_id VARCHAR(64) NOT NULL PRIMARY KEY,
        status VARCHAR(16) NOT NULL,
        decided_by VARCHAR(255) NOT NULL,
        decided_at BIGINT NOT NULL,
        comment TEXT NOT NULL)`,
      `CREATE TABLE tw_workflow_executor (
        tenant VARCHAR(253) NOT NULL,
        type VARCHAR(64) NOT NULL,
        executor VARCHAR(16) NOT NULL,
        PRIMARY KEY (tenant, type))`,
      `ALTER TABLE tw_application ADD COLUMN status VARCHAR(16) NOT NULL DEFAULT 'APPROVED'`,
    ],
  },
  {
    // docs/self-service.md. Version 5 is left to the workflow tables of the same release, so both merge in
    // either order. Accounts that exist already have no profile row: they count as confirmed.
    version: 6,
    description:
      "the developer portal's self-service: the mail outbox, user profiles (e-mail, organisation, confirmation), single-use account links, comments, forum posts and ratings",
    statements: [
      `CREATE TABLE tw_mail (
        id VARCHAR(64) NOT NULL PRIMARY KEY,
        tenant VARCHAR(253) NOT NULL,
        kind VARCHAR(32) NOT NULL,
        recipient VARCHAR(320) NOT NULL,
        subject TEXT NOT NULL,
        body TEXT NOT NULL,
        state VARCHAR(16) NOT NULL,
        attempts INTEGER NOT NULL,
        next_at BIGINT NOT NULL,
        last_error TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        sent_at BIGINT)`,
      `CREATE INDEX tw_mail_due ON tw_mail (state, next_at)`,
      `CREATE TABLE tw_user_profile (
        username VARCHAR(255) NOT NULL PRIMARY KEY,
        tenant VARCHAR(253) NOT NULL,
        email VARCHAR(320) NOT NULL,
        organization VARCHAR(255) NOT NULL,
        confirmed INTEGER NOT NULL,
        created_at BIGINT NOT NULL)`,
      `CREATE INDEX tw_user_profile_email ON tw_user_profile (email)`,
      `CREATE INDEX tw_user_profile_org ON tw_user_profile (tenant, organization)`,
      `CREATE TABLE tw_account_link (
        token_hash VARCHAR(128) NOT NULL PRIMARY KEY,
        purpose VARCHAR(16) NOT NULL,
        username VARCHAR(255) NOT NULL,
        expires_at BIGINT NOT NULL,
        used_at BIGINT,
        created_at BIGINT NOT NULL)`,
      `CREATE TABLE tw_post (
        id VARCHAR(64) NOT NULL PRIMARY KEY,
        tenant VARCHAR(253) NOT NULL,
        board VARCHAR(255) NOT NULL,
        parent_id VARCHAR(64) NOT NULL,
        title VARCHAR(255) NOT NULL,
        author VARCHAR(255) NOT NULL,
        body TEXT NOT NULL,
        created_at BIGINT NOT NULL)`,
      `CREATE INDEX tw_post_board ON tw_post (tenant, board)`,
      `CREATE TABLE tw_rating (
        tenant VARCHAR(253) NOT NULL,
        board VARCHAR(255) NOT NULL,
        username VARCHAR(255) NOT NULL,
        rating INTEGER NOT NULL,
        created_at BIGINT NOT NULL,
        CONSTRAINT tw_rating_one UNIQUE (tenant, board, username))`,
    ],
  },
  {
    version: 7,
    // docs/operations.md, "Two databases": [database.apim_db] and [database.shared_db] are one database
    // when they hold the same id, however their URLs are spelled (lib/store/split.ts databaseId).
    description: "the database's own id, which tells whether apim_db and shared_db are one database",
    statements: [`CREATE TABLE tw_database (name VARCHAR(16) NOT NULL PRIMARY KEY, id VARCHAR(64) NOT NULL)`],
  },
  {
    version: 8,
    // docs/tenants.md, "Blocking conditions": each tenant's admin has its own, so a condition is unique within
    // its tenant, not across the deployment. A UNIQUE constraint cannot be dropped on SQLite, so the table is
    // made again under a new name, filled with every row as it is (the tenant of migration 4 included: rows
    // from before tenants stay the super tenant's), and renamed; RENAME TO is common to the three databases.
    // The constraint has a name of its own: PostgreSQL's index names are unique per schema.
    description: "blocking conditions are unique within their tenant (each tenant's admin has its own)",
    statements: [
      `CREATE TABLE tw_blocking_condition_8 (
        id VARCHAR(64) NOT NULL PRIMARY KEY,
        tenant VARCHAR(253) NOT NULL,
        type VARCHAR(16) NOT NULL,
        value VARCHAR(255) NOT NULL,
        invert INTEGER NOT NULL,
        created_at BIGINT NOT NULL,
        CONSTRAINT tw_blocking_condition_tenant_value UNIQUE (tenant, type, value, invert))`,
      `INSERT INTO tw_blocking_condition_8 (id, tenant, type, value, invert, created_at)
        SELECT id, tenant, type, value, invert, created_at FROM tw_blocking_condition`,
      `DROP TABLE tw_blocking_condition`,
      `ALTER TABLE tw_blocking_condition_8 RENAME TO tw_blocking_condition`,
    ],
  },
  {
    version: 9,
    // docs/tenants.md, "Not yet": a ring of signing keys per tenant, as the reference gives each tenant its
    // own keystore (not yet used to sign). ADD COLUMN with a constant default fills every existing row on the
    // three databases (as migration 4 did), so the keys from before are the super tenant's: its kid and
    // its tokens do not change.
    description: "signing keys name their tenant: each tenant's tokens are signed by its own key ring",
    statements: [
      `ALTER TABLE tw_signing_key ADD COLUMN tenant VARCHAR(253) NOT NULL DEFAULT 'carbon.super'`,
      `CREATE INDEX tw_signing_key_tenant ON tw_signing_key (tenant)`,
    ],
  },
  {
    version: 10,
    // docs/tenants.md, "Billing packages": a tenant's bytes through the gateway per calendar month (UTC,
    // 'YYYY-MM'), kept in the store so that every gateway process on the database (and every gateway-worker,
    // through its control plane) adds to one count, and a restart keeps it. A new month is a new row; old
    // months stay as a record of use. Plain CREATE TABLE with a composite primary key is common to the three
    // databases; bytes is BIGINT (a month's bytes pass 2^31 at 2 GiB).
    description: "tenants' bandwidth per calendar month, shared by every gateway of the store",
    statements: [
      `CREATE TABLE tw_tenant_bandwidth (
        tenant VARCHAR(253) NOT NULL,
        month VARCHAR(7) NOT NULL,
        bytes BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        PRIMARY KEY (tenant, month))`,
    ],
  },
];

export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]?.version ?? 0;
