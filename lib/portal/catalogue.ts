/**
 * The APIs the consoles show and edit: the API files of `[throughway] apis_dir`, read and validated by
 * the gateway's own validator (lib/gateway/apis.ts), and the publisher's drafts in its `created/`
 * subdirectory. A draft is an API in the CREATED lifecycle state: the gateway reads only the files of
 * apis_dir itself (lib/gateway/deploy.ts listApiFiles), so a draft is never deployed. docs/portal.md.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { type ApiDefinition, type ApiVars, parseApiText, versionedPath } from '../gateway/apis';
import { listApiFiles } from '../gateway/deploy';
import type { ApiDiagnostic } from '../gateway/diagnostics';

/** The reference's lifecycle states (CREATED: a draft, only in the publisher). */
export const CONSOLE_STATES = ['CREATED', 'PROTOTYPED', 'PUBLISHED', 'BLOCKED', 'DEPRECATED', 'RETIRED'] as const;
export type ConsoleState = (typeof CONSOLE_STATES)[number];

/** Largest API file the consoles read or write. */
export const MAX_API_FILE = 256 * 1024;

export interface CatalogueEntry {
  /** File name without directory: the entry's id in URLs. */
  readonly id: string;
  readonly file: string;
  readonly text: string;
  readonly state: ConsoleState;
  readonly api: ApiDefinition | undefined;
  readonly diagnostics: readonly ApiDiagnostic[];
}

export class Catalogue {
  constructor(
    readonly apisDir: string,
    readonly vars: ApiVars,
  ) {}

  get draftsDir(): string {
    return path.join(this.apisDir, 'created');
  }

  private read(file: string, draft: boolean): CatalogueEntry | undefined {
    let text: string;
    try {
      if (fs.statSync(file).size > MAX_API_FILE) return undefined;
      text = fs.readFileSync(file, 'utf8');
    } catch {
      return undefined;
    }
    const r = parseApiText(text, file, this.vars);
    const state: ConsoleState = draft ? 'CREATED' : (r.api?.state ?? 'PUBLISHED');
    return { id: `${draft ? 'created:' : ''}${path.basename(file)}`, file, text, state, api: r.api, diagnostics: r.diagnostics };
  }

  /** Every API file and draft, drafts last. */
  list(): CatalogueEntry[] {
    const out: CatalogueEntry[] = [];
    for (const f of listApiFiles(this.apisDir) ?? []) {
      const e = this.read(f, false);
      if (e !== undefined) out.push(e);
    }
    for (const f of listApiFiles(this.draftsDir) ?? []) {
      const e = this.read(f, true);
      if (e !== undefined) out.push(e);
    }
    return out;
  }

  /** One entry by id (`name.toml`, or `created:name.toml` for a draft); never a path outside the two directories. */
  get(id: string): CatalogueEntry | undefined {
    const draft = id.startsWith('created:');
    const name = draft ? id.slice('created:'.length) : id;
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,120}\.toml$/.test(name)) return undefined;
    return this.read(path.join(draft ? this.draftsDir : this.apisDir, name), draft);
  }

  /** The entry serving context + version (to find an API a subscription names). */
  byPath(context: string, version: string): CatalogueEntry | undefined {
    return this.list().find((e) => e.api !== undefined && e.api.context === context && e.api.version === version);
  }
}

/** A file name for a new API: `<name>-<version>.toml` in lower case, safe characters only. */
export function fileNameFor(name: string, version: string): string {
  const base = `${name}-${version}`.toLowerCase().replace(/[^a-z0-9._-]+/g, '-').replace(/^[^a-z0-9]+/, '').slice(0, 100);
  return `${base === '' ? 'api' : base}.toml`;
}

/** Full gateway URLs of an API on each gateway base URL. */
export function apiUrls(api: Pick<ApiDefinition, 'context' | 'version'>, gateways: readonly { readonly name: string; readonly url: string }[]): { name: string; url: string }[] {
  return gateways.map((g) => ({ name: g.name, url: `${g.url.replace(/\/+$/, '')}${versionedPath(api)}` }));
}
