/**
 * The .proto files of a gRPC API as the publisher and the admin API's api-files routes write them
 * (docs/grpc.md, "The .proto files in the publisher"): stored beside the API file (apis_dir, a tenant's
 * apis_dir/t/<domain>/, or the drafts' created/ folder), named in its `[grpc] proto` list. An upload is
 * checked with the API file it changes (the gateway's validator, protobufjs underneath) before anything is
 * written: a syntax error names the file and line, and nothing is stored.
 */
import { isTable, parseDocument } from '../config/document';
import { toTomlText } from '../config/print';
import { API_CODES } from '../gateway/apis';
import { API_IDENTITY } from './api-form';
import type { FormFile } from './multipart';
import { editToml } from './toml-edit';

/** One .proto file uploaded: its name (no directory) and text. */
export interface ProtoUpload {
  readonly name: string;
  readonly text: string;
}

/** The largest .proto file uploaded (the admin API's request body holds at most MAX_PROTO_UPLOAD_BODY of lib/keymanager/http.ts). */
export const MAX_UPLOAD_PROTO_BYTES = 256 * 1024;
/** The most .proto files one API names through the publisher and the admin API. */
export const MAX_API_PROTOS = 16;

/** The name of the publisher's file input that takes several .proto files at once (`<input type=file multiple>`). */
export const PROTO_FILES_FIELD = 'proto_files';

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The .proto files of a form's file input as uploads: each a UTF-8 text (a string: the API_PROTO_UPLOAD
 * refusal naming the file that is not). Their sizes and names are uploadProblem's to check.
 */
export function uploadsOf(files: readonly FormFile[], field = PROTO_FILES_FIELD): ProtoUpload[] | string {
  const out: ProtoUpload[] = [];
  for (const f of files) {
    if (f.field !== field) continue;
    if (f.data.length > MAX_UPLOAD_PROTO_BYTES)
      return `API_PROTO_UPLOAD: ${f.filename.slice(0, 130)} is larger than ${MAX_UPLOAD_PROTO_BYTES} bytes`;
    try {
      out.push({ name: f.filename, text: UTF8.decode(f.data) });
    } catch {
      return `API_PROTO_UPLOAD: ${f.filename.slice(0, 130)} is not UTF-8 text`;
    }
  }
  return out;
}

/** A .proto file name the publisher writes: a plain file name ending .proto (no directory, no traversal). */
const PROTO_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,120}\.proto$/;

/** Why `name` cannot be an uploaded .proto file's name; undefined: it can. */
export function protoNameProblem(name: string): string | undefined {
  if (PROTO_NAME.test(name) && !name.includes('..')) return undefined;
  return `${JSON.stringify(name.slice(0, 130))} is not a .proto file name: letters, digits, '.', '_' and '-', ending .proto, no directory`;
}

/**
 * Why `files` cannot be uploaded (names, sizes, count with the API's `current` list); undefined: they can.
 * The message starts with its code, API_PROTO_UPLOAD (docs/grpc.md).
 */
export function uploadProblem(files: readonly ProtoUpload[], current: readonly string[]): string | undefined {
  if (files.length === 0) return 'API_PROTO_UPLOAD: no .proto file given';
  const seen = new Set<string>();
  for (const f of files) {
    const bad = protoNameProblem(f.name);
    if (bad !== undefined) return `API_PROTO_UPLOAD: ${bad}`;
    if (seen.has(f.name)) return `API_PROTO_UPLOAD: ${f.name} is given twice`;
    seen.add(f.name);
    if (Buffer.byteLength(f.text) > MAX_UPLOAD_PROTO_BYTES)
      return `API_PROTO_UPLOAD: ${f.name} is larger than ${MAX_UPLOAD_PROTO_BYTES} bytes`;
  }
  const all = new Set([...current, ...files.map((f) => f.name)]);
  if (all.size > MAX_API_PROTOS) return `API_PROTO_UPLOAD: an API names at most ${MAX_API_PROTOS} .proto files (${all.size} with these)`;
  return undefined;
}

/** The `[grpc] proto` list of an API file's text (empty: none, or not TOML). */
export function protoList(text: string): string[] {
  const p = parseDocument(text, '', API_CODES);
  if (!p.ok || !isTable(p.doc) || !isTable(p.doc.grpc) || !Array.isArray(p.doc.grpc.proto)) return [];
  return p.doc.grpc.proto.filter((x): x is string => typeof x === 'string');
}

/** Whether an API file's text is a gRPC API's (`type = "GRPC"`). */
export function isGrpcText(text: string): boolean {
  const p = parseDocument(text, '', API_CODES);
  return p.ok && isTable(p.doc) && p.doc.type === 'GRPC';
}

/**
 * The API file's text with its `[grpc] proto` list set to `list` (comments and layout kept where the
 * edit reads back exactly, else written afresh); undefined when the text is not TOML.
 */
export function withProtoList(text: string, list: readonly string[]): string | undefined {
  const p = parseDocument(text, '', API_CODES);
  if (!p.ok || !isTable(p.doc)) return undefined;
  const raw = p.doc;
  const next = { ...raw, grpc: { ...(isTable(raw.grpc) ? raw.grpc : {}), proto: [...list] } };
  return editToml(text, raw, next, API_IDENTITY) ?? `# Written by the throughway publisher (docs/portal.md).\n${toTomlText(next)}`;
}
