/**
 * The mediation worker thread (piscina runs this file). It receives a body as a transferred buffer and
 * hands the body to forward back the same way (node:worker_threads: a transferred buffer is detached, the
 * worker must move it back). Scripts run here, never on the gateway's thread: each in a vm context of its
 * own that only strings cross (lib/mediation/sandbox.ts), a call (its promise jobs included) stopped by
 * vm's timeout; one that allocates past the thread's heap limit, or blocks past the pool's limit, ends
 * this thread (lib/mediation/pool.ts), never the gateway.
 */
import * as fs from 'node:fs';
import { move, transferableSymbol, valueSymbol } from 'piscina';
import { Sandbox, type SandboxOutcome } from './sandbox';
import { mediate, type MediateResult, type MediateTask, type ScriptCall, type ScriptChanges, type ScriptFailure } from './steps';

interface LoadedScript {
  readonly mtimeMs: number;
  readonly sandbox: Sandbox;
}

const scripts = new Map<string, LoadedScript>();

/** Loads (or reloads, when the file changed) a script into a context of its own (lib/mediation/sandbox.ts). */
function load(file: string, timeout: number, maxResult: number): LoadedScript | { failure: SandboxOutcome } {
  const st = fs.statSync(file);
  const cached = scripts.get(file);
  if (cached !== undefined && cached.mtimeMs === st.mtimeMs) return cached;
  const loaded = Sandbox.load(fs.readFileSync(file, 'utf8'), file, timeout, maxResult);
  if ('failure' in loaded) return loaded;
  const s: LoadedScript = { mtimeMs: st.mtimeMs, sandbox: loaded.sandbox };
  scripts.set(file, s);
  return s;
}

function failure(kind: ScriptFailure, message: string): { failure: { kind: ScriptFailure; message: string } } {
  return { failure: { kind, message } };
}

/** Checks a hook's result: plain data parsed on this thread from the JSON text the script's context wrote. */
function checkChanges(v: unknown): ScriptChanges | string {
  if (v === undefined || v === null) return {};
  if (typeof v !== 'object' || Array.isArray(v))
    return `a hook returns an object or nothing, got ${Array.isArray(v) ? 'an array' : typeof v}`;
  const r = v as Record<string, unknown>;
  const out: { headers?: Record<string, string | null>; body?: unknown; status?: number } = {};
  if (r.headers !== undefined) {
    if (r.headers === null || typeof r.headers !== 'object' || Array.isArray(r.headers))
      return 'headers must be an object of name -> value (null removes)';
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
  if (r.body !== undefined) out.body = r.body;
  if (r.status !== undefined) {
    if (typeof r.status !== 'number' || !Number.isInteger(r.status) || r.status < 200 || r.status > 599)
      return 'status must be an integer 200..599';
    out.status = r.status;
  }
  return out;
}

function runScript(call: ScriptCall, body: unknown): { changes?: ScriptChanges; failure?: { kind: ScriptFailure; message: string } } {
  let s: LoadedScript | { failure: SandboxOutcome };
  try {
    s = load(call.file, call.timeout, call.maxResult);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'ENOENT') return failure('not_found', `script ${call.file} not found`);
    return failure('threw', `loading the script failed: ${e.message}`);
  }
  if ('failure' in s) return outcome(s.failure);
  // The message crosses as JSON text and is parsed inside the script's context (sandbox.ts).
  const r = s.sandbox.call(call.hook, JSON.stringify({ ...call.message, body }));
  return outcome(r);
}

function outcome(r: SandboxOutcome): { changes?: ScriptChanges; failure?: { kind: ScriptFailure; message: string } } {
  if (r.kind === 'none') return {};
  if (r.kind === 'timeout') return failure('timeout', r.message);
  if (r.kind === 'threw') return failure('threw', r.message);
  if (r.kind === 'bad_result') return failure('bad_result', r.message);
  const checked = checkChanges(r.value);
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
