/**
 * What the developer portal's self-service keeps (docs/self-service.md), as rows and as the store's face
 * (SelfServiceStore): types only, read by the store's face (types.ts) and kept by selfservice.ts.
 */

export type MailState = 'pending' | 'sent' | 'failed';

/** One mail of the outbox. */
export interface MailRecord {
  readonly id: string;
  readonly tenant: string;
  /** What it is: `confirm`, `recover`, `new-version`. */
  readonly kind: string;
  readonly recipient: string;
  readonly subject: string;
  readonly body: string;
  readonly state: MailState;
  readonly attempts: number;
  /** When it is tried next (epoch ms). */
  readonly nextAt: number;
  /** The last failure's code and message (never a credential: lib/mail/outbox.ts). */
  readonly lastError: string;
  readonly createdAt: number;
  readonly sentAt: number | null;
}

export interface UserProfile {
  readonly username: string;
  readonly tenant: string;
  readonly email: string;
  readonly organization: string;
  /** The e-mail address was confirmed by its link (or needs no confirmation). */
  readonly confirmed: boolean;
  readonly createdAt: number;
}

export type LinkPurpose = 'confirm' | 'recover';

export interface AccountLink {
  readonly tokenHash: string;
  readonly purpose: LinkPurpose;
  readonly username: string;
  readonly expiresAt: number;
  readonly usedAt: number | null;
}

/** A comment or reply on an API (board `api:<context>:<version>`), or a forum topic or reply (board `forum`). */
export interface Post {
  readonly id: string;
  readonly tenant: string;
  readonly board: string;
  /** '' for a comment or topic; the comment or topic replied to otherwise. */
  readonly parentId: string;
  /** A forum topic's title ('' otherwise). */
  readonly title: string;
  readonly author: string;
  readonly body: string;
  readonly createdAt: number;
}

export interface RatingSummary {
  readonly count: number;
  /** The mean of the ratings, undefined without any. */
  readonly average: number | undefined;
  /** The asking user's own rating. */
  readonly mine: number | undefined;
}

export interface SelfServiceStore {
  enqueueMail(m: Pick<MailRecord, 'kind' | 'recipient' | 'subject' | 'body'> & { tenant?: string }, now: number): Promise<MailRecord>;
  /** Pending mails due at `now`, oldest first, at most `limit`. */
  dueMails(now: number, limit: number): Promise<MailRecord[]>;
  /** Takes a due mail for one attempt (its next try moved to `until`): true only for the one caller that did. */
  claimMail(id: string, dueAt: number, until: number): Promise<boolean>;
  markMailSent(id: string, at: number, attempts: number): Promise<void>;
  /** A failed attempt: `state` pending (tried again at `nextAt`) or failed (no more tries). */
  markMailAttempt(id: string, attempts: number, state: 'pending' | 'failed', nextAt: number, error: string): Promise<void>;
  listMails(): Promise<MailRecord[]>;

  saveProfile(p: Omit<UserProfile, 'createdAt'>, now: number): Promise<UserProfile>;
  getProfile(username: string): Promise<UserProfile | undefined>;
  /** Profiles with this e-mail address (compared as stored: lower case). */
  profilesByEmail(email: string): Promise<UserProfile[]>;
  /** Users of a tenant with this organisation. */
  profilesByOrganization(tenant: string, organization: string): Promise<UserProfile[]>;
  confirmProfile(username: string): Promise<boolean>;
  deleteProfile(username: string): Promise<void>;

  addLink(l: Omit<AccountLink, 'usedAt'>, now: number): Promise<void>;
  /** Uses a link: the link when this call used it first and it had not expired, undefined otherwise. */
  useLink(tokenHash: string, purpose: LinkPurpose, now: number): Promise<AccountLink | undefined>;

  addPost(p: Omit<Post, 'id' | 'createdAt'>, now: number): Promise<Post>;
  getPost(id: string): Promise<Post | undefined>;
  /** Posts of a board, oldest first (replies included), at most `limit`. */
  listPosts(tenant: string, board: string, limit: number): Promise<Post[]>;
  countPosts(tenant: string, board: string): Promise<number>;
  /** Deletes a post and its replies; how many rows went. */
  deletePost(id: string): Promise<number>;

  /** Sets (replaces) a user's rating of a board. */
  rate(tenant: string, board: string, username: string, rating: number, now: number): Promise<void>;
  ratings(tenant: string, board: string, username: string | undefined): Promise<RatingSummary>;
}
