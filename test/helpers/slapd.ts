/**
 * A private OpenLDAP server for user store tests: Debian's slapd with a slapd.conf written to a temp
 * directory (mdb backend, base dc=example,dc=com, an admin bind DN, the memberof overlay so group members
 * carry memberOf back-links), listening on 127.0.0.1 at a free port below 32768 in the foreground
 * (`-d 0`), loaded with ldapadd. `stop()` ends it and removes the directory. `slapdMissing()` says why
 * the tests skip on a machine without slapd or ldap-utils (CI installs both: .ci/apt-packages).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { freeLowPort } from './backend';

export const SLAPD = '/usr/sbin/slapd';
export const BASE_DN = 'dc=example,dc=com';
export const ADMIN_DN = `cn=admin,${BASE_DN}`;
export const ADMIN_PASSWORD = 'slapd-admin-pw';

/** Why slapd cannot run here, or undefined when it can. */
export function slapdMissing(): string | undefined {
  if (!fs.existsSync(SLAPD)) return `${SLAPD} is not installed (apt-get install slapd ldap-utils)`;
  if (spawnSync('ldapadd', ['-VV'], { stdio: 'ignore' }).error !== undefined)
    return 'ldapadd is not installed (apt-get install ldap-utils)';
  const modules = ['/usr/lib/ldap/back_mdb.la', '/usr/lib/ldap/memberof.la'];
  for (const m of modules) if (!fs.existsSync(m)) return `${m} is missing (Debian's slapd package has it)`;
  return undefined;
}

export interface Slapd {
  readonly url: string;
  readonly port: number;
  /** Adds entries (LDIF) with ldapadd as the admin. */
  add(ldif: string): void;
  /** Stops the server (the directory stays until `remove`). */
  stop(): Promise<void>;
  /** Starts it again on the same port and data. */
  restart(): Promise<void>;
  /** Stops it and removes its directory. */
  remove(): Promise<void>;
}

function accepting(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

const wait = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export async function startSlapd(): Promise<Slapd> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-slapd-'));
  fs.mkdirSync(path.join(dir, 'db'));
  const conf = path.join(dir, 'slapd.conf');
  fs.writeFileSync(
    conf,
    [
      'include /etc/ldap/schema/core.schema',
      'include /etc/ldap/schema/cosine.schema',
      'include /etc/ldap/schema/inetorgperson.schema',
      'modulepath /usr/lib/ldap',
      'moduleload back_mdb',
      'moduleload memberof',
      `pidfile ${path.join(dir, 'slapd.pid')}`,
      'database mdb',
      'maxsize 16777216',
      `suffix "${BASE_DN}"`,
      `rootdn "${ADMIN_DN}"`,
      `rootpw ${ADMIN_PASSWORD}`,
      `directory ${path.join(dir, 'db')}`,
      'overlay memberof',
      '',
    ].join('\n'),
  );
  const port = await freeLowPort();
  const url = `ldap://127.0.0.1:${port}`;
  let child: ChildProcess | undefined;
  let stderr = '';

  const start = async (): Promise<void> => {
    const c = spawn(SLAPD, ['-f', conf, '-h', `${url}/`, '-d', '0'], { stdio: ['ignore', 'ignore', 'pipe'] });
    c.stderr?.on('data', (d: Buffer) => {
      stderr = (stderr + d.toString('utf8')).slice(-4000);
    });
    child = c;
    for (let i = 0; i < 200; i++) {
      if (c.exitCode !== null) throw new Error(`slapd exited with ${c.exitCode}: ${stderr}`);
      if (await accepting(port)) return;
      await wait(50);
    }
    c.kill('SIGKILL');
    throw new Error(`slapd did not listen on ${url} within 10 s: ${stderr}`);
  };

  const stop = async (): Promise<void> => {
    const c = child;
    child = undefined;
    if (c === undefined || c.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => c.once('exit', () => resolve()));
    c.kill('SIGTERM');
    const t = setTimeout(() => c.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(t);
  };

  await start();
  return {
    url,
    port,
    add(ldif) {
      const r = spawnSync('ldapadd', ['-x', '-H', url, '-D', ADMIN_DN, '-w', ADMIN_PASSWORD], { input: ldif, encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`ldapadd failed (${r.status}): ${r.stderr}`);
    },
    stop,
    restart: start,
    async remove() {
      await stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
