/**
 * The services of a gRPC API's .proto files (docs/grpc.md): their full names, methods and call kinds.
 * Parsing is protobufjs's (a pure-JS parser of the protobuf language, loaded on first use through
 * config/packages.ts so `require('throughway')` does not load it). Only names and the `stream` marks are
 * read: messages are never decoded, the gateway relays them as bytes.
 *
 * Imports resolve against the importing file's directory and may not leave `dir` (the API file's): a file
 * dropped into apis/ cannot read the host's files through an import. Google's well-known types
 * (google/protobuf/*.proto) are protobufjs's own copies.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { load } from '../config/packages';
import type * as P from 'protobufjs';

type Protobuf = typeof P;
let loaded: Protobuf | undefined;
function protobuf(key: string): Protobuf {
  return (loaded ??= load<Protobuf>('protobufjs', key));
}

/** unary, server streaming, client streaming, bidirectional (gRPC over HTTP/2: the four call kinds). */
export type CallKind = 'unary' | 'server_streaming' | 'client_streaming' | 'bidi_streaming';

export interface GrpcMethod {
  /** "/package.Service/Method": the :path of its calls. */
  readonly path: string;
  readonly service: string;
  readonly name: string;
  readonly kind: CallKind;
  readonly requestType: string;
  readonly responseType: string;
}

export interface GrpcService {
  /** Full name, "package.Service". */
  readonly name: string;
  readonly methods: readonly GrpcMethod[];
}

/** The largest .proto file read (a description is configuration, not traffic). */
export const MAX_PROTO_BYTES = 4 * 1024 * 1024;

export type ProtoResult =
  | { readonly ok: true; readonly services: readonly GrpcService[]; readonly files: readonly string[] }
  | {
      readonly ok: false;
      /** The .proto file at fault (absolute), when known. */
      readonly file: string | undefined;
      /** Its line (1-based), when the parser names one. */
      readonly line: number | undefined;
      readonly message: string;
    };

function kindOf(m: P.Method): CallKind {
  const c = m.requestStream === true;
  const s = m.responseStream === true;
  return c ? (s ? 'bidi_streaming' : 'client_streaming') : s ? 'server_streaming' : 'unary';
}

/** "illegal token '}' (/x/a.proto, line 4)" -> file and line. */
const WHERE = /\(([^()]*?),\s*line (\d+)\)\s*$/;
const LINE_ONLY = /\(line (\d+)\)\s*$/;

/**
 * Texts that stand in for files (by absolute path): a gateway-worker's, served by its control plane
 * (docs/scale-out.md), or a publisher's upload checked before it is written (docs/grpc.md). null: the file
 * is taken as absent (a deletion being checked). `disk`: files not given are read from disk.
 */
export interface ProtoTexts {
  readonly texts: ReadonlyMap<string, string | null>;
  readonly disk: boolean;
}

/**
 * Reads and parses `files` (relative to `dir`, which they and their imports may not leave when `inside`)
 * and lists their services. `key` names the API for the error of a missing package; `given`: texts read
 * in place of the files (ProtoTexts).
 */
export function loadProtos(dir: string, files: readonly string[], inside: boolean, key: string, given?: ProtoTexts): ProtoResult {
  const pb = protobuf(key);
  const root = new pb.Root();
  const read: string[] = [];
  let current: string | undefined;
  root.resolvePath = (origin: string, target: string): string | null => {
    // protobufjs's common types (google/protobuf/*.proto) are served from its own copies.
    if (target.startsWith('google/protobuf/')) return target;
    const base = origin === '' ? dir : path.dirname(origin);
    return path.resolve(base, target);
  };
  const fetchFile = (file: string): string => {
    current = file;
    const rel = path.relative(dir, file);
    if (inside && (rel.startsWith('..') || path.isAbsolute(rel))) throw new ProtoFileError(file, "it leaves the API file's directory");
    const text = given?.texts.get(file);
    if (text === null || (text === undefined && given !== undefined && !given.disk))
      throw new ProtoFileError(file, given?.disk === true ? 'no such file' : 'it was not served with the API file');
    if (text !== undefined) {
      if (Buffer.byteLength(text) > MAX_PROTO_BYTES) throw new ProtoFileError(file, `it is larger than ${MAX_PROTO_BYTES} bytes`);
      read.push(file);
      return text;
    }
    let st: fs.Stats;
    try {
      st = fs.statSync(file);
    } catch (err) {
      throw new ProtoFileError(file, (err as Error).message);
    }
    if (!st.isFile()) throw new ProtoFileError(file, 'it is not a file');
    if (st.size > MAX_PROTO_BYTES) throw new ProtoFileError(file, `it is larger than ${MAX_PROTO_BYTES} bytes`);
    read.push(file);
    return fs.readFileSync(file, 'utf8');
  };
  try {
    const absolute = files.map((f) => path.resolve(dir, f));
    loadAll(pb, root, absolute, fetchFile);
    root.resolveAll();
  } catch (err) {
    if (err instanceof ProtoFileError) return { ok: false, file: err.file, line: undefined, message: err.reason };
    if (err instanceof ProtoParseError) return { ok: false, file: err.file, line: err.line, message: err.reason };
    const message = String((err as Error).message ?? err);
    const m = WHERE.exec(message);
    if (m !== null) return { ok: false, file: m[1], line: Number(m[2]), message: message.slice(0, m.index).trim() };
    const l = LINE_ONLY.exec(message);
    return {
      ok: false,
      file: current,
      line: l !== null ? Number(l[1]) : undefined,
      message: l !== null ? message.slice(0, l.index).trim() : message,
    };
  }
  const services: GrpcService[] = [];
  const walk = (ns: P.NamespaceBase): void => {
    for (const o of ns.nestedArray) {
      if (o instanceof pb.Service) {
        const name = o.fullName.replace(/^\./, '');
        services.push(
          Object.freeze({
            name,
            methods: Object.freeze(
              o.methodsArray.map((m) =>
                Object.freeze({
                  path: `/${name}/${m.name}`,
                  service: name,
                  name: m.name,
                  kind: kindOf(m),
                  requestType: m.requestType,
                  responseType: m.responseType,
                }),
              ),
            ),
          }),
        );
      } else if (o instanceof pb.Namespace) walk(o);
    }
  };
  walk(root);
  return { ok: true, services: Object.freeze(services), files: Object.freeze(read) };
}

/**
 * Parses each file and its imports depth-first with protobufjs's parser, reading through `fetch` (so the
 * confinement above holds for imports too).
 */
function loadAll(pb: Protobuf, root: P.Root, files: readonly string[], fetch: (f: string) => string): void {
  const done = new Set<string>();
  const one = (file: string): void => {
    if (done.has(file)) return;
    done.add(file);
    if (file.startsWith('google/protobuf/')) {
      const json = (pb.common as unknown as { get(f: string): { nested: Record<string, P.AnyNestedObject> } | null }).get(file);
      if (json !== null) root.addJSON(json.nested);
      return;
    }
    const source = fetch(file);
    let parsed: P.IParserResult;
    try {
      parsed = pb.parse(source, root, { keepCase: true });
    } catch (err) {
      const message = String((err as Error).message);
      // The parser names the line only; the file is this one.
      const l = LINE_ONLY.exec(message);
      throw new ProtoParseError(file, l !== null ? Number(l[1]) : undefined, l !== null ? message.slice(0, l.index).trim() : message);
    }
    for (const imp of [...(parsed.imports ?? []), ...(parsed.weakImports ?? [])]) {
      const resolved = root.resolvePath(file, imp);
      if (resolved !== null) one(resolved);
    }
  };
  for (const f of files) one(f);
}

/** A .proto file that cannot be read (internal to loadProtos: it becomes a ProtoResult). */
class ProtoFileError {
  constructor(
    readonly file: string,
    readonly reason: string,
  ) {}
}

/** A syntax error of one file, with its line. */
class ProtoParseError {
  constructor(
    readonly file: string,
    readonly line: number | undefined,
    readonly reason: string,
  ) {}
}
