/**
 * `throughway dump | diff FILE | apply FILE [--dry-run] [--prune]` against a running node's
 * management port (docs/sync.md). `--url` names the node (default
 * http://localhost:9763); the admin's name comes from THROUGHWAY_ADMIN_USER (default admin), its password
 * from THROUGHWAY_ADMIN_PASSWORD or the first line of standard input: never from an argument.
 *
 * Exit status: 0 done (diff: in sync), 1 refused (the file, or a call the node refused), 2 usage,
 * 3 diff found changes.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { applyPlan } from './apply';
import { ADMIN_PASSWORD_ENV, ADMIN_USER_ENV, credentials, remote, remoteOrigin, RemoteError, type RemoteIo } from './client';
import { formatRefusal, MAX_STATE_FILE, parseState } from './file';
import { formatChange, plan } from './plan';
import { readNodeState, readState, renderState } from './state';
import { InternalError } from '../errors';

/** The initial password of users and tenant admins that apply creates (docs/sync.md). */
export const SYNC_PASSWORD_ENV = 'THROUGHWAY_SYNC_PASSWORD';

export const REMOTE_COMMANDS = new Set(['dump', 'diff', 'apply']);

export const REMOTE_USAGE = `Declarative state of a running node (docs/sync.md):
  dump [--url URL]                        print the node's state as YAML (no passwords, no client secrets)
  diff FILE [--url URL] [--prune]         list each change apply would make (exit 3 when there is one)
  apply FILE [--url URL] [--dry-run] [--prune]
                                          make the node's state the file's; a second apply changes nothing
Options: --url URL (the node's management port, default http://localhost:9763), --prune (remove what the
file does not hold; tenants are deactivated, never deleted), --dry-run (apply: print, change nothing).
Credentials: ${ADMIN_USER_ENV} (default admin), ${ADMIN_PASSWORD_ENV} or the first line of standard input.
apply's new users and tenant admins get ${SYNC_PASSWORD_ENV} (or the next line of standard input) as
their initial password. Exit status: 0 done (diff: in sync), 1 refused, 2 usage, 3 diff found changes.
`;

export interface RemoteCliIo extends RemoteIo {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  readonly cwd: string;
}

interface Args {
  readonly words: string[];
  url: string;
  prune: boolean;
  dryRun: boolean;
}

function parse(argv: readonly string[]): Args | string {
  const a: Args = { words: [], url: 'http://localhost:9763', prune: false, dryRun: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (arg === '--prune') a.prune = true;
    else if (arg === '--dry-run') a.dryRun = true;
    else if (arg === '--url' || arg.startsWith('--url=')) {
      const v = arg === '--url' ? argv[++i] : arg.slice('--url='.length);
      if (v === undefined || v === '') return '--url needs a value';
      a.url = v;
    } else if (arg.startsWith('--admin-password'))
      return 'the admin password is never an argument: set THROUGHWAY_ADMIN_PASSWORD or give it on standard input';
    else if (arg.startsWith('-')) return `unknown option ${arg}`;
    else a.words.push(arg);
  }
  return a;
}

/** A file's text, read in chunks up to `max` bytes; undefined, and not read further, when it is longer. */
function readBounded(file: string, max: number): string | undefined {
  const fd = fs.openSync(file, 'r');
  try {
    const chunks: Buffer[] = [];
    let size = 0;
    for (;;) {
      const chunk = Buffer.alloc(64 * 1024);
      const got = fs.readSync(fd, chunk, 0, chunk.length, null);
      if (got === 0) return Buffer.concat(chunks).toString('utf8');
      size += got;
      if (size > max) return undefined;
      chunks.push(chunk.subarray(0, got));
    }
  } finally {
    fs.closeSync(fd);
  }
}

export async function runRemoteCli(argv: readonly string[], io: RemoteCliIo): Promise<number> {
  const a = parse(argv);
  const [cmd, file, ...extra] = typeof a === 'string' ? [] : a.words;
  const wantsFile = cmd === 'diff' || cmd === 'apply';
  if (typeof a === 'string' || extra.length > 0 || (wantsFile ? file === undefined : file !== undefined)) {
    io.err(`throughway: ${typeof a === 'string' ? a : `usage: throughway ${cmd ?? ''}${wantsFile ? ' FILE' : ''}`}\n\n${REMOTE_USAGE}`);
    return 2;
  }
  try {
    const origin = remoteOrigin(a.url);
    // The file is read and checked before any credential is asked for or any call made.
    let read: ReturnType<typeof parseState> | undefined;
    if (file !== undefined) {
      const full = path.resolve(io.cwd, file);
      let text: string;
      try {
        const bounded = readBounded(full, MAX_STATE_FILE);
        if (bounded === undefined) {
          io.err(
            `${formatRefusal({ code: 'SYNC_YAML', file, line: 0, entry: '', field: '', message: `longer than ${MAX_STATE_FILE} bytes` })}\n`,
          );
          io.err(`${file}: refused: 1 refusal; nothing sent to the node\n`);
          return 1;
        }
        text = bounded;
      } catch (err) {
        io.err(`throughway: ${file}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message}\n`);
        return 1;
      }
      read = parseState(text, file);
      for (const r of read.refusals) io.err(`${formatRefusal(r)}\n`);
      if (read.state === undefined) {
        io.err(
          `${file}: refused: ${read.refusals.length} ${read.refusals.length === 1 ? 'refusal' : 'refusals'}; nothing sent to the node\n`,
        );
        return 1;
      }
    }
    const cred = await credentials(io);
    const r = remote(origin, cred.user, cred.password);
    if (cmd === 'dump') {
      io.out(renderState(await readState(r), origin));
      return 0;
    }
    if (read?.state === undefined || file === undefined) throw new InternalError('unreachable: diff and apply read a file');
    const node = await readNodeState(r);
    // A tenant admin reads no tenants: the file's are left out of the plan, said so.
    const skipped = [...node.unreadable].filter((k) => read.kinds.has(k) || read.state?.[k].length !== 0);
    for (const k of skipped) io.err(`skipped: ${k} of ${file} (${cred.user} may not read them: the super admin's; docs/sync.md)\n`);
    const wanted = { ...read.state, ...Object.fromEntries([...node.unreadable].map((k) => [k, node.state[k]])) };
    const kinds = new Set([...read.kinds].filter((k) => !node.unreadable.has(k)));
    const p = plan(wanted, node.state, { prune: a.prune, kinds, file, lines: read.lines, caller: cred.user });
    for (const f of p.refusals) io.err(`${formatRefusal(f)}\n`);
    if (p.refusals.length > 0) {
      io.err(
        `${file}: refused: ${p.refusals.length} ${p.refusals.length === 1 ? 'change' : 'changes'} no admin route makes; nothing changed\n`,
      );
      return 1;
    }
    for (const k of p.kept) io.err(`kept: ${k}\n`);
    if (cmd === 'diff' || a.dryRun) {
      for (const c of p.changes) io.out(`${formatChange(c, file, read.lines)}\n`);
      io.out(
        `${p.changes.length === 0 ? `${origin} is in sync with ${file}` : `${p.changes.length} ${p.changes.length === 1 ? 'change' : 'changes'}${a.dryRun ? ' (dry run: nothing changed)' : ''}`}\n`,
      );
      return cmd === 'diff' && p.changes.length > 0 ? 3 : 0;
    }
    const env = io.env?.[SYNC_PASSWORD_ENV];
    const password = env !== undefined && env !== '' ? env : (await cred.rest()).find((l) => l !== '');
    const result = await applyPlan(r, p.changes, node, { file, lines: read.lines, ...(password !== undefined ? { password } : {}) });
    for (const line of result.done) io.out(`${line}\n`);
    if (result.failed !== undefined) {
      io.err(`${result.failed}\n`);
      io.out(`${result.done.length} of ${p.changes.length} changes made; stopped at the refused one\n`);
      return 1;
    }
    io.out(
      `${p.changes.length === 0 ? `${origin} is in sync with ${file}: nothing to do` : `${p.changes.length} ${p.changes.length === 1 ? 'change' : 'changes'} made`}\n`,
    );
    return 0;
  } catch (err) {
    if (!(err instanceof RemoteError)) throw err;
    io.err(`throughway ${cmd ?? ''}: ${err.message}\n`);
    return 1;
  }
}
