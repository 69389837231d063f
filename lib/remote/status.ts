/**
 * `throughway status [--url URL] [--json] [--config-values]`: a running node's runtime view (`GET /status`
 * on its management port, docs/operations.md "Runtime view"), over the same client and credentials as
 * dump, diff and apply (lib/remote/client.ts: THROUGHWAY_ADMIN_USER, THROUGHWAY_ADMIN_PASSWORD or the first
 * line of standard input). Text by default; `--json` prints the document as the node sent it.
 *
 * Exit status: 0 shown, 1 refused or unreachable, 2 usage.
 */
import { ADMIN_PASSWORD_ENV, ADMIN_USER_ENV, credentials, remote, remoteOrigin, RemoteError, type RemoteIo } from './client';

export const STATUS_USAGE = `The runtime view of a running node (docs/operations.md, "Runtime view"):
  status [--url URL] [--json] [--config]
Options: --url URL (the node's management port, default http://localhost:9763), --json (the document as
the node sends it), --config (also list every configuration value with its source; --json always has them).
Credentials: ${ADMIN_USER_ENV} (default admin), ${ADMIN_PASSWORD_ENV} or the first line of standard input;
the super tenant's admins only. Exit status: 0 shown, 1 refused or unreachable, 2 usage.
`;

export interface StatusCliIo extends RemoteIo {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
}

type Doc = Record<string, unknown>;
const arr = (v: unknown): Doc[] => (Array.isArray(v) ? (v as Doc[]) : []);
const obj = (v: unknown): Doc => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Doc) : {});
const str = (v: unknown): string => (v === null || v === undefined ? '-' : typeof v === 'string' ? v : JSON.stringify(v));

/** Rows as aligned columns, the header first. */
function table(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (r: readonly string[]): string =>
    r
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)];
}

/** The document as text: one block per part. */
export function formatStatus(doc: Doc, origin: string, withConfig: boolean): string {
  const out: string[] = [];
  const node = obj(doc.node);
  out.push(
    `${origin}: role ${str(node.role)}, host ${str(node.hostname)}, pid ${str(node.pid)}, up ${str(node.uptimeSeconds)} s (since ${str(node.startedAt)})`,
  );
  out.push('', 'Listeners');
  out.push(
    ...table(
      ['name', 'address', 'port', 'protocol', 'connections'],
      arr(doc.listeners).map((l) => [str(l.name), str(l.address), str(l.port), str(l.protocol), str(l.connections)]),
    ).map((s) => `  ${s}`),
  );
  out.push('', 'Backend pools');
  const pools = arr(doc.pools);
  if (pools.length === 0) out.push("  none yet (a pool is made on a backend endpoint's first call)");
  else
    out.push(
      ...table(
        ['endpoint', 'open', 'idle', 'in use', 'waiting', 'max', 'failures', 'last error'],
        pools.map((p) => {
          const e = p.lastError === null || p.lastError === undefined ? undefined : obj(p.lastError);
          return [
            str(p.endpoint),
            str(p.open),
            str(p.idle),
            str(p.inUse),
            str(p.waiting),
            str(p.max),
            str(p.failures),
            e === undefined ? '-' : `${str(e.code)} ${str(e.reason)}${e.cause !== null ? ` (${str(e.cause)})` : ''} at ${str(e.at)}`,
          ];
        }),
      ).map((s) => `  ${s}`),
    );
  const faults = obj(doc.faults);
  const recent = arr(faults.recent);
  out.push('', `Faults: ${str(faults.total)} since start, the last ${recent.length} held (of ${str(faults.capacity)})`);
  const byCode = Object.entries(obj(faults.byCode));
  if (byCode.length > 0) out.push(`  by code: ${byCode.map(([c, n]) => `${c} x${str(n)}`).join(', ')}`);
  if (recent.length > 0)
    out.push(
      ...table(
        ['time', 'code', 'status', 'api', 'request'],
        recent.map((f) => [str(f.at), str(f.code), str(f.status), str(f.api), `${str(f.method)} ${str(f.path)}`]),
      ).map((s) => `  ${s}`),
    );
  const plugins = obj(doc.plugins);
  const names = arr(plugins.names) as unknown as string[];
  out.push('', `Plugins: ${str(plugins.count)}${names.length > 0 ? ` (${names.join(', ')})` : ''}`);
  out.push(`Tenants: ${str(obj(doc.tenants).count)}`);
  const config = obj(doc.config);
  const values = arr(config.values);
  const written = values.filter((v) => v.source !== 'default');
  out.push('', `Configuration: ${str(config.file)}: ${values.length} values, ${written.length} written (the rest defaults)`);
  for (const v of withConfig ? values : written)
    out.push(`  ${str(v.key)} = ${JSON.stringify(v.value)}    # ${str(v.source)}${v.at !== undefined ? ` at ${str(v.at)}` : ''}`);
  return `${out.join('\n')}\n`;
}

export async function runStatusCli(argv: readonly string[], io: StatusCliIo): Promise<number> {
  let url = 'http://localhost:9763';
  let json = false;
  let withConfig = false;
  for (let i = 1; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (arg === '--json') json = true;
    else if (arg === '--config') withConfig = true;
    else if (arg === '--url' || arg.startsWith('--url=')) {
      const v = arg === '--url' ? argv[++i] : arg.slice('--url='.length);
      if (v === undefined || v === '') {
        io.err(`throughway: --url needs a value\n\n${STATUS_USAGE}`);
        return 2;
      }
      url = v;
    } else {
      io.err(
        `throughway: ${arg.startsWith('-') ? `unknown option ${arg}` : `status takes no argument ${JSON.stringify(arg)}`}\n\n${STATUS_USAGE}`,
      );
      return 2;
    }
  }
  try {
    const origin = remoteOrigin(url);
    const cred = await credentials(io);
    const doc = await remote(origin, cred.user, cred.password).call('GET', '/status');
    io.out(json ? `${JSON.stringify(doc, null, 2)}\n` : formatStatus(doc, origin, withConfig));
    return 0;
  } catch (err) {
    if (!(err instanceof RemoteError)) throw err;
    io.err(`throughway status: ${err.message}\n`);
    return 1;
  }
}
