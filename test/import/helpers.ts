/**
 * Test harness for `throughway import` and `export`: a configuration directory (deployment.toml with an
 * embedded store, an empty apis/), the CLI run in process with its output kept, the projects of
 * test/fixtures/apictl, and a key manager with a gateway that read that directory as `start` does.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { main } from '../../lib/cli';
import { loadConfig } from '../../lib/config/load';
import { createEventBus } from '../../lib/events/bus';
import { createGateway, type Gateway } from '../../lib/embed';
import { apiScopeBindings } from '../../lib/gateway/apis';
import { createKeyManager, type KeyManager } from '../../lib/keymanager';
import { keyManagerLink } from '../../lib/security';
import { openStore } from '../../lib/store/open';
import type { Store } from '../../lib/store/types';
import { HOST, memoryLogger } from '../gateway/helpers';

export const FIXTURES = path.join(__dirname, '..', '..', '..', 'test', 'fixtures', 'apictl');
export const fixture = (name: string): string => path.join(FIXTURES, name);

export interface Conf {
  readonly dir: string;
  readonly file: string;
  readonly apis: string;
  close(): void;
}

/** A configuration directory; `toml` is added to deployment.toml. */
export function confDir(toml = ''): Conf {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tw-import-'));
  const file = path.join(dir, 'deployment.toml');
  fs.writeFileSync(
    file,
    `[server]\nhostname = "localhost"\n[super_admin]\nusername = "admin"\npassword = "admin-pw-1"\n[database.apim_db]\ntype = "h2"\nurl = "jdbc:h2:${path.join(dir, 'apim_db')}"\nusername = "tw"\npassword = "tw"\n${toml}`,
  );
  fs.mkdirSync(path.join(dir, 'apis'));
  return { dir, file, apis: path.join(dir, 'apis'), close: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

export interface Run {
  readonly code: number;
  readonly out: string;
  readonly err: string;
}

/** The CLI with `--config` of `conf`, in process. */
export async function cli(conf: Conf, ...argv: string[]): Promise<Run> {
  let out = '';
  let err = '';
  const code = await main([...argv, '--config', conf.file], { out: (t) => (out += t), err: (t) => (err += t), cwd: conf.dir });
  return { code, out, err };
}

/** An apictl api_params.yaml whose environment points both endpoints at `url`. */
export function paramsFile(conf: Conf, name: string, url: string): string {
  const file = path.join(conf.dir, `${name}.params.yaml`);
  fs.writeFileSync(
    file,
    `environments:\n  - name: test\n    configs:\n      endpoints:\n        production:\n          url: '${url}'\n        sandbox:\n          url: '${url}'\n`,
  );
  return file;
}

/** Every file under a directory, relative name -> content (to compare before and after). */
export function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string, rel: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const r = rel === '' ? e.name : `${rel}/${e.name}`;
      if (e.isDirectory()) walk(path.join(d, e.name), r);
      else out[r] = fs.readFileSync(path.join(d, e.name), 'utf8');
    }
  };
  if (fs.existsSync(dir)) walk(dir, '');
  return out;
}

export interface Node {
  readonly km: KeyManager;
  readonly store: Store;
  readonly gw: Gateway;
  readonly port: number;
  close(): Promise<void>;
}

/** A key manager and a gateway over the configuration directory, its apis/ read from disk. */
export async function startNode(conf: Conf): Promise<Node> {
  const loaded = loadConfig({ file: conf.file });
  if (!loaded.ok) throw new Error(`test configuration invalid: ${JSON.stringify(loaded.diagnostics.filter((d) => d.level === 'error'))}`);
  const logger = memoryLogger('warn');
  const store = await openStore(loaded.config, conf.dir);
  const bus = createEventBus();
  let gw: Gateway | undefined;
  const km = await createKeyManager({
    loaded,
    store,
    bus,
    logger,
    apiScopes: () => (gw?.states() ?? []).flatMap((s) => (s.api === undefined ? [] : apiScopeBindings(s.api))),
  });
  gw = createGateway({ loaded, logger, keyManager: keyManagerLink(km), events: bus, watch: false });
  const a = await gw.listen({ port: 0, host: HOST });
  await gw.security.ready;
  const g = gw;
  return {
    km,
    store,
    gw: g,
    port: a.port,
    async close() {
      await g.close();
      await km.close();
      await store.close();
    },
  };
}
