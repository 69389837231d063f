/**
 * Runs the shell commands a page documents (README.md's quick start, docs/quickstart.md) against a running
 * node, so the pages cannot rot: every line of a ```sh block is one command. The forms a user types are
 * interpreted here rather than handed to a shell (curl may be missing on a test machine, and traffic must
 * stay on 127.0.0.1): `curl` (-X, -H, -d, -u, -i, -s, --cacert), `npm run -s throughway -- ...` (the compiled
 * CLI), `npx autocannon ...` (the installed autocannon, with a handful of requests instead of a duration:
 * tests never benchmark). A command of any other form fails the test unless the caller lists it as one it
 * ran otherwise (`npm start`) or cannot run (`npm install`).
 *
 * Ports are the defaults of the page (8280, 8243, 9763, 9443), moved by the node's server.offset.
 * Placeholders (<consumer key>, <consumer secret>, <access token>) are filled from the output of the
 * commands before them, as a reader would copy them. A trailing `# NNN` states the expected HTTP status.
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import * as path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const root = path.join(__dirname, '..', '..', '..');
const cli = path.join(root, 'dist', 'lib', 'cli.js');
const autocannon = path.join(path.dirname(require.resolve('autocannon/package.json')), 'autocannon.js');

export interface DocCommand {
  /** The line as written (without its trailing comment). */
  readonly line: string;
  /** The status a trailing `# NNN` promises, else undefined (200 or 201 expected). */
  readonly status: number | undefined;
}

/** The commands of the ```sh blocks of `markdown` (optionally only between two headings). */
export function shCommands(markdown: string, from?: string, to?: string): DocCommand[] {
  let text = markdown;
  if (from !== undefined) text = text.slice(text.indexOf(from));
  if (to !== undefined && text.includes(to)) text = text.slice(0, text.indexOf(to));
  const out: DocCommand[] = [];
  let inSh = false;
  for (const raw of text.split('\n')) {
    const l = raw.trim();
    if (l.startsWith('```')) {
      inSh = !inSh && l === '```sh';
      continue;
    }
    if (!inSh || l === '' || l.startsWith('#')) continue;
    const words = split(l);
    const comment = words.comment;
    out.push({ line: words.text, status: comment !== undefined && /^\d{3}\b/.test(comment) ? Number(comment.slice(0, 3)) : undefined });
  }
  return out;
}

/** Shell words: 'single' and "double" quotes, a trailing # comment. */
function split(line: string): { text: string; words: string[]; comment: string | undefined } {
  const words: string[] = [];
  let cur: string | undefined;
  let i = 0;
  for (; i < line.length; i++) {
    const c = line[i] as string;
    if (c === "'" || c === '"') {
      const end = line.indexOf(c, i + 1);
      cur = (cur ?? '') + line.slice(i + 1, end);
      i = end;
    } else if (c === ' ') {
      if (cur !== undefined) words.push(cur);
      cur = undefined;
    } else if (c === '#' && cur === undefined) {
      break;
    } else cur = (cur ?? '') + c;
  }
  if (cur !== undefined) words.push(cur);
  const comment = i < line.length ? line.slice(i + 1).trim() : undefined;
  return { text: line.slice(0, i).trim(), words, comment };
}

export interface DocRun {
  /** Where the node runs (its conf/ and var/): the working directory of the commands. */
  readonly cwd: string;
  readonly offset: number;
  /** Filled as commands print them: 'consumer key', 'consumer secret', 'access token'. */
  readonly values: Map<string, string>;
}

export interface DocResult {
  readonly kind: 'curl' | 'cli' | 'autocannon';
  readonly status?: number;
  readonly output: string;
  /** autocannon: responses by class. */
  readonly ok2xx?: number;
  readonly non2xx?: number;
}

const PORTS = [8280, 8243, 9763, 9443];

function fill(line: string, r: DocRun): string {
  let s = line.replace(/<(consumer key|consumer secret|access token)>/g, (m, name: string) => {
    const v = r.values.get(name);
    if (v === undefined) throw new Error(`${line}: no ${name} yet`);
    return v;
  });
  for (const p of PORTS) s = s.replace(new RegExp(`(localhost|127\\.0\\.0\\.1):${p}\\b`, 'g'), `$1:${p + r.offset}`);
  return s;
}

/** Runs one documented command; what it prints feeds the placeholders of the next ones. */
export async function runDocCommand(command: DocCommand, r: DocRun): Promise<DocResult> {
  const line = fill(command.line, r);
  const words = split(line).words;
  if (words[0] === 'curl') return curl(words.slice(1), r);
  if (words.slice(0, 4).join(' ') === 'npm run -s throughway' && words[4] === '--') {
    const { stdout } = await run(process.execPath, [cli, ...words.slice(5)], { cwd: r.cwd });
    const key = /consumer key\s+(\S+)/.exec(stdout)?.[1];
    const secret = /consumer secret\s+(\S+)/.exec(stdout)?.[1];
    if (key !== undefined) r.values.set('consumer key', key);
    if (secret !== undefined) r.values.set('consumer secret', secret);
    return { kind: 'cli', output: stdout };
  }
  if (words[0] === 'npx' && words[1] === 'autocannon') {
    // A few requests, not a benchmark: -d (seconds) becomes -a (requests), connections at most 2.
    const args: string[] = [];
    for (let i = 2; i < words.length; i++) {
      const w = words[i] as string;
      if (w === '-d') (args.push('-a', '20'), i++);
      else if (w === '-c') (args.push('-c', '2'), i++);
      else args.push(w);
    }
    const { stdout } = await run(process.execPath, [autocannon, ...args, '--json'], { cwd: root, timeout: 15_000 });
    const res = JSON.parse(stdout) as { '2xx': number; non2xx: number; errors: number };
    return { kind: 'autocannon', output: stdout, ok2xx: res['2xx'], non2xx: res.non2xx + res.errors };
  }
  throw new Error(`not a command the docs test knows how to run: ${command.line}`);
}

function curl(args: string[], r: DocRun): Promise<DocResult> {
  let method: string | undefined;
  let body: string | undefined;
  let ca: Buffer | undefined;
  const headers: Record<string, string> = {};
  let url: URL | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    if (a === '-X') method = args[++i];
    else if (a === '-H') {
      const h = args[++i] as string;
      const c = h.indexOf(':');
      headers[h.slice(0, c).trim()] = h.slice(c + 1).trim();
    } else if (a === '-d') body = args[++i];
    else if (a === '-u') headers.Authorization = `Basic ${Buffer.from(args[++i] as string).toString('base64')}`;
    else if (a === '--cacert') ca = fs.readFileSync(path.join(r.cwd, args[++i] as string));
    else if (a === '-i' || a === '-s') continue;
    else if (/^https?:\/\//.test(a)) url = new URL(a);
    else throw new Error(`curl option the docs test does not know: ${a}`);
  }
  if (url === undefined) throw new Error('curl without a URL');
  // curl's -d: POST, form-encoded unless a Content-Type is given.
  if (body !== undefined && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type'))
    headers['Content-Type'] = 'application/x-www-form-urlencoded';
  if (body !== undefined) headers['Content-Length'] = String(Buffer.byteLength(body));
  const target = url;
  return new Promise((resolve, reject) => {
    const options = {
      host: '127.0.0.1',
      port: Number(target.port),
      path: target.pathname + target.search,
      method: method ?? (body !== undefined ? 'POST' : 'GET'),
      headers: { Host: target.host, ...headers },
      agent: false as const,
    };
    const done = (res: http.IncomingMessage): void => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const token = /"access_token":"([^"]+)"/.exec(text)?.[1];
        if (token !== undefined) r.values.set('access token', token);
        resolve({ kind: 'curl', status: res.statusCode ?? 0, output: text });
      });
      res.on('error', reject);
    };
    const req =
      target.protocol === 'https:' ? https.request({ ...options, ca, servername: target.hostname }, done) : http.request(options, done);
    req.on('error', reject);
    req.end(body);
  });
}
