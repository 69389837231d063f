/**
 * Test helpers for operations: a whole node (startNode: key manager + gateway, as `throughway start`
 * assembles it) from a temporary directory, every listener on a free port, its server log kept line by
 * line; and a parser of the Prometheus text format.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { loadConfig } from '../../lib/config/load';
import { startNode, type RunningNode } from '../../lib/node';
import { confDir } from '../gateway/helpers';

export const NODE_TOML = `[server]\nhostname = "localhost"\n[super_admin]\nusername = "admin"\npassword = "admin-pw-1"\n[database.apim_db]\ntype = "h2"\nusername = "u"\npassword = "p"\n`;

export interface TestNode {
  readonly node: RunningNode;
  readonly dir: string;
  readonly gw: number;
  readonly mgmt: number;
  /** Raw log lines as written. */
  readonly raw: string[];
  /** Parsed log lines. */
  readonly lines: Record<string, unknown>[];
  /** What the node printed (start-up, reload). */
  readonly out: string[];
  close(): Promise<void>;
}

export async function startTestNode(
  toml: string,
  apis: Record<string, string> = {},
  extra: Record<string, string> = {},
): Promise<TestNode> {
  const dir = confDir(toml, apis, extra);
  const file = path.join(dir, 'deployment.toml');
  const loaded = loadConfig({ file });
  if (!loaded.ok) throw new Error(`test configuration invalid: ${JSON.stringify(loaded.diagnostics)}`);
  const raw: string[] = [];
  const lines: Record<string, unknown>[] = [];
  const out: string[] = [];
  const node = await startNode(loaded, {
    cwd: dir,
    ephemeralPorts: true,
    log: (l) => out.push(l),
    logSink: {
      write: (l: string) => {
        raw.push(l);
        lines.push(JSON.parse(l) as Record<string, unknown>);
        return true;
      },
    },
    reload: () => loadConfig({ file }),
  });
  return {
    node,
    dir,
    gw: node.ports.gateway ?? 0,
    mgmt: node.ports.management ?? 0,
    raw,
    lines,
    out,
    async close() {
      await node.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface MetricSample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface Scrape {
  readonly samples: readonly MetricSample[];
  /** # TYPE lines: metric name -> type. */
  readonly types: ReadonlyMap<string, string>;
  /** The value of the one sample with this name whose labels include `labels`; undefined if none. */
  value(name: string, labels?: Readonly<Record<string, string>>): number | undefined;
  /** Sum over samples with this name whose labels include `labels`. */
  sum(name: string, labels?: Readonly<Record<string, string>>): number;
}

/** Parses the Prometheus text format 0.0.4 (the subset prom-client writes: no timestamps). Throws on a bad line. */
export function parseMetrics(text: string): Scrape {
  const samples: MetricSample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('# TYPE ')) {
      const [, , name, type] = line.split(' ');
      types.set(name ?? '', type ?? '');
      continue;
    }
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (m === null) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    const body = m[2] ?? '';
    const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?/g;
    let consumed = 0;
    for (let l = re.exec(body); l !== null; l = re.exec(body)) {
      labels[l[1] ?? ''] = (l[2] ?? '').replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
      consumed += l[0].length;
    }
    if (consumed !== body.length) throw new Error(`bad labels: ${line}`);
    const v = m[3] ?? '';
    samples.push({ name: m[1] ?? '', labels, value: v === '+Inf' ? Infinity : v === '-Inf' ? -Infinity : Number(v) });
  }
  const match = (s: MetricSample, name: string, labels: Readonly<Record<string, string>>): boolean =>
    s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v);
  return {
    samples,
    types,
    value(name, labels = {}) {
      const found = samples.filter((s) => match(s, name, labels));
      if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`);
      return found[0]?.value;
    },
    sum(name, labels = {}) {
      return samples.filter((s) => match(s, name, labels)).reduce((a, s) => a + s.value, 0);
    },
  };
}

export async function get(
  port: number,
  p: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; type: string; body: string }> {
  const r = await fetch(`http://127.0.0.1:${port}${p}`, { headers });
  return { status: r.status, type: r.headers.get('content-type') ?? '', body: await r.text() };
}

export async function scrape(port: number): Promise<Scrape> {
  const r = await get(port, '/metrics');
  if (r.status !== 200) throw new Error(`/metrics answered ${r.status}`);
  return parseMetrics(r.body);
}

/** Debian's prometheus package installs it (.ci/apt-packages). */
export const PROMTOOL = '/usr/bin/promtool';

/** `promtool check metrics` on an exposition: its exit status (0 clean, 3 lint problems) and what it printed. */
export function promtoolCheck(text: string): { readonly status: number | null; readonly output: string } {
  const lint = spawnSync(PROMTOOL, ['check', 'metrics'], { input: text, encoding: 'utf8', timeout: 60_000 });
  return { status: lint.status, output: `${lint.stdout}${lint.stderr}`.trim() };
}
