/**
 * Comments with replies and ratings on an API's page, and the forum of a tenant (docs/self-service.md,
 * "Comments, ratings and the forum"), each switched by `[apim.devportal] enable_comments`,
 * `enable_ratings` and `enable_forum`, kept in the store (tw_post, tw_rating).
 *
 * Anyone who may see an API's page reads its comments and average rating; signed-in users write, reply
 * and rate (one rating per user, 1 to 5: a new one replaces theirs). The forum is the signed-in user's
 * tenant's: topics and replies. Everything written is bounded (MAX_BODY, MAX_TITLE, MAX_POSTS per
 * board) and shown HTML-escaped with control and bidirectional characters spelled out (html.ts), so a
 * script in a comment is text. The tenant's admin (role admin of the same tenant) deletes any post of
 * that tenant with its replies.
 */
import { tenantOfContext } from '../keymanager/manage';
import type { Post } from '../store/selfservice';
import type { CatalogueEntry } from './catalogue';
import { type Call, problem, render, takeFlash } from './context';
import { buttonForm, csrfField, escapeHtml as h, field, seeOther, select } from './html';
import type { SelfService } from './selfservice';

/** Longest comment, reply or forum post (characters), and topic title. */
export const MAX_BODY = 2000;
export const MAX_TITLE = 200;
/** Posts one API or forum holds at most; the oldest are shown first. */
export const MAX_POSTS = 1000;

type ShownApi = CatalogueEntry & { api: NonNullable<CatalogueEntry['api']> };

/** The board of an API's comments and ratings: its context and version (the file's name may change with its state). */
export function apiBoard(api: { readonly context: string; readonly version: string }): string {
  return `api:${api.context}:${api.version}`.slice(0, 255);
}

const ADMIN_ROLES = ['admin', 'Internal/admin'];

/** Whether the signed-in user is the admin of `tenant`: role admin, and a user of that tenant. */
export function isTenantAdmin(c: Call, s: SelfService, tenant: string): boolean {
  const u = c.session.user;
  return u !== undefined && u.roles.some((r) => ADMIN_ROLES.includes(r)) && s.tenants.tenantOf(u.username) === tenant;
}

const when = (t: number): string => new Date(t).toISOString().replace('T', ' ').slice(0, 16);

function postHtml(c: Call, s: SelfService, p: Post, tenant: string, back: string): string {
  const del = isTenantAdmin(c, s, tenant)
    ? ` ${buttonForm(`/devportal/posts/${encodeURIComponent(p.id)}/delete`, 'Delete', c.session.csrf, { back }, `Delete the post of ${p.author}`)}`
    : '';
  return `<p class="meta"><strong>${h(p.author)}</strong> <span class="hint">${h(when(p.createdAt))} UTC</span>${del}</p><p class="post">${h(p.body)}</p>`;
}

/** Checks a posted text: trimmed, not empty, at most `max` characters. */
function text(c: Call, name: string, max: number): string | { error: string } {
  const v = (c.form.get(name) ?? '').trim();
  if (v === '') return { error: 'Write something first.' };
  if ([...v].length > max) return { error: `At most ${max} characters.` };
  return v;
}

/** The ratings and comments sections of an API's page ('' when both are off). */
export async function apiCommunityHtml(c: Call, e: ShownApi): Promise<string> {
  const s = c.parts.selfService;
  if (s === undefined) return '';
  const tenant = tenantOfContext(e.api.context);
  const board = apiBoard(e.api);
  const base = `/devportal/apis/${encodeURIComponent(e.id)}`;
  const user = c.session.user;
  let out = '';
  if (s.settings.ratings) {
    const r = await s.store.ratings(tenant, board, user?.username);
    const avg =
      r.average === undefined
        ? 'No ratings yet.'
        : `<strong id="rating-average">${r.average.toFixed(1)}</strong> of 5 (<span id="rating-count">${r.count}</span> rating${r.count === 1 ? '' : 's'}).`;
    const form =
      user === undefined
        ? ''
        : `<form method="post" action="${base}/rate">${csrfField(c.session.csrf)}
${select({
  id: 'rating',
  label: 'Your rating',
  options: [
    ['5', '5 (best)'],
    ['4', '4'],
    ['3', '3'],
    ['2', '2'],
    ['1', '1'],
  ],
  value: String(r.mine ?? 5),
})}
<button type="submit">Rate</button></form>`;
    out += `<section aria-labelledby="ratings"><h2 id="ratings">Rating</h2><p>${avg}</p>${form}</section>\n`;
  }
  if (s.settings.comments) {
    const posts = await s.store.listPosts(tenant, board, MAX_POSTS);
    const top = posts.filter((p) => p.parentId === '');
    const items = top
      .map((p) => {
        const replies = posts
          .filter((x) => x.parentId === p.id)
          .map((x) => `<li class="reply">${postHtml(c, s, x, tenant, base)}</li>`)
          .join('');
        const reply =
          user === undefined
            ? ''
            : `<details><summary>Reply</summary><form method="post" action="${base}/comments">${csrfField(c.session.csrf)}<input type="hidden" name="parent" value="${h(p.id)}">
${field({ id: `reply-${p.id}`, label: `Reply to ${p.author}`, type: 'textarea' }).replace(`name="reply-${p.id}"`, 'name="body"')}
<button type="submit">Reply</button></form></details>`;
        return `<li class="comment">${postHtml(c, s, p, tenant, base)}${replies !== '' ? `<ul>${replies}</ul>` : ''}${reply}</li>`;
      })
      .join('\n');
    const form =
      user === undefined
        ? '<p><a href="/devportal/login">Sign in</a> to comment.</p>'
        : `<form method="post" action="${base}/comments">${csrfField(c.session.csrf)}
${field({ id: 'comment', label: 'Your comment', type: 'textarea', hint: `At most ${MAX_BODY} characters` }).replace('name="comment"', 'name="body"')}
<button type="submit">Comment</button></form>`;
    out += `<section aria-labelledby="comments"><h2 id="comments">Comments</h2>${top.length === 0 ? '<p>No comments yet.</p>' : `<ul class="comments">${items}</ul>`}${form}</section>\n`;
  }
  return out;
}

/** POST /devportal/apis/{id}/rate and /comments for a signed-in user; false for any other path. */
export async function apiCommunityPost(c: Call, e: ShownApi, action: string): Promise<boolean> {
  const s = c.parts.selfService;
  const user = c.session.user;
  if (s === undefined || user === undefined || c.method !== 'POST') return false;
  const tenant = tenantOfContext(e.api.context);
  const board = apiBoard(e.api);
  const back = `/devportal/apis/${encodeURIComponent(e.id)}`;
  if (action === 'rate' && s.settings.ratings) {
    const r = Number(c.form.get('rating'));
    if (!Number.isInteger(r) || r < 1 || r > 5) {
      problem(c, 'devportal', 400, 'Cannot rate', 'A rating is a whole number from 1 to 5.');
      return true;
    }
    await s.store.rate(tenant, board, user.username, r, Date.now());
    seeOther(c.res, `${back}#ratings`);
    return true;
  }
  if (action === 'comments' && s.settings.comments) {
    const body = text(c, 'body', MAX_BODY);
    if (typeof body !== 'string') {
      problem(c, 'devportal', 400, 'Cannot comment', body.error);
      return true;
    }
    const parentId = c.form.get('parent') ?? '';
    if (parentId !== '') {
      const parent = await s.store.getPost(parentId);
      // Replies go to a comment of this API, one level deep.
      if (parent === undefined || parent.board !== board || parent.tenant !== tenant || parent.parentId !== '') {
        problem(c, 'devportal', 400, 'Cannot reply', 'The comment replied to is not on this API.');
        return true;
      }
    }
    if ((await s.store.countPosts(tenant, board)) >= MAX_POSTS) {
      problem(
        c,
        'devportal',
        409,
        'Cannot comment',
        `This API has ${MAX_POSTS} comments, the most it holds; an admin may delete old ones.`,
      );
      return true;
    }
    await s.store.addPost({ tenant, board, parentId, title: '', author: user.username, body }, Date.now());
    seeOther(c.res, `${back}#comments`);
    return true;
  }
  return false;
}

const FORUM = 'forum';

async function forumPage(
  c: Call,
  s: SelfService,
  tenant: string,
  errors: { title?: string; body?: string } = {},
  status = 200,
): Promise<void> {
  const posts = await s.store.listPosts(tenant, FORUM, MAX_POSTS);
  const topics = posts.filter((p) => p.parentId === '');
  const rows = topics
    .map(
      (t) =>
        `<tr><td><a href="/devportal/forum/${encodeURIComponent(t.id)}">${h(t.title)}</a></td><td>${h(t.author)}</td><td>${posts.filter((p) => p.parentId === t.id).length}</td><td>${h(when(t.createdAt))}</td></tr>`,
    )
    .join('\n');
  render(
    c,
    'devportal',
    `Forum${tenant !== 'carbon.super' ? ` of ${tenant}` : ''}`,
    `${takeFlash(c)}
<div class="table"><table><thead><tr><th scope="col">Topic</th><th scope="col">By</th><th scope="col">Replies</th><th scope="col">Started (UTC)</th></tr></thead><tbody>${rows}</tbody></table></div>
<h2>New topic</h2>
<form method="post" action="/devportal/forum">${csrfField(c.session.csrf)}
${field({ id: 'title', label: 'Title', required: true, ...(errors.title !== undefined ? { error: errors.title } : {}) })}
${field({ id: 'body', label: 'Message', type: 'textarea', hint: `At most ${MAX_BODY} characters`, ...(errors.body !== undefined ? { error: errors.body } : {}) })}
<button type="submit">Start topic</button></form>`,
    status,
  );
}

async function topicPage(c: Call, s: SelfService, tenant: string, topic: Post, error?: string, status = 200): Promise<void> {
  const back = `/devportal/forum/${encodeURIComponent(topic.id)}`;
  const replies = (await s.store.listPosts(tenant, FORUM, MAX_POSTS)).filter((p) => p.parentId === topic.id);
  render(
    c,
    'devportal',
    topic.title,
    `${takeFlash(c)}
<p><a href="/devportal/forum">All topics</a></p>
<div class="card">${postHtml(c, s, topic, tenant, '/devportal/forum')}</div>
<ul class="comments">${replies.map((r) => `<li class="reply">${postHtml(c, s, r, tenant, back)}</li>`).join('\n')}</ul>
<form method="post" action="${back}">${csrfField(c.session.csrf)}
${field({ id: 'body', label: 'Your reply', type: 'textarea', ...(error !== undefined ? { error } : {}) })}
<button type="submit">Reply</button></form>`,
    status,
  );
}

/** /devportal/forum and /devportal/posts/{id}/delete for a signed-in user; false for any other path. */
export async function communityPage(c: Call): Promise<boolean> {
  const s = c.parts.selfService;
  const user = c.session.user;
  const [a, id, action] = c.segs;
  if (s === undefined || user === undefined) return false;
  const tenant = s.tenants.tenantOf(user.username);
  if (a === 'forum' && s.settings.forum) {
    if (id === undefined) {
      if (c.method === 'GET') await forumPage(c, s, tenant);
      else {
        const title = text(c, 'title', MAX_TITLE);
        const body = text(c, 'body', MAX_BODY);
        if (typeof title !== 'string' || typeof body !== 'string')
          await forumPage(
            c,
            s,
            tenant,
            { ...(typeof title !== 'string' ? { title: title.error } : {}), ...(typeof body !== 'string' ? { body: body.error } : {}) },
            400,
          );
        else if ((await s.store.countPosts(tenant, FORUM)) >= MAX_POSTS)
          problem(
            c,
            'devportal',
            409,
            'Forum full',
            `The forum holds ${MAX_POSTS} posts, the most it holds; an admin may delete old ones.`,
          );
        else {
          const t = await s.store.addPost({ tenant, board: FORUM, parentId: '', title, author: user.username, body }, Date.now());
          seeOther(c.res, `/devportal/forum/${encodeURIComponent(t.id)}`);
        }
      }
      return true;
    }
    const topic = await s.store.getPost(id);
    // Another tenant's topic is not found, as one that does not exist.
    if (topic === undefined || topic.tenant !== tenant || topic.board !== FORUM || topic.parentId !== '' || c.segs.length > 2) {
      problem(c, 'devportal', 404, 'No such topic', 'This forum has no such topic.');
      return true;
    }
    if (c.method === 'GET') await topicPage(c, s, tenant, topic);
    else {
      const body = text(c, 'body', MAX_BODY);
      if (typeof body !== 'string') await topicPage(c, s, tenant, topic, body.error, 400);
      else if ((await s.store.countPosts(tenant, FORUM)) >= MAX_POSTS)
        problem(c, 'devportal', 409, 'Forum full', `The forum holds ${MAX_POSTS} posts.`);
      else {
        await s.store.addPost({ tenant, board: FORUM, parentId: topic.id, title: '', author: user.username, body }, Date.now());
        seeOther(c.res, `/devportal/forum/${encodeURIComponent(topic.id)}`);
      }
    }
    return true;
  }
  if (a === 'posts' && id !== undefined && action === 'delete' && c.method === 'POST') {
    const p = await s.store.getPost(id);
    // Only the admin of the post's tenant deletes it; to anyone else it is not there.
    if (p === undefined || !isTenantAdmin(c, s, p.tenant)) {
      problem(c, 'devportal', 404, 'No such post', 'There is no such post you may delete.');
      return true;
    }
    const n = await s.store.deletePost(p.id);
    c.parts.logger.log('info', 'portal_post_deleted', { id: p.id, board: p.board, tenant: p.tenant, by: user.username, rows: n });
    c.session.flash = `<p class="notice" role="status">Post deleted${n > 1 ? ` with ${n - 1} repl${n === 2 ? 'y' : 'ies'}` : ''}.</p>`;
    const back = c.form.get('back') ?? '';
    seeOther(c.res, /^\/devportal\/(apis|forum)(\/[A-Za-z0-9._~%:-]+)?$/.test(back) ? back : '/devportal');
    return true;
  }
  return false;
}
