/**
 * What `npm start` prints about the key manager works: in a child process on a copy of conf/ (with an
 * offset so it never collides with a running node), the printed `npm run -s throughway -- ...` lines
 * create an application and its keys through the running node, and the printed curl line, with those
 * keys, gets a token. No secret appears in the node's output or log.
 */
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { startConfCopy } from '../conf-node';

const root = path.join(__dirname, '..', '..', '..');
const cli = path.join(root, 'dist', 'lib', 'cli.js');
const run = promisify(execFile);

t.test('npm start prints how to get keys and a token, and it works', async (t) => {
  const node = await startConfCopy(t, 'throughway-km-start-');
  const { dir, offset, child, exited } = node;
  const deadline = Date.now() + 15_000;
  while (!node.out.includes('Try:') && child.exitCode === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  t.match(
    node.out,
    new RegExp(`management HTTP\\s+port ${9763 + offset} \\(key manager, embedded SQLite .*apim_db\\.sqlite\\)`),
    node.out + node.err,
  );

  const commands = node.out
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.startsWith('npm run -s throughway -- '));
  t.equal(commands.length, 3, 'apps create, keys generate, subscriptions add (to the protected demo API)');
  let keys = '';
  for (const c of commands) {
    const args = c.slice('npm run -s throughway -- '.length).split(' ');
    const r = await run(process.execPath, [cli, ...args], { cwd: dir });
    keys += r.stdout;
  }
  const key = /consumer key\s+(\S+)/.exec(keys)?.[1] ?? '';
  const secret = /consumer secret\s+(\S+)/.exec(keys)?.[1] ?? '';
  t.ok(key !== '' && secret !== '', keys);

  const curl = node.out
    .split('\n')
    .map((l) => l.trim())
    .find((l) => l.startsWith('then: curl '));
  t.ok(curl, 'prints the curl line');
  const url = /(http:\/\/\S+)/.exec(curl ?? '')?.[1] ?? '';
  t.equal(url, `http://localhost:${9763 + offset}/oauth2/token`);
  t.match(curl, '-u <consumer key>:<consumer secret> -d grant_type=client_credentials');
  const r = await fetch(url, {
    method: 'POST',
    headers: {
      Authorization: `Basic ${Buffer.from(`${key}:${secret}`).toString('base64')}`,
      'Content-Type': 'application/x-www-form-urlencoded',
    },
    body: 'grant_type=client_credentials',
  });
  t.equal(r.status, 200);
  const body = (await r.json()) as { access_token: string; token_type: string };
  t.equal(body.token_type, 'Bearer');
  // The token calls the protected demo API through the gateway (the application was subscribed above).
  const api = await fetch(`http://127.0.0.1:${8280 + offset}/pizzashack-secured/1.0.0/menu`, {
    headers: { Authorization: `Bearer ${body.access_token}` },
  });
  t.equal(api.status, 200, 'the protected demo API answers with the token');
  await api.arrayBuffer();

  child.kill('SIGTERM');
  t.equal(await exited, 0, 'SIGTERM: clean exit');
  t.notOk(node.out.includes(secret) || node.err.includes(secret), 'the secret is in neither the output nor the log');
  t.notOk(node.err.includes(body.access_token), 'nor the token');
  t.match(node.err, /"event":"token_issued"/);
});
