/**
 * What the developer portal's self-service keeps (docs/self-service.md), in the tables of migration 6
 * (lib/store/migrations.ts), over the same SQL driver as the rest of the store, so SQLite, PostgreSQL and
 * MySQL/MariaDB alike hold it:
 *
 *   tw_mail           the outbox: mail to send, its attempts and next try (lib/mail/outbox.ts)
 *   tw_user_profile   a signed-up user's e-mail address, organisation and whether the address is confirmed
 *   tw_account_link   single-use links (confirmation, password recovery): only their SHA-256 digest
 *   tw_post           comments and replies on an API, forum topics and replies (board, parent)
 *   tw_rating         one rating (1 to 5) per user and API
 *
 * Every statement is one statement (each commits on its own); using a link is a conditional UPDATE whose
 * row count says whether this caller used it first.
 */
import { randomUUID } from 'node:crypto';
import type { Param, Row, SqlDriver } from './sql-driver';
import { SUPER_TENANT } from './types';

import type {
  AccountLink,
  LinkPurpose,
  MailRecord,
  MailState,
  Post,
  RatingSummary,
  SelfServiceStore,
  UserProfile,
} from './selfservice-types';

export type { AccountLink, LinkPurpose, MailRecord, MailState, Post, RatingSummary, SelfServiceStore, UserProfile };

const str = (v: unknown): string => (v === null || v === undefined ? '' : String(v));
const num = (v: unknown): number => (typeof v === 'number' ? v : Number(v));

function toMail(r: Row): MailRecord {
  return {
    id: str(r.id),
    tenant: str(r.tenant),
    kind: str(r.kind),
    recipient: str(r.recipient),
    subject: str(r.subject),
    body: str(r.body),
    state: str(r.state) as MailState,
    attempts: num(r.attempts),
    nextAt: num(r.next_at),
    lastError: str(r.last_error),
    createdAt: num(r.created_at),
    sentAt: r.sent_at === null || r.sent_at === undefined ? null : num(r.sent_at),
  };
}
function toProfile(r: Row): UserProfile {
  return {
    username: str(r.username),
    tenant: str(r.tenant),
    email: str(r.email),
    organization: str(r.organization),
    confirmed: num(r.confirmed) !== 0,
    createdAt: num(r.created_at),
  };
}
function toPost(r: Row): Post {
  return {
    id: str(r.id),
    tenant: str(r.tenant),
    board: str(r.board),
    parentId: str(r.parent_id),
    title: str(r.title),
    author: str(r.author),
    body: str(r.body),
    createdAt: num(r.created_at),
  };
}

export class SqlSelfServiceStore implements SelfServiceStore {
  constructor(private readonly db: SqlDriver) {}

  async enqueueMail(
    m: Pick<MailRecord, 'kind' | 'recipient' | 'subject' | 'body'> & { tenant?: string },
    now: number,
  ): Promise<MailRecord> {
    const rec: MailRecord = {
      id: randomUUID(),
      tenant: m.tenant ?? SUPER_TENANT,
      kind: m.kind,
      recipient: m.recipient,
      subject: m.subject,
      body: m.body,
      state: 'pending',
      attempts: 0,
      nextAt: now,
      lastError: '',
      createdAt: now,
      sentAt: null,
    };
    await this.db.run(
      `INSERT INTO tw_mail (id, tenant, kind, recipient, subject, body, state, attempts, next_at, last_error, created_at, sent_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)`,
      [rec.id, rec.tenant, rec.kind, rec.recipient, rec.subject, rec.body, rec.state, 0, now, '', now],
    );
    return rec;
  }
  async dueMails(now: number, limit: number): Promise<MailRecord[]> {
    return (
      await this.db.all(
        `SELECT * FROM tw_mail WHERE state = 'pending' AND next_at <= ? ORDER BY next_at, created_at LIMIT ${Math.max(1, Math.floor(limit))}`,
        [now],
      )
    ).map(toMail);
  }
  async claimMail(id: string, dueAt: number, until: number): Promise<boolean> {
    return (await this.db.run(`UPDATE tw_mail SET next_at = ? WHERE id = ? AND state = 'pending' AND next_at = ?`, [until, id, dueAt])) > 0;
  }
  async markMailSent(id: string, at: number, attempts: number): Promise<void> {
    await this.db.run(`UPDATE tw_mail SET state = 'sent', sent_at = ?, attempts = ?, last_error = '' WHERE id = ?`, [at, attempts, id]);
  }
  async markMailAttempt(id: string, attempts: number, state: 'pending' | 'failed', nextAt: number, error: string): Promise<void> {
    await this.db.run(`UPDATE tw_mail SET state = ?, attempts = ?, next_at = ?, last_error = ? WHERE id = ?`, [
      state,
      attempts,
      nextAt,
      error.slice(0, 1000),
      id,
    ]);
  }
  async listMails(): Promise<MailRecord[]> {
    return (await this.db.all(`SELECT * FROM tw_mail ORDER BY created_at, id`)).map(toMail);
  }

  async saveProfile(p: Omit<UserProfile, 'createdAt'>, now: number): Promise<UserProfile> {
    await this.db.run(`DELETE FROM tw_user_profile WHERE username = ?`, [p.username]);
    await this.db.run(
      `INSERT INTO tw_user_profile (username, tenant, email, organization, confirmed, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
      [p.username, p.tenant, p.email.toLowerCase(), p.organization, p.confirmed ? 1 : 0, now],
    );
    return { ...p, email: p.email.toLowerCase(), createdAt: now };
  }
  async getProfile(username: string): Promise<UserProfile | undefined> {
    const r = (await this.db.all(`SELECT * FROM tw_user_profile WHERE username = ?`, [username]))[0];
    return r === undefined ? undefined : toProfile(r);
  }
  async profilesByEmail(email: string): Promise<UserProfile[]> {
    return (await this.db.all(`SELECT * FROM tw_user_profile WHERE email = ? ORDER BY username`, [email.toLowerCase()])).map(toProfile);
  }
  async profilesByOrganization(tenant: string, organization: string): Promise<UserProfile[]> {
    return (
      await this.db.all(`SELECT * FROM tw_user_profile WHERE tenant = ? AND organization = ? ORDER BY username`, [tenant, organization])
    ).map(toProfile);
  }
  async confirmProfile(username: string): Promise<boolean> {
    await this.db.run(`UPDATE tw_user_profile SET confirmed = 1 WHERE username = ?`, [username]);
    return (await this.getProfile(username))?.confirmed === true;
  }
  async deleteProfile(username: string): Promise<void> {
    await this.db.run(`DELETE FROM tw_user_profile WHERE username = ?`, [username]);
  }

  async addLink(l: Omit<AccountLink, 'usedAt'>, now: number): Promise<void> {
    await this.db.run(
      `INSERT INTO tw_account_link (token_hash, purpose, username, expires_at, used_at, created_at) VALUES (?, ?, ?, ?, NULL, ?)`,
      [l.tokenHash, l.purpose, l.username, l.expiresAt, now],
    );
  }
  async useLink(tokenHash: string, purpose: LinkPurpose, now: number): Promise<AccountLink | undefined> {
    const won = await this.db.run(
      `UPDATE tw_account_link SET used_at = ? WHERE token_hash = ? AND purpose = ? AND used_at IS NULL AND expires_at > ?`,
      [now, tokenHash, purpose, now],
    );
    if (won === 0) return undefined;
    const r = (await this.db.all(`SELECT * FROM tw_account_link WHERE token_hash = ?`, [tokenHash]))[0];
    return r === undefined
      ? undefined
      : {
          tokenHash: str(r.token_hash),
          purpose: str(r.purpose) as LinkPurpose,
          username: str(r.username),
          expiresAt: num(r.expires_at),
          usedAt: num(r.used_at),
        };
  }

  async addPost(p: Omit<Post, 'id' | 'createdAt'>, now: number): Promise<Post> {
    const rec: Post = { ...p, id: randomUUID(), createdAt: now };
    await this.db.run(
      `INSERT INTO tw_post (id, tenant, board, parent_id, title, author, body, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      [rec.id, rec.tenant, rec.board, rec.parentId, rec.title, rec.author, rec.body, now],
    );
    return rec;
  }
  async getPost(id: string): Promise<Post | undefined> {
    const r = (await this.db.all(`SELECT * FROM tw_post WHERE id = ?`, [id]))[0];
    return r === undefined ? undefined : toPost(r);
  }
  async listPosts(tenant: string, board: string, limit: number): Promise<Post[]> {
    return (
      await this.db.all(
        `SELECT * FROM tw_post WHERE tenant = ? AND board = ? ORDER BY created_at, id LIMIT ${Math.max(1, Math.floor(limit))}`,
        [tenant, board],
      )
    ).map(toPost);
  }
  async countPosts(tenant: string, board: string): Promise<number> {
    return num((await this.db.all(`SELECT COUNT(*) AS n FROM tw_post WHERE tenant = ? AND board = ?`, [tenant, board]))[0]?.n ?? 0);
  }
  async deletePost(id: string): Promise<number> {
    const replies = await this.db.run(`DELETE FROM tw_post WHERE parent_id = ?`, [id]);
    return replies + (await this.db.run(`DELETE FROM tw_post WHERE id = ?`, [id]));
  }

  async rate(tenant: string, board: string, username: string, rating: number, now: number): Promise<void> {
    const params: Param[] = [tenant, board, username];
    await this.db.run(`DELETE FROM tw_rating WHERE tenant = ? AND board = ? AND username = ?`, params);
    await this.db.run(`INSERT INTO tw_rating (tenant, board, username, rating, created_at) VALUES (?, ?, ?, ?, ?)`, [
      ...params,
      rating,
      now,
    ]);
  }
  async ratings(tenant: string, board: string, username: string | undefined): Promise<RatingSummary> {
    const rows = await this.db.all(`SELECT username, rating FROM tw_rating WHERE tenant = ? AND board = ?`, [tenant, board]);
    const values = rows.map((r) => num(r.rating));
    const mine = username === undefined ? undefined : rows.find((r) => str(r.username) === username);
    return {
      count: values.length,
      average: values.length === 0 ? undefined : values.reduce((a, b) => a + b, 0) / values.length,
      mine: mine === undefined ? undefined : num(mine.rating),
    };
  }
}
