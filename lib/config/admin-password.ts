/**
 * The built-in default super admin password (`[super_admin] password = "admin"`, spec 001's default) as
 * a warning of `throughway config check` (docs/security.md, "The management port"): the node still starts
 * with it, its management listeners on loopback only, so `npm start` on one machine keeps working.
 */
import type { DeploymentConfig } from './deployment-config.generated';
import type { Diagnostic } from './diagnostics';

/** Spec 001's default `[super_admin] password`. */
export const DEFAULT_ADMIN_PASSWORD = 'admin';

/** The warning for `file`'s configuration, or undefined when the super admin has a password of its own. */
export function defaultAdminPasswordWarning(config: DeploymentConfig, file: string): Diagnostic | undefined {
  if (!config.super_admin.create_admin_account || config.super_admin.password !== DEFAULT_ADMIN_PASSWORD) return undefined;
  return {
    level: 'warning',
    code: 'CONFIG_DEFAULT_ADMIN_PASSWORD',
    key: 'super_admin.password',
    file,
    line: 0,
    message:
      'the super admin has the built-in default password "admin": whoever reaches a management port (the admin API, the key manager, the consoles) signs in as the super admin; the management ports listen on 127.0.0.1 only while it is set (docs/security.md, "The management port")',
    expected: 'password = "$env{ADMIN_PASSWORD}" (and the stored password changed)',
  };
}
