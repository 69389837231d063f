/**
 * Writing what an import or export produced: every file compared with what is on disk first, so that a
 * second import of the same project changes nothing, and a file that exists with other content stops
 * the whole run (IMPORT_EXISTS, every such file named) unless --force; --dry-run compares and writes
 * nothing. Each file is written to a temporary name beside it and renamed, so a reader (the gateway's
 * hot deploy) never sees half a file.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ImportError } from './codes';

export interface PlannedFile {
  /** Absolute path. */
  readonly path: string;
  readonly bytes: Buffer;
}

export type FileOutcome = 'new' | 'unchanged' | 'replaced';

export interface WriteOptions {
  readonly dryRun: boolean;
  readonly force: boolean;
}

function current(file: string): Buffer | undefined {
  try {
    return fs.readFileSync(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new ImportError('IMPORT_IO', file, (err as Error).message);
  }
}

/** What writing `files` would do to each (nothing is written). */
export function compare(files: readonly PlannedFile[]): { file: PlannedFile; outcome: FileOutcome }[] {
  return files.map((file) => {
    const now = current(file.path);
    return { file, outcome: now === undefined ? 'new' : now.equals(file.bytes) ? 'unchanged' : 'replaced' };
  });
}

/**
 * Writes the files that are new or differ. Without `force`, a file that exists with other content
 * refuses the whole set before anything is written.
 */
export function writeFiles(files: readonly PlannedFile[], o: WriteOptions): { file: PlannedFile; outcome: FileOutcome }[] {
  const plan = compare(files);
  const differing = plan.filter((p) => p.outcome === 'replaced');
  if (differing.length > 0 && !o.force && !o.dryRun) {
    throw new ImportError(
      'IMPORT_EXISTS',
      differing[0]?.file.path ?? '',
      `exists with other content, not overwritten without --force${
        differing.length > 1
          ? ` (nor ${differing
              .slice(1)
              .map((d) => d.file.path)
              .join(', ')})`
          : ''
      }; nothing written`,
    );
  }
  if (o.dryRun) return plan;
  for (const p of plan) {
    if (p.outcome === 'unchanged') continue;
    try {
      fs.mkdirSync(path.dirname(p.file.path), { recursive: true });
      const tmp = path.join(path.dirname(p.file.path), `.${path.basename(p.file.path)}.${process.pid}.tmp`);
      fs.writeFileSync(tmp, p.file.bytes, { mode: 0o600 });
      fs.renameSync(tmp, p.file.path);
    } catch (err) {
      throw new ImportError('IMPORT_IO', p.file.path, (err as Error).message);
    }
  }
  return plan;
}
