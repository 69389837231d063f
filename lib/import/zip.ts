/**
 * A small reader of .zip files (PKWARE APPNOTE 6.3.10): the end of central directory record (4.3.16),
 * the central directory headers (4.3.12) and each entry's local header (4.3.7), entries stored (method
 * 0) or deflated (method 8, inflated by node:zlib). A project export is a few files; a reader of ~150
 * lines with its bounds in plain sight was preferred to a dependency (yauzl streams entries and leaves
 * bounds to the caller). Bounded before anything is inflated: the number of entries, each entry's and
 * the total declared size, and each entry's expansion ratio; the inflater is capped at the declared size,
 * so an entry that lies about its size fails instead of expanding. Names are checked: absolute paths,
 * drive letters, backslashes and `..` segments are refused (APPNOTE 4.4.17: "MUST NOT contain a drive or
 * device letter, or a leading slash"). ZIP64, encryption and other methods are refused.
 */
import * as zlib from 'node:zlib';
import { ImportError } from './codes';

export interface ZipLimits {
  /** Entries at most (directories included). */
  readonly maxEntries: number;
  /** Bytes at most once inflated, over all entries. */
  readonly maxTotalBytes: number;
  /** Largest uncompressed / compressed ratio of one entry larger than ratioFloor. */
  readonly maxRatio: number;
  /** Entries smaller than this are not ratio-checked (a short text compresses well and harms nobody). */
  readonly ratioFloor: number;
}

/** The bounds of docs/migrating.md: a project export is a few files of configuration. */
export const ZIP_LIMITS: ZipLimits = Object.freeze({
  maxEntries: 2000,
  maxTotalBytes: 64 * 1024 * 1024,
  maxRatio: 100,
  ratioFloor: 64 * 1024,
});

const EOCD = 0x06054b50;
const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;

/** Whether a name stays inside the directory it is unpacked into. */
export function safeEntryName(name: string): boolean {
  if (name === '' || name.includes('\\') || name.includes('\0') || name.startsWith('/') || /^[A-Za-z]:/.test(name)) return false;
  return !name.split('/').some((s) => s === '..');
}

/** The entries of a zip archive: name (with / separators) -> bytes; directories left out. */
export function readZip(buf: Buffer, where: string, limits: ZipLimits = ZIP_LIMITS): Map<string, Buffer> {
  const bad = (message: string): ImportError => new ImportError('IMPORT_ZIP_FORMAT', where, message);
  // The end record is in the last 22 + 65535 bytes (its comment is at most 65535 bytes, 4.3.16).
  let eocd = -1;
  for (let i = buf.length - 22; i >= Math.max(0, buf.length - 22 - 0xffff); i--) {
    if (buf.readUInt32LE(i) === EOCD) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw bad('no end of central directory record: not a zip archive');
  const count = buf.readUInt16LE(eocd + 10);
  const cdSize = buf.readUInt32LE(eocd + 12);
  const cdOffset = buf.readUInt32LE(eocd + 16);
  if (count === 0xffff || cdOffset === 0xffffffff) throw bad('ZIP64 archives are not read');
  if (count > limits.maxEntries) throw new ImportError('IMPORT_LIMIT', where, `${count} entries, more than ${limits.maxEntries}`);
  if (cdOffset + cdSize > eocd) throw bad('the central directory lies outside the file');
  const out = new Map<string, Buffer>();
  let total = 0;
  let p = cdOffset;
  for (let n = 0; n < count; n++) {
    if (p + 46 > buf.length || buf.readUInt32LE(p) !== CENTRAL) throw bad(`central directory header ${n} is damaged`);
    const flags = buf.readUInt16LE(p + 8);
    const method = buf.readUInt16LE(p + 10);
    const crc = buf.readUInt32LE(p + 16);
    const compressed = buf.readUInt32LE(p + 20);
    const size = buf.readUInt32LE(p + 24);
    const nameLen = buf.readUInt16LE(p + 28);
    const extraLen = buf.readUInt16LE(p + 30);
    const commentLen = buf.readUInt16LE(p + 32);
    const local = buf.readUInt32LE(p + 42);
    const name = buf.subarray(p + 46, p + 46 + nameLen).toString('utf8');
    p += 46 + nameLen + extraLen + commentLen;
    const entry = `${where}!${name}`;
    if (!safeEntryName(name))
      throw new ImportError('IMPORT_ZIP_PATH', entry, 'the entry name leaves the project (absolute, drive letter, backslash or ..)');
    if (name.endsWith('/')) continue;
    if ((flags & 1) !== 0) throw new ImportError('IMPORT_ZIP_FORMAT', entry, 'encrypted entries are not read');
    if (method !== 0 && method !== 8)
      throw new ImportError('IMPORT_ZIP_FORMAT', entry, `compression method ${method} is not read (stored or deflate only)`);
    if (size === 0xffffffff || compressed === 0xffffffff) throw new ImportError('IMPORT_ZIP_FORMAT', entry, 'ZIP64 entries are not read');
    total += size;
    if (total > limits.maxTotalBytes)
      throw new ImportError('IMPORT_LIMIT', entry, `the entries declare more than ${limits.maxTotalBytes} bytes in all`);
    if (size > limits.ratioFloor && size > compressed * limits.maxRatio)
      throw new ImportError(
        'IMPORT_ZIP_RATIO',
        entry,
        `${size} bytes from ${compressed}: more than ${limits.maxRatio} times its compressed size`,
      );
    if (local + 30 > buf.length || buf.readUInt32LE(local) !== LOCAL)
      throw new ImportError('IMPORT_ZIP_FORMAT', entry, 'its local header is damaged');
    const start = local + 30 + buf.readUInt16LE(local + 26) + buf.readUInt16LE(local + 28);
    if (start + compressed > buf.length) throw new ImportError('IMPORT_ZIP_FORMAT', entry, 'its data runs past the end of the file');
    const raw = buf.subarray(start, start + compressed);
    let data: Buffer;
    try {
      // Capped at the declared size (+1 to notice an entry that holds more than it declares).
      data = method === 0 ? Buffer.from(raw) : zlib.inflateRawSync(raw, { maxOutputLength: size + 1 });
    } catch (err) {
      throw new ImportError('IMPORT_ZIP_FORMAT', entry, `it does not inflate to its declared ${size} bytes: ${(err as Error).message}`);
    }
    if (data.length !== size) throw new ImportError('IMPORT_ZIP_FORMAT', entry, `it holds ${data.length} bytes, not its declared ${size}`);
    if (zlib.crc32(data) >>> 0 !== crc) throw new ImportError('IMPORT_ZIP_FORMAT', entry, 'its CRC-32 does not match');
    out.set(name, data);
  }
  return out;
}

/** The writer (`export api --zip`, the developer portal's SDK downloads) lives on the services floor, where lib/sdk can reach it. */
export { writeZip } from '../sdk/zip';
