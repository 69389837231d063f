/**
 * What throughway does with each deployment.toml key, derived from the schema's marks (docs/migrating.md
 * shows every spec key with its status; test/config/key-status.test.ts checks the marks against the code
 * that reads the configuration):
 * - `acts`: read by the code that runs and acting as the spec describes;
 * - `differs`: read and acting, but not as the spec describes (KeyDef.differs says how and why);
 * - `inactive`: accepted and validated, not acted on (KeyDef.inactive, or a section that does not run),
 *   with a one-line reason (`inactiveReason`); `config check` names each one a file writes, with its line
 *   and the reason.
 */
import type { KeyDef, SectionDef } from './schema-types';

export type KeyStatus = 'acts' | 'differs' | 'inactive';

export const KEY_STATUSES: readonly KeyStatus[] = ['acts', 'differs', 'inactive'];

/** How the docs and `config check` say each status. */
export const STATUS_WORDS: Readonly<Record<KeyStatus, string>> = { acts: 'acts', differs: 'acts differently', inactive: 'not acted on' };

export function keyStatus(section: SectionDef, def: KeyDef): KeyStatus {
  if (!section.runs || def.inactive !== undefined) return 'inactive';
  return def.differs !== undefined ? 'differs' : 'acts';
}

/** Why a key is not acted on: the key's own reason, else its section's; undefined for a key that acts. */
export function inactiveReason(section: SectionDef, def: KeyDef): string | undefined {
  if (def.inactive !== undefined) return def.inactive;
  return section.runs ? undefined : section.notRun;
}

/** Sections of the reference's configuration (spec 000, 001 and the reference's own tables), not [throughway]'s. */
export const isSpecSection = (s: SectionDef): boolean => s.source !== 'throughway';

export type StatusCounts = Readonly<Record<KeyStatus, number>>;

/** How many keys of these sections have each status. */
export function countStatuses(sections: readonly SectionDef[]): StatusCounts {
  const n = { acts: 0, differs: 0, inactive: 0 };
  for (const s of sections) for (const k of s.keys) n[keyStatus(s, k)]++;
  return n;
}
