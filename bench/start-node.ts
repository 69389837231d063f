/**
 * The deployed node for benchmarks: what a user runs, `throughway start` (lib/cli.ts main) in this process,
 * with a starter configuration like the one `throughway init` writes (server_role "default": the key
 * manager, its store, the consoles and the gateway in one node; CORS on as in conf/deployment.toml; no demo
 * backend) and one API file: `auth = "none"`, `unauthenticated_policy = "Unlimited"`, the resources /small,
 * /64k and POST /upload proxied to UPSTREAM. The EXTRA_CMD of ../shared/peers/run.sh for bench/peers-node.sh,
 * and the deployed-node cell of `npm run bench -- --instructions --node` (bench/instructions.ts).
 *
 *   PORT=8280 UPSTREAM=http://127.0.0.1:8100 [EXTRA_PREFIX=/bench/1.0.0] [H2C=1] node dist/bench/start-node.js
 *
 * EXTRA_PREFIX is the API's context and version (default /bench/1.0.0): requests go to
 * `http://127.0.0.1:$PORT/bench/1.0.0/small`. The gateway listens on 127.0.0.1:PORT; its HTTPS port (127.0.0.1
 * too) and the management ports are left to the kernel (port 0), so the node starts beside other nodes on a
 * shared machine. The
 * configuration and the node's store live in a fresh folder under the system's temporary folder, removed on
 * exit. SIGTERM/SIGINT stop the node as `throughway start` does.
 */
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { main } from '../lib/cli';
import { environment } from '../lib/config/switches';

/** `/context/version` of EXTRA_PREFIX, or a reason it is not one. */
export function apiPrefix(raw: string): { context: string; version: string } | string {
  const m = /^(\/[A-Za-z0-9._~-]+(?:\/[A-Za-z0-9._~-]+)*)\/([A-Za-z0-9._-]+)\/?$/.exec(raw);
  if (m === null) return `EXTRA_PREFIX must be /context/version (like /bench/1.0.0), got ${JSON.stringify(raw)}`;
  return { context: m[1] as string, version: m[2] as string };
}

/**
 * The starter deployment.toml (conf/deployment.toml's sections, demo off) with the gateway on `port` and the
 * other listeners on ports the kernel picks; `password` is the super admin's.
 */
export function deploymentToml(port: number, password: string): string {
  return `# Written by bench/start-node.ts: the starter configuration (conf/deployment.toml), demo backend off.
[server]
hostname = "localhost"
server_role = "default"

[super_admin]
username = "admin"
password = "${password}"

[database.apim_db]
type = "h2"
username = "throughway"
password = "throughway"

[transport.passthru_http]
listener.parameters.port = ${port}
listener.bind-address = "127.0.0.1"

[transport.passthru_https]
listener.parameters.port = 0
listener.parameters.bind-address = "127.0.0.1"

[transport.https.properties]
port = 0

[transport.http.properties]
port = 0

[passthru_http]
'http.socket.timeout' = "180s"
'http.user.agent.preserve' = true

[apim.cors]
enable = true
allow_origins = "*"
allow_methods = ["GET", "PUT", "POST", "DELETE", "PATCH", "OPTIONS"]
allow_headers = "authorization, Content-Type, SOAPAction"
`;
}

/** The one open API file (docs/apis.md): the peers' three resources on `upstream`. */
export function apiToml(context: string, version: string, upstream: string): string {
  return `# Written by bench/start-node.ts: the bench backend behind one open API.
name = "Bench"
context = "${context}"
version = "${version}"
state = "PUBLISHED"
auth = "none"
unauthenticated_policy = "Unlimited"

[endpoints]
production = "${upstream}"

[[resources]]
path = "/small"
methods = ["GET"]

[[resources]]
path = "/64k"
methods = ["GET"]

[[resources]]
path = "/upload"
methods = ["POST"]
`;
}

if (require.main === module) {
  const env = environment();
  const port = Number(env.PORT ?? 8280);
  const upstream = (env.UPSTREAM ?? 'http://127.0.0.1:8100').replace(/\/+$/, '');
  const prefix = apiPrefix(env.EXTRA_PREFIX ?? '/bench/1.0.0');
  if (typeof prefix === 'string' || !Number.isInteger(port) || port <= 0 || port > 65535 || !/^http:\/\/[^\s"]+$/.test(upstream)) {
    process.stderr.write(
      `start-node: ${typeof prefix === 'string' ? prefix : `PORT ${String(env.PORT)} or UPSTREAM ${upstream} is not usable`}\n`,
    );
    process.exit(2);
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'throughway-node-'));
  process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  fs.mkdirSync(path.join(dir, 'conf', 'apis'), { recursive: true });
  const file = path.join(dir, 'conf', 'deployment.toml');
  // H2C=1: prior-knowledge HTTP/2 on the plain listener too (bench/instructions.ts --h2c).
  const h2c = env.H2C === '1' ? '\n[throughway.http2]\nh2c = true\n' : '';
  fs.writeFileSync(file, deploymentToml(port, crypto.randomBytes(18).toString('base64url')) + h2c, { mode: 0o600 });
  fs.writeFileSync(path.join(dir, 'conf', 'apis', 'bench.toml'), apiToml(prefix.context, prefix.version, upstream));
  const io = {
    out: (t: string) => process.stdout.write(t),
    err: (t: string) => process.stderr.write(t),
    cwd: dir,
    env,
    stdin: async () => '',
  };
  main(['start', '--config', file], io).then(
    (code) => {
      if (code !== 0) process.exit(code);
      process.stdout.write(
        `throughway node (deployed, one open API) on 127.0.0.1:${port}${prefix.context}/${prefix.version} -> ${upstream} pid=${process.pid}\n`,
      );
    },
    (err: unknown) => {
      process.stderr.write(`start-node: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}
