/**
 * Loads llhttp's WebAssembly build out of the pinned `llhttp-wasm@1.0.3` package, once per process.
 *
 * The package's JavaScript wrapper is not used (measured on a prototype with llhttp-wasm 1.0.3: wrong parser
 * type, headers corrupted when split across reads, lossy UTF-8, no header limit, a malloc per execute).
 * Only the wasm bytes it embeds as a base64 literal are taken. The parser adapter reads fields of the
 * llhttp_t struct directly, so the exact bytes are pinned by hash: a different build could move them.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ThroughwayError } from '../errors';

/**
 * The slice of the WebAssembly JS API used here. tsconfig's `lib` has no DOM and @types/node 20 does not
 * declare the WebAssembly namespace, so it is typed locally rather than through a global declaration.
 */
interface WasmMemory {
  readonly buffer: ArrayBuffer;
}
interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: Record<string, Record<string, unknown>>) => { exports: object };
  Memory: abstract new (...args: never[]) => WasmMemory;
}
const wasmApi = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

/** The `env` imports llhttp's wasm build calls back into (the same eight callbacks as undici's build). */
export interface LlhttpImports {
  wasm_on_message_begin(p: number): number;
  wasm_on_url(p: number, at: number, len: number): number;
  wasm_on_status(p: number, at: number, len: number): number;
  wasm_on_header_field(p: number, at: number, len: number): number;
  wasm_on_header_value(p: number, at: number, len: number): number;
  /** Type section: (i32, i32, i32, i32) -> i32, i.e. (p, statusCode, upgrade, shouldKeepAlive). */
  wasm_on_headers_complete(p: number, statusCode: number, upgrade: number, shouldKeepAlive: number): number;
  wasm_on_body(p: number, at: number, len: number): number;
  wasm_on_message_complete(p: number): number;
}

/** The exports this project uses. The `llhttp_set_lenient_*` exports exist and are deliberately absent. */
export interface LlhttpExports {
  memory: WasmMemory;
  _initialize(): void;
  malloc(size: number): number;
  free(ptr: number): void;
  llhttp_alloc(type: number): number;
  llhttp_free(p: number): void;
  llhttp_execute(p: number, data: number, len: number): number;
  llhttp_finish(p: number): number;
  llhttp_pause(p: number): void;
  llhttp_resume(p: number): void;
  llhttp_resume_after_upgrade(p: number): void;
  llhttp_reset(p: number): void;
  llhttp_get_errno(p: number): number;
  llhttp_get_error_reason(p: number): number;
  llhttp_get_error_pos(p: number): number;
  llhttp_errno_name(errno: number): number;
  llhttp_get_type(p: number): number;
  llhttp_get_http_major(p: number): number;
  llhttp_get_http_minor(p: number): number;
  llhttp_get_method(p: number): number;
  llhttp_method_name(method: number): number;
  llhttp_get_status_code(p: number): number;
  llhttp_get_upgrade(p: number): number;
  llhttp_should_keep_alive(p: number): number;
  llhttp_message_needs_eof(p: number): number;
}

/** sha256 of the wasm bytes embedded in llhttp-wasm@1.0.3 (llhttp 9.x, 60,347 bytes). */
export const PINNED_WASM_SHA256 = '259f8302ac0f7fd7d38469e0d16b505e59c6b432cc5eb856be4d012260de0e11';
export const PINNED_WASM_BYTES = 60_347;

const FUNCTION_EXPORTS: readonly (keyof LlhttpExports)[] = [
  '_initialize',
  'malloc',
  'free',
  'llhttp_alloc',
  'llhttp_free',
  'llhttp_execute',
  'llhttp_finish',
  'llhttp_pause',
  'llhttp_resume',
  'llhttp_resume_after_upgrade',
  'llhttp_reset',
  'llhttp_get_errno',
  'llhttp_get_error_reason',
  'llhttp_get_error_pos',
  'llhttp_errno_name',
  'llhttp_get_type',
  'llhttp_get_http_major',
  'llhttp_get_http_minor',
  'llhttp_get_method',
  'llhttp_method_name',
  'llhttp_get_status_code',
  'llhttp_get_upgrade',
  'llhttp_should_keep_alive',
  'llhttp_message_needs_eof',
];

/** Thrown at start-up when the installed package is not the build this adapter was written against. */
export class LlhttpLoadError extends ThroughwayError {
  readonly code = 'ERR_LLHTTP_WASM_LOAD';
  constructor(message: string) {
    super(`llhttp-wasm: ${message} (throughway needs llhttp-wasm@1.0.3 exactly; reinstall with npm ci)`);
    this.name = 'LlhttpLoadError';
  }
}

/** Reads and checks the wasm bytes embedded in the installed package. */
export function readLlhttpWasm(): Buffer {
  let file: string;
  try {
    file = require.resolve('llhttp-wasm/out/index.js');
  } catch (err) {
    throw new LlhttpLoadError(`cannot resolve llhttp-wasm/out/index.js: ${(err as Error).message}`);
  }
  return extractLlhttpWasm(readFileSync(file, 'latin1'), file);
}

/** Takes the wasm bytes out of the wrapper's source and checks they are the pinned build. */
export function extractLlhttpWasm(source: string, file: string): Buffer {
  // The wrapper assigns the module once: `let binaryString = "<base64>";`.
  const found = /\bbinaryString\s*=\s*"([A-Za-z0-9+/]+={0,2})"/.exec(source);
  if (found === null || found[1] === undefined) {
    throw new LlhttpLoadError(`${file} no longer holds the wasm module as a "binaryString" base64 literal`);
  }
  const bytes = Buffer.from(found[1], 'base64');
  const sha = createHash('sha256').update(bytes).digest('hex');
  if (bytes.length !== PINNED_WASM_BYTES || sha !== PINNED_WASM_SHA256) {
    throw new LlhttpLoadError(
      `${file} embeds a different wasm build (${bytes.length} bytes, sha256 ${sha}); ` +
        `expected ${PINNED_WASM_BYTES} bytes, sha256 ${PINNED_WASM_SHA256}`,
    );
  }
  return bytes;
}

/** Compiles and instantiates the module with the given callbacks. One call per process is intended. */
export function instantiateLlhttp(imports: LlhttpImports): LlhttpExports {
  const module = new wasmApi.Module(readLlhttpWasm());
  const instance = new wasmApi.Instance(module, { env: { ...imports } });
  const exports = instance.exports as Record<string, unknown>;
  if (!(exports['memory'] instanceof wasmApi.Memory)) {
    throw new LlhttpLoadError('the module does not export its memory');
  }
  for (const name of FUNCTION_EXPORTS) {
    if (typeof exports[name] !== 'function') throw new LlhttpLoadError(`the module does not export ${name}()`);
  }
  const llhttp = exports as unknown as LlhttpExports;
  // A WASI reactor: runs the C constructors (llhttp's static tables) before any other call.
  llhttp._initialize();
  return llhttp;
}
