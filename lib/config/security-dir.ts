/**
 * The security directory: where the reference keeps its key and trust stores. Spec 001 places a store's
 * `file_name` "in the security directory" ([custom_keystore.<name>], and the reference's [keystore.*] and
 * [truststore] tables); in the reference's home layout the configuration is
 * `<home>/repository/conf/deployment.toml` and the stores are in `<home>/repository/resources/security/`.
 *
 * Where a written store file is looked for, in order (docs/tls.md, "Where store files are found"):
 * - an absolute path: there only;
 * - in the reference's layout, a bare name in the security directory, a relative path with directories
 *   (`repository/resources/security/x.jks`) from the home the layout implies;
 * - then, in every layout, beside the configuration file (relative to its directory).
 * The first place that holds a file is taken; when none does, the first place is the value and a missing
 * store's diagnostic names every place looked (config/load.ts, CONFIG_FILE_MISSING).
 */
import * as path from 'node:path';

/** `<home>` when `dir` (the configuration file's directory) is `<home>/repository/conf`, else undefined. */
export function referenceHome(dir: string): string | undefined {
  const conf = path.resolve(dir);
  const repository = path.dirname(conf);
  if (path.basename(conf) !== 'conf' || path.basename(repository) !== 'repository') return undefined;
  return path.dirname(repository);
}

/** The security directory of the reference's layout, or undefined outside that layout. */
export function securityDir(dir: string): string | undefined {
  const home = referenceHome(dir);
  return home === undefined ? undefined : path.join(home, 'repository', 'resources', 'security');
}

/** The places a written store file name is looked for, in order, without repeats (the module comment). */
export function storeCandidates(dir: string, written: string): string[] {
  if (path.isAbsolute(written)) return [path.normalize(written)];
  const out: string[] = [];
  const home = referenceHome(dir);
  if (home !== undefined) {
    const bare = !written.includes('/') && !written.includes('\\');
    out.push(bare ? path.join(home, 'repository', 'resources', 'security', written) : path.resolve(home, written));
  }
  const beside = path.resolve(dir, written);
  if (!out.includes(beside)) out.push(beside);
  return out;
}

/**
 * The stores the reference ships in its security directory and reads when its file names none: the
 * primary (and TLS) key store and the client trust store, with the reference's default store password
 * (docs/tls.md, "Where store files are found"). Used only when present in the security directory.
 */
export const REFERENCE_DEFAULT_STORES = {
  key: { file: 'wso2carbon.jks', type: 'JKS', password: 'wso2carbon' },
  trust: { file: 'client-truststore.jks', type: 'JKS', password: 'wso2carbon' },
} as const;
