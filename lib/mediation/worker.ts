/**
 * The mediation worker thread (piscina runs this file). It receives a body as a transferred buffer and
 * hands the body to forward back the same way (node:worker_threads: a transferred buffer is detached, the
 * worker must move it back). Scripts run here, never on the gateway's thread: each in a vm context of its
 * own, seeing only what the message carries (no require, no process, nothing of the gateway's memory), a
 * synchronous call stopped by vm's timeout; an endless asynchronous one, or one that allocates past the
 * thread's heap limit, ends this thread (lib/mediation/pool.ts), never the gateway.
 */
import * as fs from 'node:fs';
import * as vm from 'node:vm';
import { move, transferableSymbol, valueSymbol } from 'piscina';
import { mediate, type MediateResult, type MediateTask, type ScriptCall, type ScriptChanges, type ScriptFailure } from './steps';

interface LoadedScript {
  readonly mtimeMs: number;
  readonly context: vm.Context;
  readonly hooks: Map<string, vm.Script>;
}

const scripts = new Map<string, LoadedScript>();

/** Loads (or reloads, when the file changed) a script into a context of its own. */
function load(file: string, timeout: number): LoadedScript {
  const st = fs.statSync(file);
  const cached = scripts.get(file);
  if (cached !== undefined && cached.mtimeMs === st.mtimeMs) return cached;
  const code = fs.readFileSync(file, 'utf8');
  const module = { exports: {} as Record<string, unknown> };
  // Only the language's own globals, plus a console that writes nothing: a script cannot reach the
  // file system, the network, the process or the gateway.
  const context = vm.createContext({ module, exports: module.exports, console: { log() {}, info() {}, warn() {}, error() {}, debug() {} } }, { codeGeneration: { strings: false, wasm: false } });
  new vm.Script(code, { filename: file }).runInContext(context, { timeout });
  const loaded: LoadedScript = { mtimeMs: st.mtimeMs, context, hooks: new Map() };
  scripts.set(file, loaded);
  return loaded;
}

function failure(kind: ScriptFailure, message: string): { failure: { kind: ScriptFailure; message: string } } {
  return { failure: { kind, message } };
}

/** Plain data only crosses back: functions, cycles and foreign prototypes are refused. */
function plain(v: unknown): unknown {
  return v === undefined ? undefined : (JSON.parse(JSON.stringify(v)) as unknown);
}

function checkChanges(v: unknown): ScriptChanges | string {
  if (v === undefined || v === null) return {};
  if (typeof v !== 'object' || Array.isArray(v)) return `a hook returns an object or nothing, got ${Array.isArray(v) ? 'an array' : typeof v}`;
  const r = v as Record<string, unknown>;
  const out: { headers?: Record<string, string | null>; body?: unknown; status?: number } = {};
  if (r.headers !== undefined) {
    if (r.headers === null || typeof r.headers !== 'object') return 'headers must be an object of name -> value (null removes)';
    const h: Record<string, string | null> = {};
    for (const [k, x] of Object.entries(r.headers as Record<string, unknown>)) {
      if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(k)) return `invalid field name ${JSON.stringify(k)}`;
      if (x !== null && typeof x !== 'string' && typeof x !== 'number') return `field ${k}: a string, a number or null`;
      const value = x === null ? null : String(x);
      if (value !== null && /[\r\n\0]/.test(value)) return `field ${k}: CR, LF and NUL are not allowed in a value (RFC 9110 §5.5)`;
      h[k] = value;
    }
    out.headers = h;
  }
  if (r.body !== undefined) out.body = plain(r.body);
  if (r.status !== undefined) {
    if (typeof r.status !== 'number' || !Number.isInteger(r.status) || r.status < 200 || r.status > 599) return 'status must be an integer 200..599';
    out.status = r.status;
  }
  return out;
}

async function runScript(call: ScriptCall, body: unknown): Promise<{ changes?: ScriptChanges; failure?: { kind: ScriptFailure; message: string } }> {
  let s: LoadedScript;
  try {
    s = load(call.file, call.timeout);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'ENOENT') return failure('not_found', `script ${call.file} not found`);
    if (e.code === 'ERR_SCRIPT_EXECUTION_TIMEOUT') return failure('timeout', `loading the script took longer than ${call.timeout} ms`);
    return failure('threw', `loading the script failed: ${e.message}`);
  }
  const exports = (s.context.module as { exports: Record<string, unknown> }).exports;
  if (typeof exports[call.hook] !== 'function') return {};
  let invoke = s.hooks.get(call.hook);
  if (invoke === undefined) {
    invoke = new vm.Script(`module.exports.${call.hook}(__message)`, { filename: `${call.file}#${call.hook}` });
    s.hooks.set(call.hook, invoke);
  }
  // The message is built inside the script's context, so it holds no object of this thread's.
  // Not enumerable: the script's view of its global object stays what it was given.
  Object.defineProperty(s.context, '__message', { value: vm.runInContext('(m) => JSON.parse(m)', s.context)(JSON.stringify({ ...call.message, body })), configurable: true, enumerable: false, writable: true });
  let r: unknown;
  try {
    r = invoke.runInContext(s.context, { timeout: call.timeout });
    if (r !== null && typeof r === 'object' && typeof (r as { then?: unknown }).then === 'function') r = await (r as Promise<unknown>);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e !== null && typeof e === 'object' && e.code === 'ERR_SCRIPT_EXECUTION_TIMEOUT') return failure('timeout', `${call.hook} ran longer than ${call.timeout} ms`);
    return failure('threw', `${call.hook} threw: ${e !== null && typeof e === 'object' && typeof e.message === 'string' ? e.message : String(err)}`);
  } finally {
    delete s.context.__message;
  }
  let checked: ScriptChanges | string;
  try {
    checked = checkChanges(r);
  } catch (err) {
    checked = `the result is not plain data: ${(err as Error).message}`;
  }
  if (typeof checked === 'string') return failure('bad_result', checked);
  return { changes: checked };
}

/** The Transferable wrapper piscina moves: the body's buffer goes back without a copy. */
function handBack(result: MediateResult): unknown {
  const body = result.body;
  const whole = body.byteOffset === 0 && body.byteLength === body.buffer.byteLength;
  const out = whole ? result : { ...result, body: new Uint8Array(body) };
  return move({
    get [transferableSymbol]() {
      return [out.body.buffer];
    },
    get [valueSymbol]() {
      return out;
    },
  } as unknown as ArrayBuffer);
}

export default async function task(t: MediateTask): Promise<unknown> {
  if (t.started !== undefined) {
    t.started.postMessage(1);
    t.started.close();
  }
  return handBack(await mediate(t, runScript));
}
