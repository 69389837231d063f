/**
 * The known ways out of a vm context, each tried by a mediation script through a real gateway and a real
 * backend: every one must find no `process`, no `require`, no host `module` and no host `globalThis`
 * (docs/mediation.md, "Isolation"). A script reports what it reached in the body it forwards (or in the
 * message of what it throws), so a way out shows up as a name in `found`.
 */
import t, { type Test } from 'tap';
import { echoBackend, request, startGateway, type EchoBackend, type TestGateway } from '../gateway/helpers';
import { TOML, api } from './script-helpers';

/**
 * Shared by every script: `probe(name, x)` tries each route from a value to a Function constructor and
 * records `name` when the constructor compiles code that reaches the node (process, require, module,
 * a global object with process), or when the value is not an object of the script's own context.
 */
const PROBE = `
const hits = [];
const CtxObject = Object, CtxFunction = Function, getProto = Object.getPrototypeOf;
const isNode = (v) => { try { return v !== null && v !== undefined && (typeof v === 'object' || typeof v === 'function') &&
  (typeof v.pid === 'number' || typeof v.process === 'object' || typeof v.require === 'function' || typeof v.mainModule === 'object' ||
   (typeof v.exports === 'object' && Array.isArray(v.paths))); } catch (e) { return false; } };
let probing = false;
function tryCtor(name, F) {
  if (typeof F !== 'function') return;
  for (const src of ['return process', 'return globalThis', 'return typeof require === "undefined" ? undefined : require', 'return typeof module === "undefined" ? undefined : module']) {
    try { if (isNode(F(src)())) { hits.push(name); return; } } catch (e) {}
  }
}
function probe(name, x) {
  if (x === null || x === undefined || (typeof x !== 'object' && typeof x !== 'function') || probing) return;
  probing = true;
  try { probeValue(name, x); } finally { probing = false; }
}
function probeValue(name, x) {
  if (isNode(x)) hits.push(name + ' is the node');
  try { if (typeof x === 'function' ? !(x instanceof CtxFunction) && x !== CtxFunction.prototype : !(x instanceof CtxObject) && getProto(x) !== null) hits.push(name + ' is not of this context'); } catch (e) {}
  try { tryCtor(name + '.constructor.constructor', x.constructor.constructor); } catch (e) {}
  try { if (typeof x === 'function') tryCtor(name + '.constructor', x.constructor); } catch (e) {}
  try { tryCtor(name + ' prototype.constructor.constructor', getProto(x).constructor.constructor); } catch (e) {}
  try { tryCtor(name + ' prototype.prototype.constructor.constructor', getProto(getProto(x)).constructor.constructor); } catch (e) {}
}
/** Every own member (names and symbols, values and accessors) of x, to depth, each probed. */
function walk(name, x, depth, seen) {
  if (x === null || (typeof x !== 'object' && typeof x !== 'function') || seen.has(x) || depth < 0) return;
  seen.add(x);
  probe(name, x);
  let keys = [];
  try { keys = Reflect.ownKeys(x); } catch (e) {}
  for (const k of keys) {
    let d;
    try { d = Object.getOwnPropertyDescriptor(x, k); } catch (e) { continue; }
    if (d === undefined) continue;
    const n = name + '.' + String(k);
    for (const v of [d.value, d.get, d.set]) walk(n, v, depth - 1, seen);
  }
}
`;

/** The scripts, each one way out; `{ found }` is what it reached. */
const SCRIPTS: Record<string, string> = {
  'scripts/this.js': `${PROBE}
    probe('top-level this', this);
    const top = this;
    module.exports.onRequest = function () {
      probe('this.constructor.constructor', top);
      try { const p = this.constructor.constructor('return process')(); if (isNode(p)) hits.push('hook this'); } catch (e) {}
      try { const p = top.constructor.constructor('return process')(); if (isNode(p)) hits.push('global this'); } catch (e) {}
      return { body: { found: hits, require: typeof require, process: typeof process } };
    };`,
  'scripts/console.js': `${PROBE}
    module.exports.onRequest = () => {
      try { const p = console.constructor.constructor('return process')(); if (isNode(p)) hits.push('console.constructor.constructor'); } catch (e) {}
      for (const k of Object.getOwnPropertyNames(console)) probe('console.' + k, console[k]);
      return { body: { found: hits } };
    };`,
  'scripts/members.js': `${PROBE}
    module.exports.onRequest = (m) => {
      const seen = new Set();
      walk('message', m, 6, seen);
      for (const k of Reflect.ownKeys(globalThis)) {
        const d = Object.getOwnPropertyDescriptor(globalThis, k);
        for (const v of [d.value, d.get, d.set]) walk('globalThis.' + String(k), v, 3, seen);
      }
      walk('globalThis', globalThis, 0, new Set());
      return { body: { found: hits, walked: seen.size } };
    };`,
  'scripts/stacks.js': `${PROBE}
    module.exports.onRequest = () => {
      Error.prepareStackTrace = (e, sites) => {
        probe('prepareStackTrace error', e);
        for (const s of sites) { try { probe('call site this', s.getThis()); probe('call site function', s.getFunction()); } catch (x) {} }
        return 'stack';
      };
      const errors = [];
      function deep() { return deep() + 1; }
      try { deep(); } catch (e) { errors.push(['stack overflow', e]); }
      try { null.x; } catch (e) { errors.push(['TypeError', e]); }
      // Every function the context offers, called wrongly: as a constructor, with a stack that overflows in its arguments.
      const seen = new Set();
      const fns = [];
      (function collect(x, d) {
        if (x === null || (typeof x !== 'object' && typeof x !== 'function') || seen.has(x) || d < 0) return;
        seen.add(x);
        if (typeof x === 'function') fns.push(x);
        for (const k of ['module', 'exports', 'console', 'log', 'info', 'warn', 'error', 'debug', 'trace']) { try { collect(x[k], d - 1); } catch (e) {} }
      })(globalThis, 3);
      const overflow = { toString() { return deep(); }, valueOf() { return deep(); } };
      for (const f of fns) {
        try { new f(); } catch (e) { errors.push(['new ' + (f.name || '?'), e]); }
        try { Reflect.apply(f, undefined, [overflow, overflow]); } catch (e) { errors.push(['overflowing ' + (f.name || '?'), e]); }
        try { f.call(Symbol('x'), Symbol('y')); } catch (e) { errors.push(['symbol to ' + (f.name || '?'), e]); }
      }
      try { JSON.parse('{', (k, v) => v); } catch (e) { errors.push(['SyntaxError', e]); }
      for (const [n, e] of errors) { probe(n, e); try { void e.stack; } catch (x) {} }
      return { body: { found: hits, errors: errors.length } };
    };`,
  'scripts/prototypes.js': `${PROBE}
    module.exports.onRequest = (m) => {
      for (const [n, x] of [['message', m], ['message.headers', m.headers], ['message.api', m.api], ['message.body', m.body], ['module', module], ['exports', exports], ['console', console], ['console.log', console.log], ['globalThis', globalThis]]) {
        try { tryCtor(n + ': Object.getPrototypeOf(x).constructor.constructor', Object.getPrototypeOf(x).constructor.constructor); } catch (e) {}
        try { tryCtor(n + ': x.__proto__.__proto__.constructor.constructor', x.__proto__.__proto__.constructor.constructor); } catch (e) {}
        try { tryCtor(n + ': Object.getPrototypeOf(x.constructor).constructor', Object.getPrototypeOf(x.constructor).constructor); } catch (e) {}
      }
      return { body: { found: hits } };
    };`,
  'scripts/callers.js': `${PROBE}
    module.exports.onRequest = function (m) {
      let f = arguments.callee;
      for (let i = 0; i < 12 && typeof f === 'function'; i++) {
        try { f = f.caller; } catch (e) { break; }
        probe('arguments.callee.caller #' + i, f);
        try { if (f && f.arguments) for (const a of f.arguments) probe('caller argument', a); } catch (e) {}
      }
      // A getter that whoever reads the result calls.
      return {
        get body() {
          let c;
          try { c = arguments.callee.caller; } catch (e) {}
          probe('the reader of the result', c);
          return { found: hits };
        },
      };
    };`,
  'scripts/proxy.js': `${PROBE}
    module.exports.onRequest = () => {
      const handler = new Proxy({}, {
        get(_, trap) {
          return function (...args) {
            args.forEach((a, i) => probe('trap ' + trap + ' argument ' + i, a));
            let c;
            try { c = arguments.callee.caller; } catch (e) {}
            probe('trap ' + trap + ' caller', c);
            if (trap === 'get' && args[1] === 'body') return { found: hits };
            return Reflect[trap](...args);
          };
        },
      });
      return new Proxy({ body: null }, handler);
    };`,
  'scripts/thenable.js': `${PROBE}
    module.exports.onRequest = () => ({
      then(resolve, reject) {
        probe('then resolve', resolve);
        probe('then reject', reject);
        resolve({ body: { found: hits } });
      },
    });`,
  'scripts/promise-then.js': `${PROBE}
    const then = Promise.prototype.then;
    Promise.prototype.then = function (a, b) {
      probe('Promise.prototype.then onFulfilled', a);
      probe('Promise.prototype.then onRejected', b);
      return then.call(this, a, b);
    };
    module.exports.onRequest = async () => { await null; return { body: { found: hits } }; };`,
  'scripts/species.js': `${PROBE}
    class Sly extends Promise {
      static get [Symbol.species]() {
        return function (executor) { probe('species executor', executor); return new Promise(executor); };
      }
    }
    Object.defineProperty(Promise.prototype, 'constructor', { get() { return Sly; }, configurable: true });
    module.exports.onRequest = () => {
      const p = new Sly((r) => r({ body: { found: hits } }));
      return p;
    };`,
  'scripts/to-primitive.js': `${PROBE}
    const trap = (name) => ({
      [Symbol.toPrimitive](hint) {
        probe(name + ' hint', hint);
        let c;
        try { c = arguments.callee.caller; } catch (e) {}
        probe(name + ' caller', c);
        return 'found:[' + hits.join(',') + ']';
      },
      toJSON(key) {
        let c;
        try { c = arguments.callee.caller; } catch (e) {}
        probe(name + ' toJSON caller', c);
        return { found: hits };
      },
    });
    module.exports.onRequest = (m) => { if (m.path.endsWith('/throw')) throw trap('thrown'); return { body: trap('body') }; };`,
  'scripts/import.js': `${PROBE}
    module.exports.onRequest = async () => {
      try { await import('node:fs'); hits.push('import() loaded a module'); } catch (e) { probe('import() error', e); }
      return { body: { found: hits } };
    };`,
  'scripts/import-hidden.js': `module.exports.onRequest = async () => { try { await import /* a comment */ (\n'node:fs'); } catch (e) { return { body: { found: [typeof e.constructor.constructor('return process')()] } }; } };`,
};

const VECTORS: [string, string, string][] = [
  ['this.constructor.constructor (top level and hook)', 'this.js', '/x'],
  ["console.constructor.constructor('return process')() and every console member", 'console.js', '/x'],
  ['every member of every object the context offers, and of the message', 'members.js', '/x'],
  ['error stacks: Error.prepareStackTrace over errors from overflows and from offered functions called wrongly', 'stacks.js', '/x'],
  ['Function through prototypes (Object.getPrototypeOf(x).constructor.constructor)', 'prototypes.js', '/x'],
  ['arguments.callee.caller, in the hook and in a getter of the result', 'callers.js', '/x'],
  ['a Proxy returned as the result, whose traps probe their arguments and callers', 'proxy.js', '/x'],
  ['a thenable returned: its then gets no host resolve/reject', 'thenable.js', '/x'],
  ['Promise.prototype.then replaced before an async hook returns', 'promise-then.js', '/x'],
  ['a promise whose species constructor probes the executor', 'species.js', '/x'],
  ['Symbol.toPrimitive and toJSON on a returned body', 'to-primitive.js', '/x'],
];

async function setup(t: Test): Promise<{ g: TestGateway; be: EchoBackend }> {
  const be = await echoBackend();
  t.teardown(() => be.close());
  const apis: Record<string, string> = {};
  for (const [, file] of VECTORS) apis[file.replace('.js', '')] = api(be, `../scripts/${file}`, `/${file.replace('.js', '')}`);
  for (const file of ['import.js', 'import-hidden.js'])
    apis[file.replace('.js', '')] = api(be, `../scripts/${file}`, `/${file.replace('.js', '')}`);
  const g = await startGateway(TOML.replace('script_timeout = "300ms"', 'script_timeout = "10s"'), apis, SCRIPTS);
  t.teardown(() => g.close());
  return { g, be };
}

t.test('each known vm escape finds no process, require, host module or host globalThis', async (t) => {
  const { g, be } = await setup(t);
  for (const [what, file, sub] of VECTORS) {
    const before = be.seen.length;
    const res = await request(g.port, `/${file.replace('.js', '')}/1.0.0${sub}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: '{"items":[{"a":1}]}',
    });
    t.equal(res.status, 200, `${what}: the call went through (${res.body.slice(0, 200)})`);
    const forwarded = JSON.parse(be.seen[before]?.body ?? '{}') as {
      found?: string[];
      require?: string;
      process?: string;
      walked?: number;
    };
    t.same(forwarded.found, [], `${what}: nothing of the node reached`);
    if (file === 'members.js') t.ok((forwarded.walked ?? 0) > 300, `${forwarded.walked} objects and functions walked`);
    if (file === 'this.js') t.same([forwarded.require, forwarded.process], ['undefined', 'undefined']);
  }
});

t.test('Symbol.toPrimitive on a thrown value: the fault names nothing the script reached', async (t) => {
  const { g } = await setup(t);
  const res = await request(g.port, '/to-primitive/1.0.0/throw', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: '{}',
  });
  t.equal(res.status, 500);
  t.equal(res.json().fault.code, 103065);
  t.match(res.json().fault.description, /found:\[\]/, 'the thrown value was described, and found nothing');
});

t.test('import() (whose rejection is an error of the node) is refused at load: 103065 naming it; the backend is not called', async (t) => {
  const { g, be } = await setup(t);
  for (const name of ['import', 'import-hidden']) {
    const res = await request(g.port, `/${name}/1.0.0/x`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' });
    t.equal(res.status, 500, `${name}: ${res.body.slice(0, 200)}`);
    t.equal(res.json().fault.code, 103065);
    t.match(res.json().fault.description, /import\(\) is not available to mediation scripts \(line \d+, column \d+\)/);
  }
  t.equal(be.seen.length, 0);
});
