/**
 * The context a mediation script runs in (docs/mediation.md, "Isolation"). Only primitive strings cross
 * between this thread and the script: no object or function of this thread is ever put into the context,
 * and this thread never reads, calls or awaits an object of the script's. Every object the script sees
 * (`module`, `exports`, `console`, the message) is made by code that runs inside the context before the
 * script's own code, so the constructor chain of each leads to the context's `Function`, which cannot
 * compile strings (`codeGeneration.strings: false`). A host object would lead to this thread's `Function`,
 * which can (`console.constructor.constructor('return process')()` returned the node's `process` when
 * `console` was made here). Measured on Node 20: vm puts the sandbox object's prototype chain behind the
 * context's global, so the sandbox is a null-prototype object (`this.constructor` is then the context's
 * `Object`), and `import()` in a vm script rejects with an error made by Node in this thread, so a script
 * that contains `import()` is refused before it is compiled (the context cannot compile code later).
 */
import { types } from 'node:util';
import * as vm from 'node:vm';
import { parse, type Node } from 'acorn';

/** What one call of a hook gives back: parsed here from the JSON text the context wrote. */
export type SandboxOutcome =
  | { readonly kind: 'none' }
  | { readonly kind: 'value'; readonly value: unknown }
  | { readonly kind: 'threw'; readonly message: string }
  | { readonly kind: 'timeout'; readonly message: string }
  | { readonly kind: 'bad_result'; readonly message: string };

/** The entry point the bootstrap defines on the context's global (non-enumerable, not configurable). */
const ENTRY = '__throughway_mediation_call__';

/**
 * Runs inside the context, before the script: captures the built-ins it needs (a script may replace the
 * globals afterwards), defines the script's globals, and returns the functions this thread calls with
 * strings only. All it returns to this thread is strings (typeof checked there as well).
 */
const BOOTSTRAP = `(function (maxResult) {
  'use strict';
  const G = globalThis, stringify = JSON.stringify, parse = JSON.parse, apply = Reflect.apply,
    defineProperty = Object.defineProperty, then = Promise.prototype.then, resolve = Promise.resolve,
    PromiseC = Promise, StringC = String, sliceS = String.prototype.slice;
  const noop = function () {};
  const module = { exports: {} };
  G.module = module;
  G.exports = module.exports;
  G.console = { log: noop, info: noop, warn: noop, error: noop, debug: noop, trace: noop };
  let input, loader, state, calls = 0;
  function text(e) {
    try {
      const m = e !== null && typeof e === 'object' && typeof e.message === 'string' ? e.message : StringC(e);
      return typeof m === 'string' ? apply(sliceS, m, [0, 1000]) : 'a value that is not an error';
    } catch (x) {
      return 'a value that cannot be described';
    }
  }
  function out(r) {
    let s;
    try {
      s = r === undefined ? undefined : stringify(r);
    } catch (e) {
      return stringify({ bad: 'the result is not plain data: ' + text(e) });
    }
    if (s === undefined) return '{"value":null}';
    if (typeof s !== 'string') return '{"bad":"the result is not plain data"}';
    if (s.length > maxResult) return stringify({ bad: 'the result is longer than ' + maxResult + ' characters as JSON (throughway.mediation.max_body)' });
    return '{"value":' + s + '}';
  }
  function run(hook) {
    state = undefined;
    const call = ++calls;
    // A promise of an earlier call that settles now does not answer for this one.
    const settle = (s) => { if (call === calls) state = s; };
    if (hook === 'load') {
      const f = loader;
      loader = undefined;
      try { f(); } catch (e) { return stringify({ threw: text(e) }); }
      return '{"none":true}';
    }
    const m = parse(input);
    input = undefined;
    let f;
    try { f = module.exports[hook]; } catch (e) { return stringify({ threw: text(e) }); }
    if (typeof f !== 'function') return '{"none":true}';
    let r;
    try { r = f(m); } catch (e) { return stringify({ threw: text(e) }); }
    let thenable = false;
    try { thenable = r !== null && (typeof r === 'object' || typeof r === 'function') && typeof r.then === 'function'; } catch (e) { return stringify({ threw: text(e) }); }
    if (!thenable) return out(r);
    state = '{"pending":true}';
    try {
      apply(then, apply(resolve, PromiseC, [r]), [(v) => settle(out(v)), (e) => settle(stringify({ threw: text(e) }))]);
    } catch (e) {
      return stringify({ threw: text(e) });
    }
    return state;
  }
  defineProperty(G, '${ENTRY}', { value: run, enumerable: false, writable: false, configurable: false });
  return {
    setInput(s) { input = s; },
    setLoader(f) { loader = f; },
    settled() { return state; },
  };
})`;

interface Bridge {
  setInput(s: string): void;
  setLoader(f: unknown): void;
  settled(): unknown;
}

/** One invoke script per hook name, compiled once and run in any context. */
const INVOKE = new Map<string, vm.Script>();
function invoker(hook: string): vm.Script {
  let s = INVOKE.get(hook);
  if (s === undefined) {
    s = new vm.Script(`${ENTRY}(${JSON.stringify(hook)})`, { filename: `throughway:mediation:${hook}` });
    INVOKE.set(hook, s);
  }
  return s;
}

/** The first `import()` or `import.meta` in `code`, or a parse error; undefined when there is none. */
export function forbiddenSyntax(code: string): string | undefined {
  let root: Node;
  try {
    root = parse(code, {
      ecmaVersion: 'latest',
      sourceType: 'script',
      allowReturnOutsideFunction: true,
      allowHashBang: true,
      locations: true,
    });
  } catch (err) {
    return `the script cannot be parsed: ${(err as Error).message}`;
  }
  // Iterative walk over every node (deeply nested code cannot overflow this thread's stack).
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const n = stack.pop();
    if (n === null || typeof n !== 'object') continue;
    if (Array.isArray(n)) {
      for (const x of n) stack.push(x);
      continue;
    }
    const node = n as Node & { loc?: { start: { line: number; column: number } } };
    if (
      node.type === 'ImportExpression' ||
      (node.type === 'MetaProperty' && (node as unknown as { meta: { name: string } }).meta.name === 'import')
    ) {
      const at = node.loc === undefined ? '' : ` (line ${node.loc.start.line}, column ${node.loc.start.column + 1})`;
      return `import() is not available to mediation scripts${at}`;
    }
    for (const [k, v] of Object.entries(node)) if (k !== 'loc' && v !== null && typeof v === 'object') stack.push(v);
  }
  return undefined;
}

/** A script loaded into a context of its own. */
export class Sandbox {
  private readonly context: vm.Context;
  private readonly bridge: Bridge;

  private constructor(
    context: vm.Context,
    bridge: Bridge,
    private readonly timeout: number,
  ) {
    this.context = context;
    this.bridge = bridge;
  }

  /**
   * Loads `code` (a CommonJS-style module: `module.exports.onRequest = ...`) into a fresh context; its
   * top level runs under `timeout` ms. `maxResult` bounds the JSON text of a hook's result (characters).
   */
  static load(code: string, filename: string, timeout: number, maxResult: number): { sandbox: Sandbox } | { failure: SandboxOutcome } {
    const forbidden = forbiddenSyntax(code);
    if (forbidden !== undefined) return { failure: { kind: 'threw', message: `loading the script failed: ${forbidden}` } };
    const context = vm.createContext(Object.create(null) as object, {
      codeGeneration: { strings: false, wasm: false },
      microtaskMode: 'afterEvaluate',
    });
    const make = new vm.Script(BOOTSTRAP, { filename: 'throughway:mediation:bootstrap' }).runInContext(context) as (max: number) => Bridge;
    const bridge = make(maxResult);
    let fn: unknown;
    try {
      fn = vm.compileFunction(code, [], { filename, parsingContext: context });
    } catch {
      // The error is an object of the context's (a SyntaxError made there): not read here.
      return { failure: { kind: 'threw', message: 'loading the script failed: it is not valid JavaScript' } };
    }
    bridge.setLoader(fn);
    const sandbox = new Sandbox(context, bridge, timeout);
    const r = sandbox.invoke('load', undefined);
    if (r.kind === 'threw') return { failure: { kind: 'threw', message: `loading the script failed: ${r.message}` } };
    if (r.kind === 'timeout') return { failure: { kind: 'timeout', message: `loading the script took longer than ${timeout} ms` } };
    return { sandbox };
  }

  /** Calls `hook` with `messageJson` (JSON text, parsed inside the context). */
  call(hook: 'onRequest' | 'onResponse', messageJson: string): SandboxOutcome {
    return this.invoke(hook, messageJson);
  }

  private invoke(hook: string, messageJson: string | undefined): SandboxOutcome {
    if (messageJson !== undefined) this.bridge.setInput(messageJson);
    let first: unknown;
    try {
      // microtaskMode 'afterEvaluate': the context's promise jobs run before runInContext returns, under
      // the same timeout, so an async hook has settled (or never will: the context has no timers or I/O).
      first = invoker(hook).runInContext(this.context, { timeout: this.timeout });
    } catch (err) {
      if (isTimeout(err)) return { kind: 'timeout', message: `${hook} ran longer than ${this.timeout} ms` };
      // Anything else that left the entry point is the context's value: it is not read here.
      return { kind: 'threw', message: `${hook} failed` };
    }
    let text = first;
    if (text === '{"pending":true}') text = this.bridge.settled();
    if (typeof text !== 'string') return { kind: 'bad_result', message: 'the result is not plain data' };
    return decode(hook, text);
  }
}

/**
 * vm's timeout error. Node makes it with the context's Error (measured on Node 20), so it is told apart
 * without running any of the context's code: a native error that is no Proxy, with an own data property
 * `code` (a descriptor read calls no getter).
 */
function isTimeout(err: unknown): boolean {
  if (!types.isNativeError(err) || types.isProxy(err)) return false;
  const d = Object.getOwnPropertyDescriptor(err, 'code');
  return d !== undefined && 'value' in d && d.value === 'ERR_SCRIPT_EXECUTION_TIMEOUT';
}

function decode(hook: string, text: string): SandboxOutcome {
  let r: Record<string, unknown>;
  try {
    r = JSON.parse(text) as Record<string, unknown>;
  } catch {
    return { kind: 'bad_result', message: 'the result is not plain data' };
  }
  if (r === null || typeof r !== 'object') return { kind: 'bad_result', message: 'the result is not plain data' };
  if (r.none === true) return { kind: 'none' };
  if (r.pending === true) return { kind: 'timeout', message: `${hook} returned a promise that never settles` };
  if (typeof r.threw === 'string') return { kind: 'threw', message: hook === 'load' ? r.threw : `${hook} threw: ${r.threw}` };
  if (typeof r.bad === 'string') return { kind: 'bad_result', message: r.bad };
  if ('value' in r) return { kind: 'value', value: r.value };
  return { kind: 'bad_result', message: 'the result is not plain data' };
}
